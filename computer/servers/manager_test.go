package servers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

var fixtureBin string

func TestMain(m *testing.M) { testmcp.RunWithBinary(m, &fixtureBin) }

// recorder collects manager events.
type recorder struct {
	mu     sync.Mutex
	events []servers.Event
	ch     chan servers.Event
}

func newRecorder() *recorder { return &recorder{ch: make(chan servers.Event, 1024)} }

func (r *recorder) listen(ev servers.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	r.ch <- ev
}

// wait returns the first event matching kind and server, failing at the deadline.
func (r *recorder) wait(t *testing.T, kind servers.EventKind, server string) servers.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-r.ch:
			if ev.Kind == kind && ev.Server == server {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event for %s", kind, server)
		}
	}
}

// serve runs f over streamable HTTP until the test ends (after the
// manager's cleanup, which is registered later).
func serve(t *testing.T, f *testmcp.Fixture) *httptest.Server {
	srv := httptest.NewServer(f.HTTPHandler())
	t.Cleanup(srv.Close)
	return srv
}

func waitState(t *testing.T, m *servers.Manager, name string, st servers.State) servers.Snapshot {
	t.Helper()
	var s servers.Snapshot
	if !testwait.Poll(testwait.Timeout, func() bool { s, _ = m.Snapshot(name); return s.State == st }) {
		t.Fatalf("%s: state %s, want %s (%v)", name, s.State, st, s.Err)
	}
	return s
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func server(t *testing.T, name string, obj map[string]any) *config.Server {
	t.Helper()
	s, err := config.NewServer(name, obj)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newManager(t *testing.T, rec *recorder, inputs ...config.Input) *servers.Manager {
	m := servers.New(servers.Options{
		Logger:     quietLogger(),
		Listener:   rec.listen,
		Resolver:   config.NewResolver(inputs, func(string) (string, bool) { return "", false }, nil),
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	})
	t.Cleanup(m.Close)
	return m
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || len(res.Content) == 0 {
		b, _ := json.Marshal(res)
		t.Fatalf("tool failed: %s", b)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestStreamableServerToolsResourcesAndNotifications(t *testing.T) {
	f := testmcp.New("web", testmcp.Options{})
	f.SetWindow(testmcp.Window{URI: "window://web/main", Text: "hello"})
	srv := serve(t, f)

	rec := newRecorder()
	m := newManager(t, rec)
	if err := m.Set(server(t, "web", map[string]any{"url": srv.URL})); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, servers.Connected, "web")
	snap := waitState(t, m, "web", servers.StateConnected)
	if !snap.Subscribable || len(snap.Tools) != 4 || len(snap.Resources) != 1 {
		t.Fatalf("snapshot: %+v", snap)
	}
	res, err := m.CallTool(context.Background(), "web", "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "web: hi" {
		t.Fatalf("echo = %q", got)
	}

	// A subscribed window's update arrives as ResourceUpdated.
	if err := f.SetWindowText(context.Background(), "window://web/main", "changed"); err != nil {
		t.Fatal(err)
	}
	if ev := rec.wait(t, servers.ResourceUpdated, "web"); ev.URI != "window://web/main" {
		t.Fatalf("updated %q", ev.URI)
	}
	// New tool → the list is refreshed before ToolsChanged is delivered.
	f.AddEcho("shout")
	rec.wait(t, servers.ToolsChanged, "web")
	snap, _ = m.Snapshot("web")
	if len(snap.Tools) != 5 {
		t.Fatalf("tools after list_changed: %d", len(snap.Tools))
	}
	// New resource → ResourcesChanged after the list is refreshed.
	f.SetWindow(testmcp.Window{URI: "window://web/second", Text: "2"})
	rec.wait(t, servers.ResourcesChanged, "web")
	snap, _ = m.Snapshot("web")
	if len(snap.Resources) != 2 {
		t.Fatalf("resources after list_changed: %d", len(snap.Resources))
	}
}

func TestSSEServer(t *testing.T) {
	f := testmcp.New("legacy", testmcp.Options{})
	sse := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return f.Server }, nil)
	// The configured headers reach every request.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		sse.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec := newRecorder()
	m := newManager(t, rec)
	_ = m.Set(server(t, "legacy", map[string]any{"type": "sse", "url": srv.URL, "headers": map[string]any{"Authorization": "Bearer t0ken"}}))
	rec.wait(t, servers.Connected, "legacy")
	res, err := m.CallTool(context.Background(), "legacy", "echo", map[string]any{"text": "over sse"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "legacy: over sse" {
		t.Fatalf("echo = %q", got)
	}
}

// TestServerWithoutSubscribeListsResources: a server with the resources
// capability but no resources.subscribe is listed (PROTOCOL.md §6) and
// not subscribed to.
func TestServerWithoutSubscribeListsResources(t *testing.T) {
	f := testmcp.New("plain", testmcp.Options{NoSubscribe: true})
	f.SetWindow(testmcp.Window{URI: "window://plain/w", Text: "x"})
	srv := serve(t, f)
	rec := newRecorder()
	m := newManager(t, rec)
	_ = m.Set(server(t, "plain", map[string]any{"url": srv.URL}))
	rec.wait(t, servers.Connected, "plain")
	snap, _ := m.Snapshot("plain")
	if snap.Subscribable || !snap.ListsResources || len(snap.Resources) != 1 || len(snap.Tools) != 4 {
		t.Fatalf("snapshot: %+v", snap)
	}
}

func pid(t *testing.T, m *servers.Manager, name string) int {
	t.Helper()
	res, err := m.CallTool(context.Background(), name, "pid", nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(text(t, res))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStdioServerIsRestartedAfterItsProcessDies(t *testing.T) {
	rec := newRecorder()
	m := newManager(t, rec)
	_ = m.Set(server(t, "child", map[string]any{"command": fixtureBin, "args": []any{"-name", "child"}}))
	rec.wait(t, servers.Connected, "child")
	first := pid(t, m, "child")
	if first == os.Getpid() {
		t.Fatal("the fixture runs in-process")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, servers.Disconnected, "child")
	rec.wait(t, servers.Connected, "child")
	second := pid(t, m, "child")
	if second == first {
		t.Fatalf("same pid %d after restart", second)
	}
	snap, _ := m.Snapshot("child")
	if snap.Restarts < 1 {
		t.Fatalf("restarts = %d", snap.Restarts)
	}
}

func TestFailingServerDoesNotStopOthers(t *testing.T) {
	f := testmcp.New("good", testmcp.Options{})
	srv := serve(t, f)
	rec := newRecorder()
	m := newManager(t, rec, config.Input{Type: config.InputPromptString, ID: "token", Description: "API token"})
	_ = m.Set(server(t, "broken", map[string]any{"command": "/nonexistent/mcp-server"}))
	_ = m.Set(server(t, "needs-input", map[string]any{"url": srv.URL, "headers": map[string]any{"Authorization": "Bearer ${input:token}"}}))
	_ = m.Set(server(t, "good", map[string]any{"url": srv.URL}))
	rec.wait(t, servers.Connected, "good")
	if _, err := m.CallTool(context.Background(), "good", "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	var b, ni servers.Snapshot
	if !testwait.Poll(testwait.Timeout, func() bool {
		b, _ = m.Snapshot("broken")
		ni, _ = m.Snapshot("needs-input")
		return b.Restarts >= 2 && ni.State == servers.StateFailed
	}) {
		t.Fatalf("broken %+v / needs-input %+v", b, ni)
	}
	if b.State == servers.StateConnected || b.Err == nil {
		t.Fatalf("broken: %+v", b)
	}
	if !strings.Contains(ni.Err.Error(), `input "token"`) || !strings.Contains(ni.Err.Error(), "A2C_SMCP_TOKEN") {
		t.Fatalf("needs-input error does not name the input: %v", ni.Err)
	}
	if _, err := m.CallTool(context.Background(), "broken", "echo", nil); err == nil {
		t.Fatal("call on a broken server succeeded")
	}
}

func TestRemoveAndDisable(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	srv := serve(t, f)
	rec := newRecorder()
	m := newManager(t, rec)
	s := server(t, "s", map[string]any{"url": srv.URL})
	_ = m.Set(s)
	rec.wait(t, servers.Connected, "s")
	_ = m.Set(s.WithDisabled(true))
	rec.wait(t, servers.Disconnected, "s")
	rec.wait(t, servers.Removed, "s")
	if snap, _ := m.Snapshot("s"); snap.State != servers.StateDisabled {
		t.Fatalf("state %s", snap.State)
	}
	_ = m.Set(s)
	rec.wait(t, servers.Connected, "s")
	if !m.Remove("s") {
		t.Fatal("remove")
	}
	rec.wait(t, servers.Removed, "s")
	if _, ok := m.Snapshot("s"); ok {
		t.Fatal("still there")
	}
}

// TestHTTPServerRestartIsDetected stops a streamable HTTP server and starts
// it again on the same address: keep-alive pings notice the dead session,
// and the backoff loop reconnects.
func TestHTTPServerRestartIsDetected(t *testing.T) {
	f := testmcp.New("web", testmcp.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: f.HTTPHandler()}
	go func() { _ = srv.Serve(ln) }()

	rec := newRecorder()
	m := servers.New(servers.Options{
		Logger: quietLogger(), Listener: rec.listen, KeepAlive: 50 * time.Millisecond,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond,
	})
	t.Cleanup(m.Close)
	_ = m.Set(server(t, "web", map[string]any{"url": "http://" + addr}))
	rec.wait(t, servers.Connected, "web")

	_ = srv.Close() // drops every connection, the session's included
	rec.wait(t, servers.Disconnected, "web")
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &http.Server{Handler: testmcp.New("web", testmcp.Options{}).HTTPHandler()}
	go func() { _ = srv2.Serve(ln2) }()
	t.Cleanup(func() { _ = srv2.Close() })
	rec.wait(t, servers.Connected, "web")
	if _, err := m.CallTool(context.Background(), "web", "echo", map[string]any{"text": "back"}); err != nil {
		t.Fatal(err)
	}
}
