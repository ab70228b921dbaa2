package fastlane

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkServe compares one small Connect-style call on a keep-alive
// connection served by the lane and by net/http alone, same handler,
// loopback, client included:
//
//	go test -run '^$' -bench Serve -benchmem ./gateway/fastlane/
func BenchmarkServe(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write(body)
	})
	req := []byte("POST /svc/Call HTTP/1.1\r\nHost: gw\r\nUser-Agent: bench\r\nContent-Type: application/proto\r\n" +
		"Connect-Protocol-Version: 1\r\nX-Api-Key: k\r\nContent-Length: 64\r\n\r\n" + string(make([]byte, 64)))
	for _, tc := range []struct {
		name  string
		start func(b *testing.B, ln net.Listener)
	}{
		{"lane", func(b *testing.B, ln net.Listener) {
			lane := New(ln, Options{Paths: []string{"/svc/Call"}, Handler: h})
			srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
			go func() { _ = lane.Serve() }()
			go func() { _ = srv.Serve(lane.Handoff()) }()
			b.Cleanup(func() { _ = srv.Close(); lane.Close() })
		}},
		{"net/http", func(b *testing.B, ln net.Listener) {
			srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(func() { _ = srv.Close() })
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			tc.start(b, ln)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer func() { _ = c.Close() }()
				br := bufio.NewReader(c)
				for pb.Next() {
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						return
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
