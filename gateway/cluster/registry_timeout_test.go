package cluster_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// silentRedis is a Redis server that has stopped answering: it accepts
// connections and reads what it is sent, and never replies. hangUp closes
// the connections it accepted (a call still waiting then fails).
func silentRedis(t *testing.T) (addr string, hangUp func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	hangUp = func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		hangUp()
		wg.Wait()
	})
	return ln.Addr().String(), hangUp
}

// TestRegistryBoundsItsOwnCalls: the hub passes its caller's context, which
// may have no deadline (a release has no caller). Against a Redis that
// stopped answering, through a client with no read timeout of its own,
// every registry call still fails, after the registry's own bound and not
// long after it.
func TestRegistryBoundsItsOwnCalls(t *testing.T) {
	const timeout, claimTimeout = 200 * time.Millisecond, 400 * time.Millisecond
	addr, hangUp := silentRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr,
		// As the gateway builds its client: deadlines reach the socket.
		ContextTimeoutEnabled: true,
		// Nothing but the registry's bound can end a call.
		ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := cluster.NewRegistry(rdb, cluster.RegistryOptions{Timeout: timeout, ClaimTimeout: claimTimeout})
	m := core.Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "pc", SID: "s1", Node: "n1"}
	for _, c := range []struct {
		name  string
		bound time.Duration
		call  func(context.Context) error
	}{
		{"claim", claimTimeout, func(ctx context.Context) error { return reg.Claim(ctx, m) }},
		{"release", timeout, func(ctx context.Context) error { _, err := reg.Release(ctx, m); return err }},
		{"members", timeout, func(ctx context.Context) error { _, err := reg.Members(ctx, "o"); return err }},
		{"computer", timeout, func(ctx context.Context) error { _, _, err := reg.Computer(ctx, "o", "pc"); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- c.call(context.Background()) }()
			// Generous for a loaded machine: without its bound the call
			// never ends.
			const slack = 5 * time.Second
			select {
			case err := <-done:
				took := time.Since(start)
				switch {
				case err == nil:
					t.Fatal("a Redis that never answers: no error")
				case !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("want a timeout, got %v", err)
				case took < c.bound:
					t.Fatalf("failed after %v, before its bound %v: %v", took, c.bound, err)
				}
				t.Logf("failed after %v (bound %v): %v", took, c.bound, err)
			case <-time.After(c.bound + slack):
				hangUp()
				err := <-done
				t.Fatalf("still waiting %v after its bound %v (hung up: %v)", slack, c.bound, err)
			}
		})
	}
}
