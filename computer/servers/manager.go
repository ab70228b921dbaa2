// Package servers runs a computer's MCP servers: it connects to each one
// (stdio child process, SSE or streamable HTTP) with the MCP go-sdk, keeps
// its tools and resources listed, subscribes to its window:// and dpe://
// resources, and restarts it with capped exponential backoff when its
// session ends. One failing server never stops the others.
package servers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// ProtocolVersion is the MCP protocol version the computer asks for. Under
// the newer 2026-07-28 protocol the go-sdk's Subscribe succeeds even when
// the server refuses subscriptions and reads are cached client-side.
const ProtocolVersion = "2025-11-25"

// EventKind says what happened to a server.
type EventKind int

// Event kinds, delivered in order per server.
const (
	// Connected: a session is up and its tools and resources are listed.
	Connected EventKind = iota
	// Disconnected: the session ended (crash, close, stop); its tools and
	// resources are gone until the next Connected.
	Disconnected
	// ToolsChanged: the tool list was refreshed after notifications/tools/list_changed.
	ToolsChanged
	// ResourcesChanged: the resource list was refreshed after
	// notifications/resources/list_changed.
	ResourcesChanged
	// ResourceUpdated: notifications/resources/updated for URI.
	ResourceUpdated
	// Removed: the server was removed from the configuration (or disabled).
	Removed
	// AuthRequired: the server refused the session's initialize with 401
	// and a Bearer challenge (it needs a sign-in); sent at each attempt.
	AuthRequired
)

func (k EventKind) String() string {
	return [...]string{"connected", "disconnected", "tools_changed", "resources_changed", "resource_updated", "removed", "auth_required"}[k]
}

// Event is delivered to the Listener.
type Event struct {
	Kind   EventKind
	Server string
	URI    string // ResourceUpdated only
}

// Listener receives events. Events of one server come from one goroutine, in
// order; a listener may call back into the Manager (ReadResource, Snapshot).
type Listener func(Event)

// Options configure a Manager.
type Options struct {
	Logger   *slog.Logger
	Resolver *config.Resolver
	Listener Listener
	// Restart backoff: the first delay and the cap (defaults 500ms and 30s).
	BackoffMin, BackoffMax time.Duration
	// StableAfter resets the backoff once a session has lived this long (default 10s).
	StableAfter time.Duration
	// ConnectTimeout bounds connecting and listing (default 30s; a server's
	// own timeout setting wins).
	ConnectTimeout time.Duration
	// KeepAlive pings each session at this interval (0: off) and closes it
	// when the server stops answering, which triggers a restart.
	KeepAlive time.Duration
	// AuthStore, when set, holds the OAuth tokens of the HTTP servers that
	// need a sign-in (upstreamauth; `smcp computer auth login` writes it):
	// their requests carry the stored token, refreshed before it expires.
	AuthStore *upstreamauth.Store
	// ClientName is sent to servers in initialize.
	ClientName, ClientVersion string
}

// Manager owns the connections to the MCP servers.
type Manager struct {
	opts Options
	log  *slog.Logger

	mu    sync.Mutex
	conns map[string]*conn
	done  bool
	wg    sync.WaitGroup
}

// New makes a Manager. Servers are added with Set.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Resolver == nil {
		opts.Resolver = config.NewResolver(nil, nil, nil)
	}
	if opts.Listener == nil {
		opts.Listener = func(Event) {}
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = 500 * time.Millisecond
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(30*time.Second, opts.BackoffMin)
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = 10 * time.Second
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.ClientName == "" {
		opts.ClientName = "smcp-computer"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "0.2.0"
	}
	return &Manager{opts: opts, log: opts.Logger, conns: map[string]*conn{}}
}

// Set adds a server or replaces its configuration. An unchanged
// configuration is a no-op; a changed one restarts the server. A disabled
// server is stopped and not started. Set returns at once: servers connect
// in the background, in parallel.
func (m *Manager) Set(s *config.Server) error {
	m.mu.Lock()
	if m.done {
		m.mu.Unlock()
		return errors.New("servers: manager is closed")
	}
	old := m.conns[s.Name]
	if old != nil && reflect.DeepEqual(old.cfg.Raw(), s.Raw()) {
		m.mu.Unlock()
		return nil
	}
	c := newConn(m, s)
	m.conns[s.Name] = c
	if !s.Disabled() {
		m.wg.Add(1)
	}
	m.mu.Unlock()

	if old != nil {
		// The old session ends (and says so) before the new one starts.
		old.stop()
		old.wait()
	}
	if s.Disabled() {
		c.setState(StateDisabled, nil)
		close(c.finished)
		if old != nil {
			m.opts.Listener(Event{Kind: Removed, Server: s.Name})
		}
		return nil
	}
	go func() {
		defer m.wg.Done()
		c.run()
	}()
	return nil
}

// Remove stops a server and forgets it. It reports whether it existed.
func (m *Manager) Remove(name string) bool {
	m.mu.Lock()
	c, ok := m.conns[name]
	delete(m.conns, name)
	m.mu.Unlock()
	if ok {
		c.stop()
		c.wait()
		m.opts.Listener(Event{Kind: Removed, Server: name})
	}
	return ok
}

// Close stops every server and waits for their sessions to end.
func (m *Manager) Close() {
	m.mu.Lock()
	m.done = true
	conns := m.conns
	m.conns = map[string]*conn{}
	m.mu.Unlock()
	for _, c := range conns {
		c.stop()
	}
	m.wg.Wait()
}

// Names lists the configured servers, sorted.
func (m *Manager) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.conns))
	for n := range m.conns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Snapshot returns the state of one server.
func (m *Manager) Snapshot(name string) (Snapshot, bool) {
	c := m.get(name)
	if c == nil {
		return Snapshot{}, false
	}
	return c.snapshot(), true
}

// Snapshots returns the state of every server, sorted by name.
func (m *Manager) Snapshots() []Snapshot {
	var out []Snapshot
	for _, n := range m.Names() {
		if s, ok := m.Snapshot(n); ok {
			out = append(out, s)
		}
	}
	return out
}

func (m *Manager) get(name string) *conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[name]
}

// ErrNotConnected is wrapped when a server has no live session.
var ErrNotConnected = errors.New("MCP server is not connected")

// ErrUnknownServer is wrapped when no server has the name.
var ErrUnknownServer = errors.New("unknown MCP server")

func (m *Manager) session(name string) (*mcp.ClientSession, error) {
	c := m.get(name)
	if c == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == nil {
		return nil, fmt.Errorf("%w: %q is %s", ErrNotConnected, name, c.state)
	}
	return c.session, nil
}

// CallTool calls a tool (by its MCP name) on a server. Cancelling ctx makes
// the go-sdk send notifications/cancelled to the server.
func (m *Manager) CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	cs, err := m.session(server)
	if err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	p := &authProbe{}
	res, err := cs.CallTool(withAuthProbe(ctx, p), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		if status, scheme, stepUp := p.get(); status != 0 {
			return nil, &AuthError{Server: server, Status: status, Scheme: scheme, StepUp: stepUp, err: err}
		}
	}
	return res, err
}

// AuthPending returns the authorization refusal that keeps a server from
// connecting (its initialize answered 401 or 403), nil when there is none:
// a call of one of its tools is answered 4006/4007 from it.
func (m *Manager) AuthPending(server string) *AuthError {
	c := m.get(server)
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return nil
	}
	var ae *AuthError
	if errors.As(c.err, &ae) {
		return ae
	}
	return nil
}

// ReadResource reads a resource from a server.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	cs, err := m.session(server)
	if err != nil {
		return nil, err
	}
	return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// ListResources asks a server for one page of its resources (MCP
// resources/list with cursor, "" for the first page).
func (m *Manager) ListResources(ctx context.Context, server, cursor string) (*mcp.ListResourcesResult, error) {
	cs, err := m.session(server)
	if err != nil {
		return nil, err
	}
	return cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
}
