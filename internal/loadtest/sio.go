// Package loadtest is the load generator and the floor server of `smcp
// bench`: lean Socket.IO and Connect clients that drive offices of one agent
// and one echo computer, a floor relay (the same Socket.IO stack doing
// nothing but join and forward), and the /proc readings that turn a run into
// CPU per call and memory per connection of exactly the server process.
package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Conn is a minimal Socket.IO v4 client over a WebSocket (Engine.IO 4), on
// the /smcp namespace. It exists because the load generator shares the CPU
// with the server it measures: one reader goroutine, no reconnection, no
// polling, no per-packet allocations beyond the JSON it is handed.
type Conn struct {
	ws  *websocket.Conn
	nsp string

	wmu sync.Mutex

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]func(args json.RawMessage)
	handler func(event string, id int64, payload json.RawMessage)
	err     error
	done    chan struct{}
}

// Dial opens a WebSocket to the Engine.IO endpoint base+path and connects the
// namespace, with apiKey (when not "") in the x-api-key header. handler,
// when set, receives server-sent events; id > 0 means the server wants an
// ack (Conn.Ack).
func Dial(ctx context.Context, base, path, nsp, a2cVersion, apiKey string, handler func(event string, id int64, payload json.RawMessage)) (*Conn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("loadtest: gateway URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.Path = strings.TrimSuffix(path, "/") + "/"
	u.RawQuery = "EIO=4&transport=websocket"
	if a2cVersion != "" {
		u.RawQuery += "&a2c_version=" + url.QueryEscape(a2cVersion)
	}
	d := websocket.Dialer{ReadBufferSize: 4096, WriteBufferSize: 4096}
	var head http.Header
	if apiKey != "" {
		head = http.Header{"X-Api-Key": {apiKey}}
	}
	ws, _, err := d.DialContext(ctx, u.String(), head)
	if err != nil {
		return nil, fmt.Errorf("loadtest: dial %s: %w", u, err)
	}
	c := &Conn{ws: ws, nsp: nsp, pending: map[uint64]func(json.RawMessage){}, handler: handler, done: make(chan struct{})}
	if dl, ok := ctx.Deadline(); ok {
		_ = ws.SetReadDeadline(dl)
	}
	// Engine.IO open packet, then the namespace CONNECT and its answer.
	if _, msg, err := ws.ReadMessage(); err != nil || len(msg) == 0 || msg[0] != '0' {
		_ = ws.Close()
		return nil, fmt.Errorf("loadtest: engine.io open: %q %v", msg, err)
	}
	if err := c.write([]byte("40" + nsp + ",")); err != nil {
		_ = ws.Close()
		return nil, err
	}
	for {
		_, msg, err := ws.ReadMessage()
		if err != nil {
			_ = ws.Close()
			return nil, fmt.Errorf("loadtest: namespace connect: %w", err)
		}
		if bytes.Equal(msg, []byte("2")) {
			_ = c.write([]byte("3"))
			continue
		}
		if bytes.HasPrefix(msg, []byte("40"+nsp+",")) {
			break
		}
		_ = ws.Close()
		return nil, fmt.Errorf("loadtest: namespace connect refused: %s", msg)
	}
	_ = ws.SetReadDeadline(time.Time{})
	go c.read()
	return c, nil
}

func (c *Conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// Emit sends event with payload (JSON) and, when cb is set, an ack id; cb
// gets the ack's argument array.
func (c *Conn) Emit(event string, payload []byte, cb func(args json.RawMessage)) error {
	buf := make([]byte, 0, len(c.nsp)+len(event)+len(payload)+32)
	buf = append(buf, '4', '2')
	buf = append(buf, c.nsp...)
	buf = append(buf, ',')
	if cb != nil {
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return err
		}
		c.nextID++
		id := c.nextID
		c.pending[id] = cb
		c.mu.Unlock()
		buf = strconv.AppendUint(buf, id, 10)
	}
	buf = append(buf, '[', '"')
	buf = append(buf, event...)
	buf = append(buf, '"', ',')
	buf = append(buf, payload...)
	buf = append(buf, ']')
	return c.write(buf)
}

// Ack answers the server's event id with one argument.
func (c *Conn) Ack(id int64, arg []byte) error {
	buf := make([]byte, 0, len(c.nsp)+len(arg)+32)
	buf = append(buf, '4', '3')
	buf = append(buf, c.nsp...)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, '[')
	buf = append(buf, arg...)
	buf = append(buf, ']')
	return c.write(buf)
}

// Call emits and waits for the ack.
func (c *Conn) Call(ctx context.Context, event string, payload []byte) (json.RawMessage, error) {
	ch := make(chan json.RawMessage, 1)
	if err := c.Emit(event, payload, func(args json.RawMessage) { ch <- args }); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a, nil
	case <-c.done:
		return nil, c.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Done is closed when the connection ends.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the WebSocket; the server sees a transport close.
func (c *Conn) Close() error {
	err := c.ws.Close()
	<-c.done
	return err
}

func (c *Conn) read() {
	var err error
	defer func() {
		c.mu.Lock()
		if err == nil {
			err = errors.New("loadtest: connection closed")
		}
		c.err = err
		c.pending = nil
		c.mu.Unlock()
		close(c.done)
	}()
	prefix := []byte(c.nsp + ",")
	for {
		var msg []byte
		_, msg, err = c.ws.ReadMessage()
		if err != nil {
			return
		}
		if len(msg) == 1 && msg[0] == '2' { // Engine.IO ping
			if err = c.write([]byte("3")); err != nil {
				return
			}
			continue
		}
		if len(msg) < 2 || msg[0] != '4' {
			continue
		}
		kind := msg[1]
		rest := msg[2:]
		if !bytes.HasPrefix(rest, prefix) {
			continue
		}
		rest = rest[len(prefix):]
		var id uint64
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			id = id*10 + uint64(rest[i]-'0')
			i++
		}
		hasID := i > 0
		rest = rest[i:]
		switch kind {
		case '3': // ack
			c.mu.Lock()
			cb := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if cb != nil {
				cb(rest)
			}
		case '2': // event
			if c.handler == nil {
				continue
			}
			event, payload, ok := splitEvent(rest)
			if !ok {
				continue
			}
			ackID := int64(-1)
			if hasID {
				ackID = int64(id)
			}
			c.handler(event, ackID, payload)
		case '1': // namespace disconnect
			err = errors.New("loadtest: disconnected by the server")
			_ = c.ws.Close()
			return
		}
	}
}

// splitEvent splits `["name",payload]` without decoding the payload.
func splitEvent(b []byte) (string, json.RawMessage, bool) {
	if len(b) < 4 || b[0] != '[' || b[1] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[2:], '"')
	if end < 0 {
		return "", nil, false
	}
	name := string(b[2 : 2+end])
	rest := b[2+end+1:]
	if len(rest) > 0 && rest[0] == ',' {
		rest = rest[1:]
	}
	if n := len(rest); n > 0 && rest[n-1] == ']' {
		rest = rest[:n-1]
	}
	return name, rest, true
}
