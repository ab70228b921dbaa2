package engine

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
)

// A socket closes once, whichever closes come together: the server closing
// it ("forced close", from srv.Close or a socket's Close) while its transport
// fails ("transport error", on the transport's reader goroutine). Upstream
// looked at the state, then marked it closed: a second close between the two
// ran the close again (clearing the transport, emitting "close" a second
// time to the socket's On listeners). The hook brings the transport's error
// in between.
func TestSocketClosesOnce(t *testing.T) {
	srv := NewServer(config.DefaultServerOptions())
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	socks := make(chan *socket, 1)
	var mu sync.Mutex
	var reasons []string
	_ = srv.On("connection", func(a ...any) {
		sock := a[0].(*socket)
		_ = sock.On("close", func(a ...any) {
			mu.Lock()
			reasons = append(reasons, fmt.Sprint(a[0]))
			mu.Unlock()
		})
		socks <- sock
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/engine.io/?EIO=4&transport=websocket"
	c, _, err := ws.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	var sock *socket
	select {
	case sock = <-socks:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	var fired atomic.Bool // not a sync.Once: the hook runs again inside
	setHook(t, &testHookOnClose, func(s *socket) {
		if s == sock && fired.CompareAndSwap(false, true) {
			s.onError(errors.New("read: connection reset by peer"))
		}
	})
	sock.OnClose("forced close")
	mu.Lock()
	defer mu.Unlock()
	if len(reasons) != 1 {
		t.Fatalf("the socket emitted \"close\" %d times (%q), want once", len(reasons), reasons)
	}
}

func setHook[T any](t *testing.T, p *atomic.Pointer[T], fn T) {
	p.Store(&fn)
	t.Cleanup(func() { p.Store(nil) })
}
