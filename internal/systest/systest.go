// Package systest starts the real components of a whole-system test (the
// gateway, the document server, a computer joined to an office) on loopback,
// each stopped by the test's cleanup.
package systest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// Gateway starts a gateway on 127.0.0.1 with cfg; a failed stop fails the
// test.
func Gateway(t testing.TB, cfg gateway.Config) *gateway.Running {
	t.Helper()
	gw, err := gateway.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gw.Stop(); err != nil {
			t.Errorf("gateway stop: %v", err)
		}
	})
	return gw
}

// Docs serves the document server over streamable HTTP and returns its URL.
// With watch, the server watches its folder until the test ends.
func Docs(t testing.TB, ctx context.Context, opts docserver.Options, watch bool) string {
	t.Helper()
	docs, err := docserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = docs.Close() })
	if watch {
		watchCtx, stop := context.WithCancel(ctx)
		watched := make(chan error, 1)
		go func() { watched <- docs.Watch(watchCtx) }()
		t.Cleanup(func() {
			stop()
			if err := <-watched; !errors.Is(err, context.Canceled) {
				t.Errorf("docserver watch: %v", err)
			}
		})
	}
	srv := httptest.NewServer(docs.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// Computer starts a computer hosting servers (every tool allowed), waits
// until they serve, and joins it to gw.Office.
func Computer(t testing.TB, ctx context.Context, name string, servers map[string]*config.Server,
	gw computer.Gateway, log *slog.Logger) *computer.Computer {
	t.Helper()
	pc, err := computer.New(computer.Options{
		Name: name, Config: &config.Config{Servers: servers}, Confirm: tools.ConfirmAuto, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	link, err := pc.Connect(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	return pc
}

// Server is config.NewServer for a test: a bad config fails it.
func Server(t testing.TB, name string, raw map[string]any) *config.Server {
	t.Helper()
	s, err := config.NewServer(name, raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RedisServer starts a redis-server (internal/loadtest) for the test and
// returns its URL; it stops after everything the test registers later. With
// none installed the test is skipped, except under CI (CI=true; .ci/run
// installs it), where that is a failure: cluster code must not be held only
// to miniredis.
func RedisServer(t testing.TB) string {
	t.Helper()
	return RedisProcess(t).URL
}

// Redis is a redis-server a test may also stop, restart empty and pause
// under its clients.
type Redis struct {
	URL  string
	addr *net.TCPAddr
	mu   sync.Mutex
	srv  *loadtest.Child
}

// RedisProcess starts a redis-server as RedisServer does and returns it;
// whatever process it runs stops after everything the test registers
// later.
func RedisProcess(t testing.TB) *Redis {
	t.Helper()
	testdeps.Program(t, "redis-server", "redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := loadtest.StartRedis(ctx)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	r := &Redis{URL: srv.URL, srv: srv}
	u, err := url.Parse(srv.URL)
	if err == nil {
		r.addr, err = net.ResolveTCPAddr("tcp", u.Host)
	}
	if err != nil {
		srv.Stop()
		t.Fatalf("redis-server URL %q: %v", srv.URL, err)
	}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.srv != nil {
			_ = syscall.Kill(r.srv.PID, syscall.SIGCONT) // a test that failed while it was paused
			r.srv.Stop()
		}
	})
	return r
}

// Stop stops the server (SIGTERM, no persistence: its data is gone).
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		r.srv.Stop()
		r.srv = nil
	}
}

// Start starts an empty server on the same port again. The port may be
// held for a moment by a client's dial (a TCP self-connect, when nothing
// listens): it is retried for a while.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		t.Fatal("redis-server already running")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		srv, err := loadtest.StartRedisOn(ctx, r.addr)
		cancel()
		if err == nil {
			r.srv = srv
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("restart redis-server on %s: %v", r.addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pause stops the server's process (SIGSTOP): connections stay open and
// nothing is answered, as in a long GC-like stall or a frozen VM.
func (r *Redis) Pause(t testing.TB) { r.signal(t, syscall.SIGSTOP) }

// Resume resumes a paused server (SIGCONT).
func (r *Redis) Resume(t testing.TB) { r.signal(t, syscall.SIGCONT) }

func (r *Redis) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv == nil {
		t.Fatal("redis-server not running")
	}
	if err := syscall.Kill(r.srv.PID, sig); err != nil {
		t.Fatalf("signal redis-server: %v", err)
	}
}
