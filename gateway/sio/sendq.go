package sio

import (
	"sync"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of Config.MaxQueuedBytesPerComputer and Config.MaxQueuedBytes.
const (
	DefaultMaxQueuedBytesPerComputer = 8 << 20
	DefaultMaxQueuedBytes            = 128 << 20
)

// CodeQueueFull refuses a request toward a computer whose connection
// already has Config.MaxQueuedBytesPerComputer bytes waiting to be written
// (it is not reading): its senders are told to slow down.
const CodeQueueFull = 429

// sendQueue counts the bytes of the requests handed to one connection's
// engine that its transport has not written yet. A computer that stops
// reading leaves them in the engine's write buffer, where nothing else
// bounds them: each request is refused instead once its connection, or the
// gateway over every connection, holds its bound.
//
// The engine calls a packet's send callback once its transport wrote it,
// in the order the packets were handed over; only requests carry one, so
// each call gives back the oldest request's bytes (sizes), and one callback
// made with the connection serves every request (a closure per request
// would be an allocation per call on the gateway's hottest path).
type sendQueue struct {
	srv    *Server
	mu     sync.Mutex
	bytes  int64
	sizes  []int64 // of the requests not written yet, oldest first from head
	head   int
	closed bool // the connection closed: the engine dropped its buffer
}

// reserve counts n bytes about to be written, or says which bound refuses
// them. A connection with nothing queued always takes one request, however
// large (the message bound limits it), so that a bound below the largest
// message cannot refuse a computer that reads.
func (q *sendQueue) reserve(n int64) error {
	cfg := &q.srv.cfg
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil // the write is dropped: nothing to hold
	}
	if q.bytes > 0 && q.bytes+n > int64(cfg.MaxQueuedBytesPerComputer) {
		cfg.Metrics.Refused("queued_bytes_per_computer")
		e := smcp.Errorf(CodeQueueFull,
			"not reading: %d bytes are queued toward it (max_queued_bytes_per_computer %d): slow down and retry",
			q.bytes, cfg.MaxQueuedBytesPerComputer)
		e.Details = map[string]any{"bound": "max_queued_bytes_per_computer", "limit": cfg.MaxQueuedBytesPerComputer}
		return &core.RefusedError{Wire: e}
	}
	if t := q.srv.queued.Add(n); t > int64(cfg.MaxQueuedBytes) && t > n {
		q.srv.queued.Add(-n)
		cfg.Metrics.Refused("queued_bytes")
		e := smcp.Errorf(CodeUnavailable,
			"not sent: the gateway holds %d bytes queued toward computers that are not reading (max_queued_bytes %d): retry later",
			t-n, cfg.MaxQueuedBytes)
		e.Details = map[string]any{"bound": "max_queued_bytes", "limit": cfg.MaxQueuedBytes}
		return &core.RefusedError{Wire: e}
	}
	q.bytes += n
	q.sizes = append(q.sizes, n)
	return nil
}

// sent gives back the bytes of the oldest request not written yet: the
// transport wrote one (the engine's send callback).
func (q *sendQueue) sent(transports.Transport) {
	q.mu.Lock()
	if !q.closed && q.head < len(q.sizes) {
		n := q.sizes[q.head]
		switch q.head++; {
		case q.head == len(q.sizes):
			q.sizes, q.head = q.sizes[:0], 0 // its array serves the next ones
		case q.head >= 64 && 2*q.head >= len(q.sizes):
			// A computer never quite drained: the written half goes, so that
			// the slice does not grow with every request.
			q.sizes, q.head = q.sizes[:copy(q.sizes, q.sizes[q.head:])], 0
		}
		q.bytes -= n
		q.srv.queued.Add(-n)
	}
	q.mu.Unlock()
}

// close gives back what the connection still held: the engine dropped its
// write buffer, and its send callbacks with it.
func (q *sendQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		q.srv.queued.Add(-q.bytes)
		q.bytes, q.sizes, q.head = 0, nil, 0
	}
	q.mu.Unlock()
}
