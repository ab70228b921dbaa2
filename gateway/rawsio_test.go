package gateway_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"
)

// rawSIO is a Socket.IO client written frame by frame over a WebSocket
// (Engine.IO 4, Socket.IO 5, namespace /smcp), so that tests see the exact
// bytes the gateway sends and send exact bytes of their own: a library
// client would decode and encode them.
type rawSIO struct {
	t    testing.TB
	conn *ws.Conn

	wmu sync.Mutex // gorilla allows one writer at a time

	mu     sync.Mutex
	nextID uint64
	acks   map[uint64]chan []byte
	// onEvent answers an event: it gets the packet's JSON array (event name
	// and arguments) and calls reply (at once or later) with the ack's JSON
	// array.
	onEvent func(array []byte, reply func(ack []byte))
	events  chan []byte // events without a handler, as JSON arrays
	closed  chan struct{}
	// lastEventID is the ack id of the last event received.
	lastEventID atomic.Uint64
}

func (r *rawSIO) setOnEvent(fn func(array []byte, reply func(ack []byte))) {
	r.mu.Lock()
	r.onEvent = fn
	r.mu.Unlock()
}

func dialRaw(t testing.TB, gwURL string, onEvent func(array []byte, reply func(ack []byte))) *rawSIO {
	t.Helper()
	return dialRawQuery(t, gwURL, "", onEvent)
}

// dialRawQuery is dialRaw with query ("&a2c_version=0.5.0") added to the
// handshake's.
func dialRawQuery(t testing.TB, gwURL, query string, onEvent func(array []byte, reply func(ack []byte))) *rawSIO {
	t.Helper()
	url := "ws" + strings.TrimPrefix(gwURL, "http") + "/socket.io/?EIO=4&transport=websocket" + query
	c, _, err := ws.DefaultDialer.Dial(url, http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	r := &rawSIO{t: t, conn: c, acks: map[uint64]chan []byte{}, onEvent: onEvent,
		events: make(chan []byte, 1024), closed: make(chan struct{})}
	t.Cleanup(func() { _ = c.Close(); <-r.closed })
	if _, open, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(open, []byte("0{")) {
		t.Fatalf("Engine.IO open: %q %v", open, err)
	}
	r.write("40/smcp,")
	if _, msg, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(msg, []byte("40/smcp,")) {
		t.Fatalf("namespace connect: %q %v", msg, err)
	}
	go r.read()
	return r
}

func (r *rawSIO) write(s string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.conn.WriteMessage(ws.TextMessage, []byte(s))
}

// writeBinary sends a binary attachment frame.
func (r *rawSIO) writeBinary(b []byte) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.conn.WriteMessage(ws.BinaryMessage, b)
}

func (r *rawSIO) read() {
	defer close(r.closed)
	for {
		_, msg, err := r.conn.ReadMessage()
		if err != nil {
			return
		}
		switch {
		case string(msg) == "2":
			r.write("3")
		case bytes.HasPrefix(msg, []byte("43/smcp,")):
			id, body := splitID(msg[len("43/smcp,"):])
			r.mu.Lock()
			ch := r.acks[id]
			delete(r.acks, id)
			r.mu.Unlock()
			if ch != nil {
				ch <- body
			}
		case bytes.HasPrefix(msg, []byte("42/smcp,")):
			rest := msg[len("42/smcp,"):]
			id, body := splitID(rest)
			hasID := len(body) < len(rest)
			if hasID {
				r.lastEventID.Store(id)
			}
			r.mu.Lock()
			onEvent := r.onEvent
			r.mu.Unlock()
			if onEvent == nil {
				r.events <- body
				continue
			}
			onEvent(body, func(ack []byte) {
				if hasID {
					r.write("43/smcp," + strconv.FormatUint(id, 10) + string(ack))
				}
			})
		}
	}
}

func splitID(b []byte) (uint64, []byte) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, _ := strconv.ParseUint(string(b[:i]), 10, 64)
	return id, b[i:]
}

// emit sends event with the given raw JSON arguments and an ack id; the
// returned channel gets the ack's JSON array as sent by the gateway.
func (r *rawSIO) emit(event string, args ...string) <-chan []byte {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan []byte, 1)
	r.acks[id] = ch
	r.mu.Unlock()
	r.write(fmt.Sprintf("42/smcp,%d[%q", id, event) + joinArgs(args) + "]")
	return ch
}

// emitFrame sends a packet written by the caller after "42/smcp,<id>".
func (r *rawSIO) emitFrame(prefix, body string) <-chan []byte {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan []byte, 1)
	r.acks[id] = ch
	r.mu.Unlock()
	r.write(prefix + strconv.FormatUint(id, 10) + body)
	return ch
}

func joinArgs(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteByte(',')
		b.WriteString(a)
	}
	return b.String()
}

func (r *rawSIO) wait(ch <-chan []byte, d time.Duration) []byte {
	r.t.Helper()
	select {
	case b := <-ch:
		return b
	case <-time.After(d):
		r.t.Fatalf("no ack within %s", d)
		return nil
	}
}

func (r *rawSIO) join(role, name, office string) {
	r.t.Helper()
	ack := r.wait(r.emit("server:join_office",
		fmt.Sprintf(`{"role":%q,"name":%q,"office_id":%q}`, role, name, office)), 5*time.Second)
	if string(ack) != "[true,null]" {
		r.t.Fatalf("join %s %s: %s", role, name, ack)
	}
}
