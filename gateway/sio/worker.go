package sio

import (
	"context"
	"sync"
	"sync/atomic"
)

// DefaultMaxQueuedEvents is Config.MaxQueuedEvents' default.
const DefaultMaxQueuedEvents = 256

// worker runs one connection's events that may wait on the registry (in a
// cluster, Redis: joins, leaves, list_room, calls to a computer of another
// node), in the order they came, off the socket's packet path. The library
// reads a connection's packets on one goroutine and calls the gateway's
// listener there: an event that waited on it stalled every later packet of
// the connection, a computer's answers (acks) and the Engine.IO heartbeat
// included.
//
// The worker belongs to its connection: made when it connects, closed (and
// waited for) when it disconnects. Its goroutine runs only while events are
// queued, as the library's own socket queue does: an idle connection, the
// common case, holds no goroutine for it.
type worker struct {
	ctx context.Context // the connection's: ends when it disconnects
	max int

	// running: a goroutine is running ops (ops may be empty while it runs
	// the last). Written under mu, read without it by idle, on every event.
	running atomic.Bool

	mu     sync.Mutex
	ops    []func(context.Context)
	done   chan struct{} // closed when the running goroutine returns
	closed bool
}

func newWorker(ctx context.Context, max int) *worker {
	return &worker{ctx: ctx, max: max}
}

// idle reports whether no event is queued or running. The socket's packet
// goroutine, the only producer, may then handle an event that depends on the
// ones before it (a tool call after a join) at once and still in order.
func (w *worker) idle() bool { return !w.running.Load() }

// do queues op. It is false, and op is not run, when the queue is full or the
// worker closed. op runs with the connection's context; when that has ended
// (the connection closed with op still queued) op must only release what it
// holds: nobody awaits its answer.
func (w *worker) do(op func(context.Context)) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.ops) >= w.max {
		return false
	}
	w.ops = append(w.ops, op)
	if !w.running.Load() {
		w.running.Store(true)
		w.done = make(chan struct{})
		go w.run(w.done)
	}
	return true
}

func (w *worker) run(done chan struct{}) {
	defer close(done)
	for {
		w.mu.Lock()
		if len(w.ops) == 0 {
			w.ops = nil // no backing array kept by an idle connection
			w.running.Store(false)
			w.mu.Unlock()
			return
		}
		op := w.ops[0]
		w.ops[0] = nil
		w.ops = w.ops[1:]
		w.mu.Unlock()
		op(w.ctx)
	}
}

// close refuses new events and waits until the queued ones have run. The
// connection's context must have ended first, so that they return promptly.
func (w *worker) close() {
	w.mu.Lock()
	w.closed = true
	done, running := w.done, w.running.Load()
	w.mu.Unlock()
	if running {
		<-done
	}
}
