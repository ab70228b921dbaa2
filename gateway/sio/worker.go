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
// node), in the order they came, off the socket's packet queue. The library
// hands each packet of a connection to the socket's task queue, which runs
// them one at a time in order, and calls the gateway's listener there: an
// event that waited in it stalled every later packet of the connection (a
// computer's answers to calls included), piling them up in that unbounded
// queue.
//
// The worker belongs to its connection: readied when it connects, closed
// (and waited for) when it disconnects. Its goroutine runs only while events
// are queued, as the library's own socket queue does: an idle connection,
// the common case, holds no goroutine for it.
type worker struct {
	max int

	// running: a goroutine is running ops (ops may be empty while it runs
	// the last). Written under mu, read without it by idle, on every event.
	running atomic.Bool

	mu     sync.Mutex
	ops    []func(context.Context)
	closed bool
	// stop ends the running goroutine's context. Each run has a context of
	// its own rather than one per connection: a context derived from
	// another (a registry call's timeout) leaves a map in its parent, which
	// a connection's context would keep for the connection's lifetime.
	stop context.CancelFunc
	// wg counts the running goroutine. Add is called under mu and never
	// once closed is set, so Add never races with close's Wait.
	wg sync.WaitGroup
}

// init readies a worker kept by value in its connection's handler (one
// allocation less per connection).
func (w *worker) init(max int) { w.max = max }

// idle reports whether no event is queued or running. The socket's packet
// goroutine, the only producer, may then handle an event that depends on the
// ones before it (a tool call after a join) at once and still in order.
func (w *worker) idle() bool { return !w.running.Load() }

// do queues op. It is false, and op is not run, when the queue is full or the
// worker closed. op gets a context that ends when the worker is closed (the
// connection closed); an op that finds it ended must only release what it
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
		ctx, stop := context.WithCancel(context.Background())
		w.stop = stop
		w.wg.Add(1)
		go w.run(ctx, stop)
	}
	return true
}

func (w *worker) run(ctx context.Context, stop context.CancelFunc) {
	defer w.wg.Done()
	defer stop()
	for {
		w.mu.Lock()
		if len(w.ops) == 0 {
			w.ops = nil // no backing array kept by an idle connection
			w.running.Store(false)
			w.stop = nil
			w.mu.Unlock()
			return
		}
		op := w.ops[0]
		w.ops[0] = nil
		w.ops = w.ops[1:]
		w.mu.Unlock()
		op(ctx)
	}
}

// close refuses new events, ends the running one's context and waits until
// the queued ones have run (finding their context ended).
func (w *worker) close() {
	w.mu.Lock()
	w.closed = true
	if w.stop != nil {
		w.stop()
	}
	w.mu.Unlock()
	w.wg.Wait()
}
