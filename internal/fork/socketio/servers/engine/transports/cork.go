package transports

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// smcp-gateway patch (see PATCHED.md): the frames of one batch of packets
// leave in one write.
//
// gorilla/websocket writes every frame to its connection with a write of
// its own (a syscall, and on loopback or with TCP_NODELAY a TCP segment).
// The engine hands its WebSocket transport packets in batches (those queued
// while the previous batch was written); under load a batch holds several,
// and each cost a syscall. A WebSocket upgraded through CorkingResponse
// writes to a CorkConn, which the transport corks for a batch: the frames
// are gathered and written at once when it is uncorked.

// maxCorked bounds what a corked connection gathers: beyond it, what was
// gathered and the frame are written through (a large answer is not copied).
const maxCorked = 64 << 10

// corkBuffers holds the buffers of corked batches between batches, so that
// an idle connection holds none.
var corkBuffers = sync.Pool{New: func() any { return new([]byte) }}

// CorkConn is a net.Conn whose writes can be gathered (Cork) and written
// together (Uncork).
type CorkConn struct {
	net.Conn

	mu     sync.Mutex
	corked bool
	buf    *[]byte // gathered while corked

	// gorilla sets the write deadline before every frame, to the same
	// value unless one was asked for (none by the engine): a deadline equal
	// to the one set is not set again (a runtime timer update per frame).
	dmu      sync.Mutex
	deadline time.Time // the write deadline last set
	known    bool      // deadline is the connection's
}

// SetDeadline sets the read and write deadlines.
func (c *CorkConn) SetDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	err := c.Conn.SetDeadline(t)
	c.deadline, c.known = t, err == nil
	return err
}

// SetWriteDeadline sets the write deadline, unless it is the one set.
func (c *CorkConn) SetWriteDeadline(t time.Time) error {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	if c.known && t.Equal(c.deadline) {
		return nil
	}
	err := c.Conn.SetWriteDeadline(t)
	c.deadline, c.known = t, err == nil
	return err
}

// Write writes p, or gathers it while the connection is corked.
func (c *CorkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	if len(*c.buf)+len(p) > maxCorked {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

// Cork gathers the writes that follow until Uncork.
func (c *CorkConn) Cork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		c.corked = true
		c.buf = corkBuffers.Get().(*[]byte)
	}
}

// Uncork writes what was gathered, in one write, and writes through again.
func (c *CorkConn) Uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return nil
	}
	err := c.flushLocked()
	c.corked = false
	if cap(*c.buf) <= maxCorked {
		corkBuffers.Put(c.buf)
	}
	c.buf = nil
	return err
}

func (c *CorkConn) flushLocked() error {
	b := *c.buf
	*c.buf = b[:0]
	if len(b) == 0 {
		return nil
	}
	_, err := c.Conn.Write(b)
	return err
}

// NetConn is the connection written to.
func (c *CorkConn) NetConn() net.Conn { return c.Conn }

// CorkingResponse wraps the response of a request to be upgraded to a
// WebSocket: the connection its Hijack returns is a *CorkConn.
func CorkingResponse(w http.ResponseWriter) http.ResponseWriter { return corkingResponse{w} }

type corkingResponse struct{ http.ResponseWriter }

func (r corkingResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("websocket: response does not implement http.Hijacker")
	}
	conn, rw, err := h.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &CorkConn{Conn: conn}, rw, nil
}

// Unwrap is the response wrapped (http.ResponseController).
func (r corkingResponse) Unwrap() http.ResponseWriter { return r.ResponseWriter }
