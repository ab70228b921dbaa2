package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/computer/tools"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Gateway says where and how a computer joins its office.
type Gateway struct {
	// URL of the gateway, e.g. "http://127.0.0.1:8080".
	URL string
	// Fallbacks are further nodes of the same gateway (a cluster on one
	// Redis). With any, the link fails over: when a connect fails or the
	// connection drops, the next node is tried (the nodes in turn, a
	// backoff between rounds) and the computer joins its office there.
	Fallbacks []string
	// Path is the Engine.IO path (default "/socket.io/").
	Path string
	// Office to join.
	Office string
	// APIKey authenticates the computer (sent as the x-api-key header).
	APIKey string
	// Dial overrides the Socket.IO options built from the fields above
	// (URL, Fallbacks, Path and APIKey are still filled in when empty).
	Dial sioclient.Options
}

// Link is a computer's live connection to its gateway: one Socket.IO
// connection, or with fallback nodes the one of the moment.
type Link struct {
	c      *Computer
	office string
	opts   sioclient.Options // with Fallbacks: NoReconnect, and every URL in order

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the failover loop

	mu   sync.Mutex
	conn *sioclient.Client

	done     chan struct{} // the link gave up: see Done
	doneOnce sync.Once
	err      error
}

// Transport names the link's Engine.IO transport now: "polling" from the
// handshake until the upgrade, "websocket" after it.
func (l *Link) Transport() string { return l.Conn().Transport() }

// Connect dials the gateway, registers the client: handlers and joins the
// office. The join is repeated by the connection after every reconnect;
// with fallback nodes, on the node the link fails over to. Handlers run in
// their own goroutines: a slow tool call never blocks the connection's
// event loop.
func (c *Computer) Connect(ctx context.Context, gw Gateway) (*Link, error) {
	if gw.Office == "" {
		return nil, errors.New("computer: an office is required")
	}
	o := gw.Dial
	if o.URL == "" {
		o.URL = gw.URL
	}
	if len(o.Fallbacks) == 0 {
		o.Fallbacks = gw.Fallbacks
	}
	if o.Path == "" {
		o.Path = gw.Path
	}
	if o.APIKey == "" {
		o.APIKey = gw.APIKey
	}
	if o.Logger == nil {
		o.Logger = c.log.With("component", "link")
	}
	if o.Version == "" {
		o.Version, _ = A2CVersion(c.protocol)
	}
	if len(o.Fallbacks) > 0 {
		// The library reconnects to one URL only; the link itself dials
		// the next node when a connection is over.
		o.NoReconnect = true
	}
	conn, err := c.joinRetrying(ctx, o, gw.Office)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &Link{c: c, office: gw.Office, opts: o, ctx: lctx, cancel: cancel, conn: conn, done: make(chan struct{})}
	if o.NoReconnect && len(o.Fallbacks) > 0 {
		l.wg.Go(l.failover)
	} else {
		l.wg.Go(func() {
			select {
			case <-conn.Done():
				l.finish(conn.Err())
			case <-lctx.Done():
			}
		})
	}
	return l, nil
}

// joinError is the office refusing a join on a connection the gateway took
// (its key accepted, its protocol served): what the office's state decides,
// which can change.
type joinError struct{ error }

func (e joinError) Unwrap() error { return e.error }

// joinRetrying is join, tried again while the office refuses it (another
// protocol version spoken there, a name held by a node that died): each
// refusal a warning with the gateway's reason, paced by a backoff, until
// ctx ends. A connection refused (a key, a protocol the gateway does not
// serve) is returned: that is the caller's to report.
func (c *Computer) joinRetrying(ctx context.Context, o sioclient.Options, office string) (*sioclient.Client, error) {
	delay := failoverDelay
	for {
		conn, err := c.join(ctx, o, office)
		var je joinError
		if err == nil || !errors.As(err, &je) || ctx.Err() != nil {
			return conn, err
		}
		c.log.Warn("joining the office was refused, retrying", "office", office, "retry_in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, fmt.Errorf("computer: join office %q: %w (last refusal: %w)", office, ctx.Err(), err)
		}
		delay = min(2*delay, maxJoinDelay)
	}
}

// join dials o (its URL, then its fallbacks), registers the handlers and
// joins the office.
func (c *Computer) join(ctx context.Context, o sioclient.Options, office string) (*sioclient.Client, error) {
	conn, err := sioclient.Dial(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("computer: connect to gateway %s: %w", o.URL, err)
	}
	for _, e := range c.profileEvents() {
		conn.Handle(e.Name, func(ctx context.Context, payload json.RawMessage) (any, error) {
			return c.Handle(ctx, e.Name, payload), nil
		})
	}
	for _, e := range smcp.Events(smcp.Notify) {
		if fn := c.notifyHandler(e.Name); fn != nil {
			conn.On(e.Name, func(payload json.RawMessage) {
				m := e.NewRequest()
				if err := smcp.Unmarshal(payload, m); err != nil {
					c.log.Warn("malformed notification", "event", e.Name, "err", err)
					return
				}
				fn(m)
			})
		}
	}
	if c.signInViaLink {
		conn.Handle(smcp.EventAuthCallback, func(_ context.Context, payload json.RawMessage) (any, error) {
			return c.authCallback(payload), nil
		})
	}
	conn.OnRejoin(func(err error) {
		if err != nil {
			c.log.Error("re-joining the office after a reconnect failed", "office", office, "err", err)
			return
		}
		// Agents may have missed updates while we were away.
		c.notify(smcp.EventUpdateConfig)
		c.reportSignIns()
	})
	if err := conn.JoinOffice(ctx, smcp.RoleComputer, c.name, office); err != nil {
		conn.Close()
		err = fmt.Errorf("computer: join office %q as %q at %s: %w", office, c.name, conn.URL(), err)
		if e, refused := smcp.AsError(err); refused && e.Code != smcp.CodeBadRequest {
			return nil, joinError{err}
		}
		return nil, err
	}
	c.SetLink(conn)
	c.reportSignIns()
	c.log.Info("joined office", "gateway", conn.URL(), "office", office)
	return conn, nil
}

// failoverDelay is the first pause between two failed failovers (a node
// that took the connection but refused the join); it doubles up to
// maxFailoverDelay. Nodes that cannot be reached are paced by Dial.
const (
	failoverDelay    = 500 * time.Millisecond
	maxFailoverDelay = 5 * time.Second
	// maxJoinDelay caps the pause between two refused joins at start: an
	// office another version holds may stay so for a while.
	maxJoinDelay = 30 * time.Second
)

// failover waits for the current connection to be over and joins the
// office through the next node, until Close or a version refusal (which
// every node of one gateway would repeat).
func (l *Link) failover() {
	urls := append([]string{l.opts.URL}, l.opts.Fallbacks...)
	for {
		conn := l.Conn()
		select {
		case <-l.ctx.Done():
			return
		case <-conn.Done():
		}
		var ve *sioclient.VersionError
		if err := conn.Err(); errors.As(err, &ve) {
			l.finish(err)
			return
		}
		l.c.SetLink(nil)
		conn.Close()
		last := conn.URL()
		delay := failoverDelay
		for {
			o := l.opts
			o.URL, o.Fallbacks = sioclient.Rotate(urls, last)
			// One line per switch, naming where from and where to.
			l.opts.Logger.Warn("gateway connection lost, failing over", "from", last, "to", o.URL, "office", l.office)
			next, err := l.c.join(l.ctx, o, l.office)
			if err == nil {
				l.mu.Lock()
				l.conn = next
				l.mu.Unlock()
				// Agents may have missed updates while we were away.
				l.c.notify(smcp.EventUpdateConfig)
				break
			}
			if l.ctx.Err() != nil {
				return
			}
			if errors.As(err, &ve) {
				l.finish(err)
				return
			}
			// Reached a node but not the office (the registry still
			// settling, a claim bound run out): try the others, paced.
			l.opts.Logger.Warn("failover: joining the office failed, retrying", "retry_in", delay, "err", err)
			select {
			case <-time.After(delay):
			case <-l.ctx.Done():
				return
			}
			delay = min(2*delay, maxFailoverDelay)
			last = o.URL
		}
	}
}

// finish ends the link's life with err (the first reason wins).
func (l *Link) finish(err error) {
	l.doneOnce.Do(func() {
		l.mu.Lock()
		l.err = err
		l.mu.Unlock()
		close(l.done)
	})
}

// Done is closed when the link gives up: refused for good (an incompatible
// protocol version), or, without fallback nodes, disconnected for good.
// Not at Close.
func (l *Link) Done() <-chan struct{} { return l.done }

// Err says why Done is closed.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// notifyHandler returns the computer's handler of a notify: event of the
// protocol table, nil for those it ignores. It receives the table's message.
func (c *Computer) notifyHandler(event string) func(proto.Message) {
	switch event {
	case smcp.NotifyToolCallCancel:
		return func(m proto.Message) {
			if req, ok := m.(*smcpv1.AgentCallData); ok {
				c.CancelToolCall(req.GetAgent(), req.GetReqId())
			}
		}
	case smcp.NotifyLeaveOffice:
		return func(m proto.Message) {
			// An agent's uploads end with it (uploads.Manager.EndAgent).
			if n, ok := m.(*smcpv1.LeaveOfficeNotification); ok && n.Agent != nil && c.uploads != nil {
				c.uploads.EndAgent(n.GetAgent())
			}
		}
	}
	return nil
}

// Conn is the Socket.IO connection of the moment (after a failover, the
// one to the node the link moved to).
func (l *Link) Conn() *sioclient.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn
}

// Close leaves the office (best effort) and disconnects.
func (l *Link) Close() {
	l.cancel()
	l.wg.Wait()
	l.c.SetLink(nil)
	conn := l.Conn()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := conn.LeaveOffice(ctx, l.office); err != nil {
		l.c.log.Debug("leave office", "err", err)
	}
	conn.Close()
}

// Run starts the MCP servers, joins the office and serves until ctx ends;
// then it leaves the office and stops the MCP servers.
func (c *Computer) Run(ctx context.Context, gw Gateway) error {
	defer c.Close()
	if err := c.Start(); err != nil {
		return err
	}
	// Agents that join early see the tools of the servers that are up; the
	// rest arrive with update_tool_list.
	readyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	_ = c.WaitReady(readyCtx)
	cancel()
	c.logRefusedTools()
	l, err := c.Connect(ctx, gw)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while still dialing
		}
		return err
	}
	defer l.Close()
	select {
	case <-ctx.Done():
	case <-l.Done():
		// Refused for good (an incompatible protocol version): retrying
		// would only repeat the refusal.
		return fmt.Errorf("computer: connection to gateway %s over: %w", l.Conn().URL(), l.Err())
	}
	c.log.Info("shutting down")
	return nil
}

// maxLoggedTools bounds the tool names logRefusedTools writes out.
const maxLoggedTools = 50

// RefusedTools lists the tools (listed names) whose calls this computer
// refuses without asking anyone: those without auto_apply, when there is
// no ConfirmAsker (no terminal) and the policy is tools.ConfirmDeny.
func (c *Computer) RefusedTools() []string {
	if c.opts.ConfirmAsker != nil || c.opts.Confirm != tools.ConfirmDeny {
		return nil
	}
	var names []string
	for _, e := range c.catalog.Load().Entries() {
		if !e.Meta.GetAutoApply() {
			names = append(names, e.Name)
		}
	}
	return names
}

// logRefusedTools says once, at start-up, which tools the safe default
// will refuse: otherwise the first sign is an agent's failed call (an
// mcpServers config has no auto_apply at all, so every tool is refused).
func (c *Computer) logRefusedTools() {
	names := c.RefusedTools()
	if len(names) == 0 {
		return
	}
	shown := names
	if len(shown) > maxLoggedTools {
		shown = append(shown[:maxLoggedTools:maxLoggedTools], fmt.Sprintf("... %d more", len(names)-maxLoggedTools))
	}
	c.log.Warn(fmt.Sprintf("%d of %d tools need confirmation and will be refused: there is no terminal to ask and the policy is --confirm=%s; "+
		"to allow them, run with --confirm=%s, or set auto_apply: true in the server's tool_meta.<tool> (default_tool_meta for all its tools)",
		len(names), len(c.catalog.Load().Entries()), tools.ConfirmDeny, tools.ConfirmAuto), "tools", strings.Join(shown, ", "))
}
