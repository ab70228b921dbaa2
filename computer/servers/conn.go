package servers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// State of a server.
type State string

// States.
const (
	StateStarting     State = "starting"
	StateConnected    State = "connected"
	StateDisconnected State = "disconnected" // waiting to restart
	StateFailed       State = "failed"       // will not restart (bad configuration)
	StateStopped      State = "stopped"
	StateDisabled     State = "disabled"
)

// Snapshot is a server's state at one moment.
type Snapshot struct {
	Name string
	// BundleID is the server's bundle id (PROTOCOL-0.4.md §5.2), "" when
	// its explicit one is invalid.
	BundleID string
	State    State
	// Err is the last error, if any.
	Err error
	// Config is the rendered configuration of the current session (nil
	// before the first successful rendering).
	Config *config.Resolved
	// Tools as listed by the server.
	Tools []*mcp.Tool
	// ListsResources reports whether the server declares the resources
	// capability, which makes it take part in Desktop and Finder
	// (PROTOCOL.md §6).
	ListsResources bool
	// Subscribable reports whether the server also declares
	// resources.subscribe: only then are its windows and documents
	// subscribed to, and only then do they change live.
	Subscribable bool
	// Resources as listed by the server (only when ListsResources).
	Resources []*mcp.Resource
	// Restarts counts the sessions started after the first one.
	Restarts int
}

// conn supervises one server: it connects, lists, waits for the session to
// end and restarts it.
type conn struct {
	m        *Manager
	cfg      *config.Server
	bundleID string
	log      *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	// finished is closed when run returns.
	finished chan struct{}

	mu           sync.Mutex
	state        State
	err          error
	resolved     *config.Resolved
	session      *mcp.ClientSession
	tools        []*mcp.Tool
	lists        bool
	subscribable bool
	resources    []*mcp.Resource
	subscribed   map[string]bool
	restarts     int

	// Notifications are queued here and handled by the session's worker,
	// off the go-sdk's handler goroutine.
	pendMu      sync.Mutex
	toolsDirty  bool
	resDirty    bool
	updatedURIs []string
	wake        chan struct{}
}

func newConn(m *Manager, s *config.Server) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	id, _ := s.BundleID()
	return &conn{
		m: m, cfg: s, bundleID: id, log: m.log.With("server", s.Name),
		ctx: ctx, cancel: cancel, finished: make(chan struct{}),
		state: StateStarting, wake: make(chan struct{}, 1),
	}
}

func (c *conn) stop() { c.cancel() }
func (c *conn) wait() { <-c.finished }

func (c *conn) setState(st State, err error) {
	c.mu.Lock()
	prev := c.state
	c.state = st
	// A restart attempt keeps the error that caused it until it succeeds.
	if err != nil || st != StateStarting {
		c.err = err
	}
	c.mu.Unlock()
	switch {
	case err != nil && st == StateFailed:
		c.log.Error("mcp server failed", "state", st, "err", err)
	case err != nil:
		c.log.Warn("mcp server state", "state", st, "err", err)
	case prev != st:
		c.log.Info("mcp server state", "state", st)
	}
}

func (c *conn) snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Snapshot{
		Name: c.cfg.Name, BundleID: c.bundleID, State: c.state, Err: c.err, Config: c.resolved,
		Tools: c.tools, ListsResources: c.lists, Subscribable: c.subscribable, Resources: c.resources,
		Restarts: c.restarts,
	}
}

func (c *conn) emit(kind EventKind, uri string) {
	c.m.opts.Listener(Event{Kind: kind, Server: c.cfg.Name, URI: uri})
}

// run is the supervisor loop.
func (c *conn) run() {
	defer close(c.finished)
	defer c.setState(StateStopped, nil)
	attempt := 0
	for first := true; ; first = false {
		if !first {
			c.mu.Lock()
			c.restarts++
			c.mu.Unlock()
		}
		res, _, err := c.cfg.Resolve(c.ctx, c.m.opts.Resolver)
		if c.ctx.Err() != nil {
			return
		}
		if err != nil {
			// A missing input or a malformed configuration does not fix
			// itself: do not retry.
			c.setState(StateFailed, err)
			<-c.ctx.Done()
			return
		}
		c.mu.Lock()
		c.resolved = res
		c.mu.Unlock()

		started := time.Now()
		err = c.session1(res)
		if c.ctx.Err() != nil {
			return
		}
		if time.Since(started) >= c.m.opts.StableAfter {
			attempt = 0
		}
		delay := backoff(attempt, c.m.opts.BackoffMin, c.m.opts.BackoffMax)
		attempt++
		// A server that waits for a sign-in is tried again soon, so that
		// the computer takes the token of `smcp computer auth login`
		// (written to the store by another process) within seconds.
		if ae := (*AuthError)(nil); errors.As(err, &ae) {
			delay = min(delay, authRetry)
			if ae.Status == http.StatusUnauthorized && strings.EqualFold(ae.Scheme, "Bearer") {
				c.emit(AuthRequired, "")
			}
		}
		c.setState(StateDisconnected, fmt.Errorf("%w; restarting in %s", err, delay))
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// authRetry caps the restart delay of a server refused for authorization.
const authRetry = 3 * time.Second

func backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := lo
	for range attempt {
		d *= 2
		if d >= hi {
			return hi
		}
	}
	return d
}

// session1 runs one session from connect to its end and returns why it ended.
func (c *conn) session1(res *config.Resolved) error {
	c.setState(StateStarting, nil)
	transport, release, err := newTransport(res, c.bundleID, c.m.opts.AuthStore, c.log)
	if err != nil {
		return err
	}
	defer release()
	client := mcp.NewClient(&mcp.Implementation{Name: c.m.opts.ClientName, Version: c.m.opts.ClientVersion}, &mcp.ClientOptions{
		Logger:                     c.log,
		KeepAlive:                  c.m.opts.KeepAlive,
		Capabilities:               &mcp.ClientCapabilities{},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.mark(func() { c.toolsDirty = true }) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.mark(func() { c.resDirty = true }) },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.mark(func() { c.updatedURIs = append(c.updatedURIs, r.Params.URI) })
		},
	})
	timeout := c.m.opts.ConnectTimeout
	if t := res.ConnectTimeout(); t > 0 {
		timeout = t
	}
	// The transport keeps the connect context for the life of the session
	// (the SSE transport's event stream is a request made with it), so the
	// connect timeout is a timer on a session-long context, stopped once
	// the session is up and listed.
	cctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	// An initialize refused for authorization (a server behind OAuth
	// without a token) is kept as an AuthError: the calls of the server's
	// tools are answered 4006/4007 from it until a sign-in lets it connect.
	probe := &authProbe{}
	errConnectTimeout := fmt.Errorf("no session within %s", timeout)
	timer := time.AfterFunc(timeout, func() { cancel(errConnectTimeout) })
	cs, err := client.Connect(withAuthProbe(cctx, probe), transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	probe.ended.Store(true)
	if err != nil {
		if status, scheme, stepUp := probe.get(); status != 0 {
			timer.Stop()
			return &AuthError{Server: c.cfg.Name, Status: status, Scheme: scheme, StepUp: stepUp, err: fmt.Errorf("connect: %w", err)}
		}
		if cause := context.Cause(cctx); cause != nil {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return fmt.Errorf("connect: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	defer func() {
		_ = cs.Close()
		c.mu.Lock()
		c.session, c.tools, c.resources, c.subscribed = nil, nil, nil, nil
		c.mu.Unlock()
		c.emit(Disconnected, "")
	}()

	caps := cs.InitializeResult().Capabilities
	c.mu.Lock()
	c.session = cs
	c.lists = caps != nil && caps.Resources != nil
	c.subscribable = c.lists && caps.Resources.Subscribe
	c.subscribed = map[string]bool{}
	c.mu.Unlock()
	switch {
	case caps == nil || caps.Resources == nil:
		c.log.Info("mcp server has no resources capability: it has no windows on the Desktop and no documents in the Finder")
	case !caps.Resources.Subscribe:
		c.log.Info("mcp server lists resources without resources.subscribe: its windows and documents are shown, without live updates")
	}
	// Notifications that arrived for an earlier session are stale now.
	c.pendMu.Lock()
	c.toolsDirty, c.resDirty, c.updatedURIs = false, false, nil
	c.pendMu.Unlock()

	err = c.refreshTools(cctx, cs)
	if err == nil {
		err = c.refreshResources(cctx, cs)
	}
	if !timer.Stop() {
		err = errors.Join(err, errConnectTimeout)
	}
	if err != nil {
		return err
	}
	// Listeners see the new tools and resources before anyone sees the
	// state, so that "connected" means "listed and aggregated".
	c.emit(Connected, "")
	c.setState(StateConnected, nil)

	for {
		select {
		case <-c.ctx.Done():
			return c.ctx.Err()
		case err := <-ended:
			if err == nil {
				err = errors.New("session closed")
			}
			return fmt.Errorf("session ended: %w", err)
		case <-c.wake:
			c.drain(cs)
		}
	}
}

func (c *conn) mark(f func()) {
	c.pendMu.Lock()
	f()
	c.pendMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// drain handles queued notifications: lists are refreshed before the
// listener hears of the change.
func (c *conn) drain(cs *mcp.ClientSession) {
	c.pendMu.Lock()
	tools, res, uris := c.toolsDirty, c.resDirty, c.updatedURIs
	c.toolsDirty, c.resDirty, c.updatedURIs = false, false, nil
	c.pendMu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, c.m.opts.ConnectTimeout)
	defer cancel()
	if tools {
		if err := c.refreshTools(ctx, cs); err != nil {
			c.log.Warn("refresh tools after list_changed", "err", err)
		} else {
			c.emit(ToolsChanged, "")
		}
	}
	if res {
		if err := c.refreshResources(ctx, cs); err != nil {
			c.log.Warn("refresh resources after list_changed", "err", err)
		} else {
			c.emit(ResourcesChanged, "")
		}
	}
	for _, u := range uris {
		c.emit(ResourceUpdated, u)
	}
}

func (c *conn) refreshTools(ctx context.Context, cs *mcp.ClientSession) error {
	caps := cs.InitializeResult().Capabilities
	if caps == nil || caps.Tools == nil {
		return nil
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
		tools = append(tools, t)
	}
	c.mu.Lock()
	c.tools = tools
	c.mu.Unlock()
	return nil
}

// subscribedScheme reports whether resources with this URI take part in
// Desktop or Finder (and are subscribed to).
func subscribedScheme(uri string) bool {
	return strings.HasPrefix(uri, "window://") || strings.HasPrefix(uri, "dpe://")
}

func (c *conn) refreshResources(ctx context.Context, cs *mcp.ClientSession) error {
	c.mu.Lock()
	lists, subscribable := c.lists, c.subscribable
	c.mu.Unlock()
	if !lists {
		return nil
	}
	var list []*mcp.Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list resources: %w", err)
		}
		list = append(list, r)
	}
	want := map[string]bool{}
	for _, r := range list {
		if subscribable && subscribedScheme(r.URI) {
			want[r.URI] = true
		}
	}
	c.mu.Lock()
	c.resources = list
	var add, drop []string
	for u := range want {
		if !c.subscribed[u] {
			add = append(add, u)
		}
	}
	for u := range c.subscribed {
		if !want[u] {
			drop = append(drop, u)
		}
	}
	c.mu.Unlock()
	slices.Sort(add)
	for _, u := range add {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: u}); err != nil {
			// Listing still works without updates; keep the resource.
			c.log.Warn("subscribe", "uri", u, "err", err)
			continue
		}
		c.mu.Lock()
		c.subscribed[u] = true
		c.mu.Unlock()
	}
	for _, u := range drop {
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: u}); err != nil {
			c.log.Debug("unsubscribe", "uri", u, "err", err)
		}
		c.mu.Lock()
		delete(c.subscribed, u)
		c.mu.Unlock()
	}
	return nil
}
