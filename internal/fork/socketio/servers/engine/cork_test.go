package engine

import (
	"io"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
)

// writeCounter is a listener whose connections count their writes.
type writeCounter struct {
	net.Listener
	mu     sync.Mutex
	writes int
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, l: l}, nil
}

func (l *writeCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

type countedConn struct {
	net.Conn
	l *writeCounter
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes++
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// TestBatchOneWrite (smcp-gateway patch, see PATCHED.md): the packets of one
// batch handed to a WebSocket transport reach the connection in one write
// (upstream: one per packet), and the client reads each as its own message,
// in order.
func TestBatchOneWrite(t *testing.T) {
	srv := NewServer(config.DefaultServerOptions())
	hs := httptest.NewUnstartedServer(srv)
	counter := &writeCounter{Listener: hs.Listener}
	hs.Listener = counter
	hs.Start()
	defer hs.Close()
	defer srv.Close()
	conns := make(chan Socket, 1)
	_ = srv.On("connection", func(a ...any) { conns <- a[0].(Socket) })

	c, _, err := ws.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/engine.io/?EIO=4&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	read := func() string {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, r, err := c.NextReader()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		return string(b)
	}
	if f := read(); f[0] != '0' {
		t.Fatalf("open packet: %s", f)
	}
	sock := <-conns
	before := counter.count()

	const n = 8
	batch := make([]*packet.Packet, n)
	for i := range batch {
		batch[i] = &packet.Packet{Type: packet.MESSAGE, Data: types.NewStringBufferString("message " + strconv.Itoa(i))}
	}
	sock.Transport().Send(batch)
	for i := range n {
		if f, want := read(), "4message "+strconv.Itoa(i); f != want {
			t.Fatalf("read %q, want %q", f, want)
		}
	}
	if w := counter.count() - before; w != 1 {
		t.Fatalf("a batch of %d packets took %d writes, want 1", n, w)
	}
}
