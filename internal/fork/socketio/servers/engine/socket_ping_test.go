package engine

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
)

// A client that answers every ping at once must never be dropped for "ping
// timeout". On a busy machine the goroutine that writes a ping can be
// descheduled after the write and before it arms the ping timeout; the
// client's pong arrives and is handled in between, so upstream's order
// (send the ping, then arm the timeout) left a timeout armed for a pong that
// had already come, and the connection was closed pingTimeout later. The
// test forces that interleaving: once a ping is handed to the transport, the
// pinging goroutine waits until the server has handled the pong.
func TestPongBeforePingTimeoutIsArmed(t *testing.T) {
	const interval, timeout = 300 * time.Millisecond, 250 * time.Millisecond
	opts := config.DefaultServerOptions()
	opts.SetPingInterval(interval)
	opts.SetPingTimeout(timeout)
	srv := NewServer(opts)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	closed := make(chan string, 1)
	pings := make(chan struct{}, 16)
	_ = srv.On("connection", func(a ...any) {
		sock := a[0].(Socket)
		heartbeat := make(chan struct{}, 1)
		pingFlushed := false
		_ = sock.On("heartbeat", func(...any) {
			select {
			case heartbeat <- struct{}{}:
			default:
			}
		})
		// "flush" and "drain" are emitted on the pinging goroutine, around
		// handing the batch to the transport (whose writer sends it).
		_ = sock.On("flush", func(a ...any) {
			pingFlushed = false
			if wbuf, ok := a[0].([]*packet.Packet); ok {
				for _, p := range wbuf {
					if p.Type == packet.PING {
						pingFlushed = true
					}
				}
			}
		})
		_ = sock.On("drain", func(...any) {
			if !pingFlushed {
				return
			}
			pings <- struct{}{}
			select {
			case <-heartbeat: // the pong is handled: now let the pinger go on
			case <-time.After(2 * time.Second):
			}
		})
		_ = sock.On("close", func(a ...any) {
			// The first reason is the one the test reads; a handler that
			// blocked here would hold the transport's close (srv.Close in
			// the deferred cleanup waits on it).
			select {
			case closed <- fmt.Sprint(a[0]):
			default:
			}
		})
	})

	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/engine.io/?EIO=4&transport=websocket"
	c, _, err := ws.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	go func() {
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			if string(msg) == "2" {
				_ = c.WriteMessage(ws.TextMessage, []byte("3"))
			}
		}
	}()

	// Three pings answered at once, and at least one pingTimeout after the
	// last: the connection must still be open.
	for range 3 {
		select {
		case <-pings:
		case reason := <-closed:
			t.Fatalf("closed (%s) although every ping was answered at once", reason)
		case <-time.After(5 * time.Second):
			t.Fatal("no ping")
		}
	}
	select {
	case reason := <-closed:
		t.Fatalf("closed (%s) although every ping was answered at once", reason)
	case <-time.After(timeout + 100*time.Millisecond):
	}
}

// A client that never answers is still dropped for "ping timeout", once
// pingTimeout has passed after a ping.
func TestSilentClientPingTimeout(t *testing.T) {
	const interval, timeout = 200 * time.Millisecond, 150 * time.Millisecond
	opts := config.DefaultServerOptions()
	opts.SetPingInterval(interval)
	opts.SetPingTimeout(timeout)
	srv := NewServer(opts)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	closed := make(chan string, 1)
	_ = srv.On("connection", func(a ...any) {
		_ = a[0].(Socket).On("close", func(a ...any) {
			select { // the first reason only: see TestPongBeforePingTimeoutIsArmed
			case closed <- fmt.Sprint(a[0]):
			default:
			}
		})
	})
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/engine.io/?EIO=4&transport=websocket"
	c, _, err := ws.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	go func() { // read, never answer
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	start := time.Now()
	select {
	case reason := <-closed:
		if reason != "ping timeout" || time.Since(start) < interval+timeout-50*time.Millisecond {
			t.Fatalf("closed (%s) after %s", reason, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a silent client was not dropped")
	}
}
