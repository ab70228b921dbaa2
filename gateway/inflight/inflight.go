// Package inflight counts the calls a front end is serving, so that a
// graceful shutdown can refuse new calls and wait for those in flight before
// the computers that answer them are disconnected.
package inflight

import (
	"context"
	"fmt"
	"sync"
)

// Gate counts calls in flight. The zero Gate is ready to use.
type Gate struct {
	mu       sync.Mutex
	draining bool
	n        int
	idle     chan struct{} // made by Drain; closed when draining and n is 0
}

// Begin counts a call, or reports false (nothing counted) once Drain began.
func (g *Gate) Begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return false
	}
	g.n++
	return true
}

// End uncounts a call that Begin counted.
func (g *Gate) End() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.draining && g.n == 0 {
		close(g.idle)
	}
}

// Draining reports whether Drain was called.
func (g *Gate) Draining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// Close refuses new calls from now on, without waiting: for a front end
// that must refuse before it ends its long-lived streams.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.draining {
		g.draining = true
		g.idle = make(chan struct{})
		if g.n == 0 {
			close(g.idle)
		}
	}
}

// Drain refuses new calls from now on and waits until the calls in flight
// have ended, or ctx ends (then the error says how many are left).
func (g *Gate) Drain(ctx context.Context) error {
	g.Close()
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		n := g.n
		g.mu.Unlock()
		return fmt.Errorf("%d calls still in flight: %w", n, ctx.Err())
	}
}
