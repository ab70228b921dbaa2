package types

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A transport that answers a request after its client went away (a poll
// the client dropped) must not touch the response net/http is finishing.
// Run under -race: upstream's response headers were w.Header() itself, set
// from the transport's goroutine after the handler had returned.
func TestLateAnswerAfterClientLeft(t *testing.T) {
	answered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := NewHttpContext(w, r)
		go func() {
			defer close(answered)
			<-c.Done() // the client left; the handler returns now
			time.Sleep(10 * time.Millisecond)
			c.ResponseHeaders().Set("Content-Type", "text/plain")
			_ = c.SetStatusCode(http.StatusOK)
			if _, err := c.Write([]byte("6")); err == nil {
				t.Error("a write after the client left succeeded")
			}
		}()
		<-c.Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	if res, err := http.DefaultClient.Do(req); err == nil {
		_ = res.Body.Close()
	}
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the late answer never ran")
	}
	// Let net/http finish its side of the request before the race
	// detector's verdict.
	srv.CloseClientConnections()
}
