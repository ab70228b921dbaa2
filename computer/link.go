package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// Path is the Engine.IO path (default "/socket.io/").
	Path string
	// Office to join.
	Office string
	// APIKey authenticates the computer (sent as the x-api-key header).
	APIKey string
	// Dial overrides the Socket.IO options built from the fields above
	// (URL, Path and APIKey are still filled in when empty).
	Dial sioclient.Options
}

// Link is a computer's live connection to its gateway.
type Link struct {
	c      *Computer
	conn   *sioclient.Client
	office string
}

// Transport names the link's Engine.IO transport now: "polling" from the
// handshake until the upgrade, "websocket" after it.
func (l *Link) Transport() string { return l.conn.Transport() }

// Connect dials the gateway, registers the client: handlers and joins the
// office. The join is repeated by the connection after every reconnect.
// Handlers run in their own goroutines: a slow tool call never blocks the
// connection's event loop.
func (c *Computer) Connect(ctx context.Context, gw Gateway) (*Link, error) {
	if gw.Office == "" {
		return nil, errors.New("computer: an office is required")
	}
	o := gw.Dial
	if o.URL == "" {
		o.URL = gw.URL
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
	conn, err := sioclient.Dial(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("computer: connect to gateway %s: %w", o.URL, err)
	}
	l := &Link{c: c, conn: conn, office: gw.Office}
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
	conn.OnRejoin(func(err error) {
		if err != nil {
			c.log.Error("re-joining the office after a reconnect failed", "office", gw.Office, "err", err)
			return
		}
		// Agents may have missed updates while we were away.
		c.notify(smcp.EventUpdateConfig)
	})
	if err := conn.JoinOffice(ctx, smcp.RoleComputer, c.name, gw.Office); err != nil {
		conn.Close()
		return nil, fmt.Errorf("computer: join office %q as %q: %w", gw.Office, c.name, err)
	}
	c.SetLink(conn)
	c.log.Info("joined office", "gateway", o.URL, "office", gw.Office)
	return l, nil
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
	}
	return nil
}

// Conn is the underlying Socket.IO connection.
func (l *Link) Conn() *sioclient.Client { return l.conn }

// Close leaves the office (best effort) and disconnects.
func (l *Link) Close() {
	l.c.SetLink(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.conn.LeaveOffice(ctx, l.office); err != nil {
		l.c.log.Debug("leave office", "err", err)
	}
	l.conn.Close()
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
	case <-l.conn.Done():
		// Refused for good (an incompatible protocol version): retrying
		// would only repeat the refusal.
		return fmt.Errorf("computer: connection to gateway %s over: %w", gw.URL, l.conn.Err())
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
