package computer_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

func quietLogger() *slog.Logger {
	if os.Getenv("COMPUTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// updates records the server:update_* events a computer emits.
type updates struct {
	mu     sync.Mutex
	counts map[string]int
	ch     chan string
}

func newUpdates() *updates { return &updates{counts: map[string]int{}, ch: make(chan string, 4096)} }

func (u *updates) record(ev string) {
	u.mu.Lock()
	u.counts[ev]++
	u.mu.Unlock()
	u.ch <- ev
}

// drain forgets the events seen so far.
func (u *updates) drain() {
	u.mu.Lock()
	clear(u.counts)
	u.mu.Unlock()
	for {
		select {
		case <-u.ch:
		default:
			return
		}
	}
}

// wait waits for event ev.
func (u *updates) wait(t testing.TB, ev string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case got := <-u.ch:
			if got == ev {
				return
			}
		case <-deadline:
			t.Fatalf("no %s", ev)
		}
	}
}

// fixture serves f over streamable HTTP for the test's life.
func fixture(t testing.TB, f *testmcp.Fixture) string {
	srv := httptest.NewServer(f.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv.URL
}

type harness struct {
	t   testing.TB
	c   *computer.Computer
	upd *updates
}

// newComputer builds and starts a computer over the given servers
// (name → config object) and waits until every server is connected.
func newComputer(t testing.TB, servers map[string]map[string]any, mutate ...func(*computer.Options)) *harness {
	t.Helper()
	cfg := &config.Config{Servers: map[string]*config.Server{}}
	for name, obj := range servers {
		s, err := config.NewServer(name, obj)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Servers[name] = s
	}
	upd := newUpdates()
	opts := computer.Options{
		Name: "pc", Config: cfg, Logger: quietLogger(), Confirm: tools.ConfirmAuto,
		LookupEnv:  func(string) (string, bool) { return "", false },
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		OnUpdate: upd.record,
	}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := computer.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: c, upd: upd}
	for name, obj := range servers {
		if d, _ := obj["disabled"].(bool); !d {
			h.waitConnected(name)
		}
	}
	return h
}

func (h *harness) waitConnected(name string) {
	h.t.Helper()
	// Connected comes after the server's documents are read: generous for
	// the 10k-document benchmark on a loaded machine.
	var s servers.Snapshot
	if !testwait.Poll(90*time.Second, func() bool {
		var ok bool
		s, ok = h.c.Servers().Snapshot(name)
		return ok && s.State == servers.StateConnected
	}) {
		h.t.Fatalf("server %s not connected: %s %v", name, s.State, s.Err)
	}
}

// call sends one client: event through Handle and decodes the answer into a
// generic JSON value, as an agent would see it.
func (h *harness) call(event string, payload map[string]any) map[string]any {
	h.t.Helper()
	if _, ok := payload["computer"]; !ok {
		payload["computer"] = "pc"
	}
	if _, ok := payload["agent"]; !ok {
		payload["agent"] = "bot"
	}
	if _, ok := payload["req_id"]; !ok {
		payload["req_id"] = "r-" + event
	}
	return roundTrip(h.t, h.c.Handle(context.Background(), event, payload))
}

func roundTrip(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer is not an object: %s", b)
	}
	return m
}

func (u *updates) count(ev string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[ev]
}

func ptr[T any](v T) *T { return &v }
