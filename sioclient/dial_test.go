package sioclient_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/sioclient"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// retryCounter counts Dial's failed attempts from its debug log.
type retryCounter struct {
	slog.Handler
	n    atomic.Int64
	last atomic.Value // string: the last attempt's error
}

func newRetryCounter() *retryCounter {
	return &retryCounter{Handler: slog.DiscardHandler}
}

func (h *retryCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *retryCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "cannot reach the gateway, retrying" {
		h.n.Add(1)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				h.last.Store(a.Value.String())
			}
			return true
		})
	}
	return nil
}

// Every dial to a live gateway succeeds on its first attempt. The client
// library used to lose the engine's "open" event when the handshake came
// back before its listener was registered (the attempt then hung until its
// timeout): 2-7 attempts in 2,000 dials under -race on a loaded machine.
// The attempt timeout here is long so that only such a lost event, not a
// slow machine, fails an attempt.
func TestDialFirstAttempt(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()
	retries := newRetryCounter()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				c, err := sioclient.Dial(t.Context(), sioclient.Options{URL: gw.URL, NoReconnect: true, ConnectTimeout: 10 * time.Second, Logger: slog.New(retries)})
				if err != nil {
					t.Error(err)
					return
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	if n := retries.n.Load(); n > 0 {
		t.Errorf("%d of 400 dials needed another attempt; last error: %v", n, retries.last.Load())
	}
}

// A refused dial fails its attempt at once instead of waiting for the
// attempt timeout (the library emitted the error before anyone listened).
func TestDialRefusedIsReported(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	retries := newRetryCounter()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = sioclient.Dial(ctx, sioclient.Options{URL: "http://" + addr, ConnectTimeout: time.Minute, ReconnectDelay: 50 * time.Millisecond, Logger: slog.New(retries)})
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "refused") || retries.n.Load() < 2 {
		t.Fatalf("want fast refused attempts, got %d attempts, error: %v", retries.n.Load(), err)
	}
}

// TestRotate: a client that lost node last dials the one after it first,
// wrapping around; an unknown last starts from the first.
func TestRotate(t *testing.T) {
	urls := []string{"a", "b", "c"}
	for _, tc := range []struct{ last, want string }{
		{"a", "b c a"}, {"b", "c a b"}, {"c", "a b c"}, {"x", "a b c"},
	} {
		first, rest := sioclient.Rotate(urls, tc.last)
		if got := strings.Join(append([]string{first}, rest...), " "); got != tc.want {
			t.Errorf("Rotate after %s = %s, want %s", tc.last, got, tc.want)
		}
	}
	if first, rest := sioclient.Rotate(nil, "a"); first != "" || rest != nil {
		t.Errorf("Rotate(nil) = %q %v", first, rest)
	}
}
