package fastlane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// served answers with who served the request: net/http puts its server in
// the request context, the lane does not.
func served(r *http.Request) string {
	if r.Context().Value(http.ServerContextKey) != nil {
		return "net/http"
	}
	return "lane"
}

type testServer struct {
	url  string
	addr string
	lane *Lane
	srv  *http.Server
}

func startServer(t *testing.T, h http.Handler) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lane := New(ln, Options{Paths: []string{"/svc/Call"}, Handler: h, MaxBodyBytes: 1024, ReadHeaderTimeout: 2 * time.Second})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 2 * time.Second}
	go func() { _ = lane.Serve() }()
	go func() { _ = srv.Serve(lane.Handoff()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = lane.Shutdown(ctx)
	})
	return &testServer{url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), lane: lane, srv: srv}
}

func echo() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Served-By", served(r))
		w.Header().Set("X-Key", r.Header.Get("X-Api-Key"))
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	})
}

func post(t *testing.T, c *http.Client, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/proto")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The lane serves the plain calls, net/http the rest, on one listener, with
// the same answers, over a real net/http client with keep-alive.
func TestLaneAndNetHTTPShareTheListener(t *testing.T) {
	s := startServer(t, echo())
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	for _, tc := range []struct {
		name, path, body, by string
		header               map[string]string
	}{
		{"unary call", "/svc/Call", "abc", "lane", map[string]string{"X-Api-Key": "k1"}},
		{"again, same connection", "/svc/Call", "def", "lane", map[string]string{"X-Api-Key": "k2"}},
		{"other path", "/other", "ghi", "net/http", nil},
		{"body over the lane's limit", "/svc/Call", strings.Repeat("x", 2000), "net/http", nil},
		{"after a hand-off the connection stays net/http's", "/svc/Call", "jkl", "net/http", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, c, s.url+tc.path, tc.body, tc.header)
			got := readBody(t, resp)
			if resp.StatusCode != http.StatusOK || got != "POST "+tc.path+" "+tc.body {
				t.Fatalf("%d %q", resp.StatusCode, got)
			}
			if by := resp.Header.Get("X-Served-By"); by != tc.by {
				t.Fatalf("served by %s, want %s", by, tc.by)
			}
			if key := resp.Header.Get("X-Key"); key != tc.header["X-Api-Key"] {
				t.Fatalf("handler saw key %q", key)
			}
			if resp.ContentLength != int64(len(got)) || resp.Header.Get("Date") == "" {
				t.Fatalf("answer head: length %d, date %q", resp.ContentLength, resp.Header.Get("Date"))
			}
		})
	}
}

func TestLaneConcurrentCalls(t *testing.T) {
	s := startServer(t, echo())
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 16*50)
	for g := range 16 {
		wg.Go(func() {
			for i := range 50 {
				body := fmt.Sprintf("g%d-%d", g, i)
				req, _ := http.NewRequest(http.MethodPost, s.url+"/svc/Call", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != "POST /svc/Call "+body || resp.Header.Get("X-Served-By") != "lane" {
					errs <- fmt.Errorf("%q %v by %s", b, err, resp.Header.Get("X-Served-By"))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// rawConn sends bytes as they are and reads answers with net/http's reader.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func rawCall(path, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: gw\r\nContent-Type: application/proto\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
}

func readAnswer(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

func TestLanePipelinedAnswersInOrder(t *testing.T) {
	s := startServer(t, echo())
	c, br := rawConn(t, s.addr)
	if _, err := io.WriteString(c, rawCall("/svc/Call", "one")+rawCall("/svc/Call", "two")+rawCall("/other", "three")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"POST /svc/Call one", "POST /svc/Call two", "POST /other three"} {
		if _, got := readAnswer(t, br); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

// Requests the lane leaves alone get net/http's own answers, errors included.
func TestLaneLeavesBadRequestsToNetHTTP(t *testing.T) {
	s := startServer(t, echo())
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"two Content-Lengths", "POST /svc/Call HTTP/1.1\r\nHost: gw\r\nContent-Type: application/proto\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", http.StatusBadRequest},
		{"no Host", "POST /svc/Call HTTP/1.1\r\nContent-Type: application/proto\r\nContent-Length: 1\r\n\r\na", http.StatusBadRequest},
		{"bad header name", "POST /svc/Call HTTP/1.1\r\nHost: gw\r\nBad Name: x\r\nContent-Length: 1\r\n\r\na", http.StatusBadRequest},
		{"unknown transfer coding", "POST /svc/Call HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: zip\r\n\r\n", http.StatusNotImplemented},
		{"chunked body", "POST /svc/Call HTTP/1.1\r\nHost: gw\r\nContent-Type: application/proto\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := rawConn(t, s.addr)
			if _, err := io.WriteString(c, tc.req); err != nil {
				t.Fatal(err)
			}
			resp, body := readAnswer(t, br)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tc.status, body)
			}
			if by := resp.Header.Get("X-Served-By"); resp.StatusCode == http.StatusOK && by != "net/http" {
				t.Fatalf("served by %q", by)
			}
		})
	}
}

// A call whose client goes away is cancelled, as under net/http.
func TestLaneCancelsCallWhenClientLeaves(t *testing.T) {
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(10 * time.Second):
			cancelled <- errors.New("not cancelled within 10 s")
		}
	}))
	c, _ := rawConn(t, s.addr)
	if _, err := io.WriteString(c, rawCall("/svc/Call", "x")); err != nil {
		t.Fatal(err)
	}
	<-started
	_ = c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A panicking handler closes its connection without an answer and leaves
// the others served.
func TestLaneHandlerPanic(t *testing.T) {
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Panic") != "" {
			panic("boom")
		}
		_, _ = io.WriteString(w, "fine")
	}))
	c, br := rawConn(t, s.addr)
	req := strings.Replace(rawCall("/svc/Call", "x"), "Host: gw\r\n", "Host: gw\r\nX-Panic: 1\r\n", 1)
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("an answer after a panic")
	}
	c2, br2 := rawConn(t, s.addr)
	if _, err := io.WriteString(c2, rawCall("/svc/Call", "x")); err != nil {
		t.Fatal(err)
	}
	if _, body := readAnswer(t, br2); body != "fine" {
		t.Fatalf("%q", body)
	}
}

// A header value cannot add headers of its own to an answer.
func TestLaneAnswerHeaderInjection(t *testing.T) {
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Note", "a\r\nX-Injected: 1")
		w.Header().Set("Bad Name", "x")
		w.WriteHeader(http.StatusTeapot)
	}))
	c, br := rawConn(t, s.addr)
	if _, err := io.WriteString(c, rawCall("/svc/Call", "x")); err != nil {
		t.Fatal(err)
	}
	resp, _ := readAnswer(t, br)
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Injected") != "" || resp.Header.Get("X-Note") != "a  X-Injected: 1" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
}

// Shutdown closes idle connections at once and lets a call in flight
// finish, answered with Connection: close.
func TestLaneShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "done")
	}))
	idle, idleBr := rawConn(t, s.addr)
	if _, err := io.WriteString(idle, rawCall("/svc/Call", "x")); err != nil {
		t.Fatal(err)
	}
	readAnswer(t, idleBr)
	busy, busyBr := rawConn(t, s.addr)
	if _, err := io.WriteString(busy, strings.Replace(rawCall("/svc/Call", "x"), "Host: gw\r\n", "Host: gw\r\nX-Slow: 1\r\n", 1)); err != nil {
		t.Fatal(err)
	}
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- s.lane.Shutdown(ctx)
	}()
	if _, err := idleBr.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection was not closed: %v", err)
	}
	close(release)
	resp, body := readAnswer(t, busyBr)
	if body != "done" || !resp.Close {
		t.Fatalf("%q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
}

// An answer larger than the buffers a connection keeps is written whole,
// and the next call on the connection is answered too.
func TestLaneLargeAnswer(t *testing.T) {
	big := strings.Repeat("0123456789", 20_000)
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) == "big" {
			_, _ = io.WriteString(w, big)
			return
		}
		_, _ = w.Write(b)
	}))
	c, br := rawConn(t, s.addr)
	if _, err := io.WriteString(c, rawCall("/svc/Call", "big")+rawCall("/svc/Call", "small")); err != nil {
		t.Fatal(err)
	}
	if resp, body := readAnswer(t, br); body != big || resp.ContentLength != int64(len(big)) {
		t.Fatalf("large answer: %d bytes, Content-Length %d", len(body), resp.ContentLength)
	}
	if _, body := readAnswer(t, br); body != "small" {
		t.Fatalf("next answer %q", body)
	}
}

// Calls that outlive watchAfter are watched; ending the watch must leave the
// connection as it was: the next call on it, sent after the answer or
// pipelined while the call runs, is answered.
func TestLaneSlowCallsKeepTheConnection(t *testing.T) {
	s := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * watchAfter)
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	c, br := rawConn(t, s.addr)
	for _, body := range []string{"one", "two"} {
		if _, err := io.WriteString(c, rawCall("/svc/Call", body)); err != nil {
			t.Fatal(err)
		}
		if _, got := readAnswer(t, br); got != body {
			t.Fatalf("got %q, want %q", got, body)
		}
	}
	if _, err := io.WriteString(c, rawCall("/svc/Call", "three")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * watchAfter) // the first call is being watched
	if _, err := io.WriteString(c, rawCall("/svc/Call", "four")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"three", "four"} {
		if _, got := readAnswer(t, br); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if got := s.lane.Served(); got != 4 {
		t.Fatalf("lane served %d calls, want 4", got)
	}
}

// A head that never completes does not hold its connection past the header
// timeout (2 s here).
func TestLaneSlowHeadIsDropped(t *testing.T) {
	s := startServer(t, echo())
	c, br := rawConn(t, s.addr)
	if _, err := io.WriteString(c, "POST /svc/Call HTTP/1.1\r\nHost: gw\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("want the connection closed by the gateway, got %v", err)
	}
}
