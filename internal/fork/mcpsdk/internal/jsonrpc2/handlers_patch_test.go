// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md):
// handler goroutines are reused, never handed a request while busy, and are
// gone once the connection is.

package jsonrpc2

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipe is a Reader and Writer over channels: the test writes requests into
// in and reads the connection's answers from out.
type pipe struct {
	in     chan Message
	out    chan Message
	closed chan struct{}
	once   sync.Once
}

func newPipe() *pipe {
	return &pipe{in: make(chan Message), out: make(chan Message, 64), closed: make(chan struct{})}
}

func (p *pipe) Read(ctx context.Context) (Message, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipe) Write(ctx context.Context, m Message) error {
	select {
	case p.out <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *pipe) call(t *testing.T, id int64) {
	t.Helper()
	req, err := NewCall(Int64ID(id), "m", nil)
	if err != nil {
		t.Fatal(err)
	}
	p.in <- req
}

func (p *pipe) answer(t *testing.T) *Response {
	t.Helper()
	select {
	case m := <-p.out:
		return m.(*Response)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5s")
		return nil
	}
}

// goroutineID reads the calling goroutine's id from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

func serve(t *testing.T, h HandlerFunc) (*Connection, *pipe) {
	t.Helper()
	p := newPipe()
	c := NewConnection(context.Background(), ConnectionConfig{
		Reader: p, Writer: p, Closer: p,
		Bind: func(*Connection) Handler { return h },
	})
	return c, p
}

func TestHandlerGoroutineReused(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	c, p := serve(t, func(ctx context.Context, req *Request) (any, error) {
		mu.Lock()
		seen[goroutineID()] = true
		mu.Unlock()
		return "ok", nil
	})
	defer c.Close()
	const calls = 50
	for i := range int64(calls) {
		p.call(t, i)
		if r := p.answer(t); r.Error != nil {
			t.Fatalf("call %d: %v", i, r.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// One after the other, the calls find the goroutine of the last one
	// idle; upstream ran each on a new one.
	if len(seen) > 2 {
		t.Errorf("%d sequential calls ran on %d goroutines, want 1 reused", calls, len(seen))
	}
}

func TestBusyHandlerGoroutineNotHandedWork(t *testing.T) {
	// Every handler releases its request (Async) and then waits for all of
	// them to have started: that ends only if each runs on a goroutine of
	// its own.
	const calls = 8
	var started sync.WaitGroup
	started.Add(calls)
	c, p := serve(t, func(ctx context.Context, req *Request) (any, error) {
		Async(ctx)
		started.Done()
		started.Wait()
		return "ok", nil
	})
	defer c.Close()
	for i := range int64(calls) {
		p.call(t, i)
	}
	for range calls {
		if r := p.answer(t); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
}

func TestHandlerGoroutinesEndWithConnection(t *testing.T) {
	c, p := serve(t, func(ctx context.Context, req *Request) (any, error) { return "ok", nil })
	for i := range int64(5) {
		p.call(t, i)
		p.answer(t)
	}
	if n := handlerLoops(); n == 0 {
		t.Fatal("no idle handler goroutine after the calls")
	}
	p.Close()
	if err := c.Close(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	// Wait awaits the handler goroutines; the last steps of their exit may
	// still be on the stack for an instant.
	deadline := time.Now().Add(2 * time.Second)
	for handlerLoops() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d handler goroutines left after Close", handlerLoops())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func handlerLoops() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "jsonrpc2.(*Connection).handlerLoop(")
}
