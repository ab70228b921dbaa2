// Package hosted runs computers inside the gateway process: each is a
// computer.Computer attached to the core as a session of its own
// (core.Hub.AttachHosted), with no Socket.IO connection in between. The
// core's requests go straight to the computer's client: handlers, and the
// computer's server:update_* events straight to its session, so agents on
// every front end see a hosted computer as they see any other.
//
// In a cluster every node runs the same configuration: each node tries to
// join every hosted computer's office, and the registry lets one of them
// hold the name. The others keep claiming it; a claim waits out the
// holder's heartbeat, so when the holder's node dies another node takes the
// computer over within the heartbeat TTL, and the rest reach it as they
// reach any computer of another node. A node only starts a computer's MCP
// servers once it holds it.
package hosted

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Spec is one computer the gateway hosts (an entry of the gateway YAML's
// computers:).
type Spec struct {
	// Name of the computer in its office.
	Name string `yaml:"name"`
	// Office it joins.
	Office string `yaml:"office"`
	// Config is the path of its MCP configuration, the file `smcp computer
	// --config` reads (mcpServers or servers shape, tool metadata).
	Config string `yaml:"config"`
	// Skills are folders of skill folders (0.3+).
	Skills []string `yaml:"skills"`
	// Protocol is the profile it speaks: 0.2, 0.3 or 0.4 (default 0.4).
	Protocol string `yaml:"protocol"`
	// Confirm decides the tools that are not auto_apply, as `smcp computer
	// --confirm` does with no terminal: deny (default) or auto.
	Confirm string `yaml:"confirm"`
	// LandingRoot is where agents' uploads (client:put_blob, 0.4) land, as
	// `smcp computer --landing-root`; empty refuses uploads.
	LandingRoot string `yaml:"landing_root"`
	// AuthStore and AuthStoreKeyFile are the OAuth token store of its HTTP
	// servers that need a sign-in, as `smcp computer --auth-store` and
	// --auth-store-key-file (the key else from $SMCP_AUTH_STORE_KEY; no
	// key: no OAuth). `smcp computer auth login` with the same store signs
	// it in (docs/UPSTREAM.md).
	AuthStore        string `yaml:"auth_store"`
	AuthStoreKeyFile string `yaml:"auth_store_key_file"`
}

// Retry pacing of a claim the registry refused (the name held by another
// node or by an external computer). A claim against a live node of a
// cluster already waits half a heartbeat TTL before it is refused, so the
// cap is short: a takeover is bounded by the TTL, not by this pause.
const (
	claimRetryMin = 200 * time.Millisecond
	claimRetryMax = time.Second
)

// Set is the hosted computers of one gateway.
type Set struct {
	hub   *core.Hub
	log   *slog.Logger
	hosts []*host
	// signInBase is the gateway's URL as browsers reach it: the sign-ins
	// of the computers' MCP servers come back to its /oauth/callback/...
	// ("": the computers sign in only with `smcp computer auth login`).
	signInBase string
}

// Option sets up a Set.
type Option func(*Set)

// WithSignInVia makes the gateway at publicURL (its URL as operators'
// browsers reach it) the host of its computers' sign-ins to their MCP
// servers: each sign-in is reported to the core for operators to follow,
// and the callback at publicURL/oauth/callback/{office}/{computer}
// finishes it (docs/UPSTREAM.md).
func WithSignInVia(publicURL string) Option { return func(s *Set) { s.signInBase = publicURL } }

// host is one hosted computer.
type host struct {
	spec Spec
	pc   *computer.Computer
	log  *slog.Logger
	hub  *core.Hub
	// principal is what the computer's session acts as: that computer in
	// that office, nothing else.
	principal *core.Principal
	proto     core.Protocol

	// mu orders reloads with the start of the MCP servers: until this
	// node holds the computer (hosting), a reloaded configuration waits in
	// next, so that a node that does not host it never starts its servers.
	mu      sync.Mutex
	hosting bool
	next    *config.Config
	// sess is the computer's session while it is in its office.
	sess *core.Session
}

// reportSignIn is the computer's OnSignIn: the sign-in goes to the core,
// where operators see it. Its MCP servers run only while the computer is
// in its office, so a session is there to report it.
func (h *host) reportSignIn(r computer.SignInRequest) {
	h.mu.Lock()
	sess := h.sess
	h.mu.Unlock()
	if sess == nil {
		return
	}
	if err := sess.ReportSignIn(core.SignIn{Server: r.Server, BundleID: r.BundleID, URL: r.URL, State: r.State, Expires: r.Expires}); err != nil {
		h.log.Warn("upstream auth: the sign-in not reported", "server", r.Server, "err", err)
	}
}

// New makes the computers of specs; their configurations are read and
// checked now, so that a mistake stops the gateway at start. Their MCP
// servers start in Run.
func New(hub *core.Hub, specs []Spec, log *slog.Logger, opts ...Option) (*Set, error) {
	s := &Set{hub: hub, log: log}
	for _, o := range opts {
		o(s)
	}
	if err := s.add(specs); err != nil {
		for _, h := range s.hosts {
			h.pc.Close() // its skill folders' watch
		}
		return nil, err
	}
	return s, nil
}

func (s *Set) add(specs []Spec) error {
	hub, log := s.hub, s.log
	seen := map[[2]string]bool{}
	for i, sp := range specs {
		if sp.Name == "" || sp.Office == "" || sp.Config == "" {
			return fmt.Errorf("hosted computer %d: name, office and config are required", i+1)
		}
		if seen[[2]string{sp.Office, sp.Name}] {
			return fmt.Errorf("hosted computer %q: named twice in office %q", sp.Name, sp.Office)
		}
		seen[[2]string{sp.Office, sp.Name}] = true
		if sp.Protocol == "" {
			sp.Protocol = computer.Protocol04
		}
		a2c, ok := computer.A2CVersion(sp.Protocol)
		if !ok {
			return fmt.Errorf("hosted computer %q: protocol %q (want 0.2, 0.3 or 0.4)", sp.Name, sp.Protocol)
		}
		v, err := smcp.ParseProfile(sp.Protocol)
		if err != nil {
			return fmt.Errorf("hosted computer %q: %w", sp.Name, err)
		}
		cfg, err := config.Load(sp.Config)
		if err != nil {
			return fmt.Errorf("hosted computer %q: %w", sp.Name, err)
		}
		hl := log.With("hosted", sp.Name, "office", sp.Office)
		store, err := upstreamauth.Open(sp.AuthStore, sp.AuthStoreKeyFile, sp.AuthStoreKeyFile != "")
		if err != nil {
			return fmt.Errorf("hosted computer %q: %w", sp.Name, err)
		}
		h := &host{}
		copts := computer.Options{Name: sp.Name, Config: cfg, Logger: hl, Confirm: sp.Confirm,
			Protocol: sp.Protocol, SkillDirs: sp.Skills, LandingRoot: sp.LandingRoot, AuthStore: store}
		if s.signInBase != "" && store != nil {
			copts.SignInRedirect = computer.GatewaySignInRedirect(s.signInBase, sp.Office, sp.Name)
			copts.OnSignIn = h.reportSignIn
		}
		pc, err := computer.New(copts)
		if err != nil {
			return fmt.Errorf("hosted computer %q: %w", sp.Name, err)
		}
		*h = host{spec: sp, pc: pc, log: hl, hub: hub,
			principal: &core.Principal{ID: "hosted:" + sp.Name, Roles: []string{smcp.RoleComputer},
				Offices: []string{sp.Office}, Name: sp.Name},
			proto: core.Protocol{Version: v, Announced: a2c}}
		s.hosts = append(s.hosts, h)
	}
	return nil
}

// Len is how many computers the set hosts.
func (s *Set) Len() int { return len(s.hosts) }

// Run serves every computer until ctx ends, then takes each out of its
// office and stops its MCP servers; it returns when all have stopped.
func (s *Set) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, h := range s.hosts {
		wg.Go(func() { h.run(ctx) })
	}
	wg.Wait()
}

// Reload reads every computer's configuration file again and applies the
// differences (servers added, changed, removed), as SIGHUP does for `smcp
// computer`. A file that does not load leaves its computer as it was; the
// errors are joined.
func (s *Set) Reload() error {
	var errs []error
	for _, h := range s.hosts {
		if err := h.reload(); err != nil {
			errs = append(errs, fmt.Errorf("hosted computer %q: reload: %w", h.spec.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (h *host) reload() error {
	next, err := config.Load(h.spec.Config)
	if err != nil {
		return err
	}
	if err := next.CheckProtocol(h.spec.Protocol); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.hosting {
		h.next = next
		h.log.Info("configuration reloaded; applied when this node hosts the computer", "servers", len(next.Servers))
		return nil
	}
	if err := h.pc.ApplyConfig(next); err != nil {
		return err
	}
	h.log.Info("configuration reloaded", "servers", len(next.Servers))
	return nil
}

// start starts the MCP servers of the configuration in force: the one
// read at start, moved to the last reload's if any (servers the reload
// removed start and stop at once: ApplyConfig moves a running computer).
func (h *host) start(sess *core.Session) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hosting, h.sess = true, sess
	if err := h.pc.Start(); err != nil {
		return err
	}
	if h.next != nil {
		next := h.next
		h.next = nil
		if err := h.pc.ApplyConfig(next); err != nil {
			// What could start serves, as after a reload while hosting.
			h.log.Error("hosted computer: the reloaded configuration applied in part", "err", err)
		}
	}
	return nil
}

// Computer is the hosted computer named name in office, or nil.
func (s *Set) Computer(office, name string) *computer.Computer {
	for _, h := range s.hosts {
		if h.spec.Office == office && h.spec.Name == name {
			return h.pc
		}
	}
	return nil
}

func (h *host) run(ctx context.Context) {
	defer h.pc.Close()
	c := newConn(h.pc)
	sess, err := h.hub.AttachHosted(newSID(), h.principal, c, h.proto)
	if err != nil {
		h.log.Error("hosted computer not attached", "err", err)
		return
	}
	// The session leaves its office first (the office is told, pending
	// requests fail), then the handlers still running end.
	defer c.close()
	defer sess.Close()
	if !h.claim(ctx, sess) {
		return
	}
	h.pc.SetLink(updates{sess})
	defer h.pc.SetLink(nil)
	if err := h.start(sess); err != nil {
		h.log.Error("hosted computer: MCP servers not started", "err", err)
		return
	}
	h.log.Info("hosted computer joined its office", "servers", len(h.pc.Servers().Snapshots()))
	<-ctx.Done()
}

// claim joins the office, again and again while the registry refuses the
// name (held by another node, or an external computer), until ctx ends.
func (h *host) claim(ctx context.Context, sess *core.Session) bool {
	req := &smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: h.spec.Name, OfficeId: h.spec.Office}
	delay := claimRetryMin
	for refusals := 0; ; refusals++ {
		err := sess.JoinContext(ctx, req)
		if err == nil {
			if refusals > 0 {
				h.log.Info("hosted computer taken over", "after_refusals", refusals)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		// One line when the name is first found held; the retries, which
		// last as long as its holder does, at debug level.
		lvl := slog.LevelDebug
		if refusals == 0 {
			lvl = slog.LevelInfo
		}
		h.log.Log(ctx, lvl, "hosted computer held elsewhere: waiting to take it over", "err", err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, claimRetryMax)
	}
}

// updates hands the computer's server:update_* events to its session, as
// the Socket.IO front end does with those of an external computer.
type updates struct{ sess *core.Session }

func (u updates) Emit(event string, _ any) error {
	if err := u.sess.Update(event); err != nil {
		return fmt.Errorf("hosted: %s: %w", event, err)
	}
	return nil
}

// conn is the core.Conn of a hosted computer: a request is served by the
// computer's handler on a goroutine of its own (a tool call may take its
// whole timeout), owned by conn and awaited by close.
type conn struct {
	pc *computer.Computer

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context // ends at close: handlers still running stop
	cancel context.CancelFunc
}

func newConn(pc *computer.Computer) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{pc: pc, ctx: ctx, cancel: cancel}
}

// Notify passes on the one notification a computer acts on: a tool call's
// cancellation. It runs under the hub's lock: CancelToolCall only signals
// the call's context.
func (c *conn) Notify(n core.Notification) {
	if n.Event != smcp.NotifyToolCallCancel {
		return
	}
	if m, ok := n.Payload.(*smcpv1.AgentCallData); ok {
		c.pc.CancelToolCall(m.GetAgent(), m.GetReqId())
	}
}

func (c *conn) Request(event string, payload json.RawMessage, done func(json.RawMessage, error)) (forget func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// Only after the session closed, when the core has forgotten the
		// request already (core.Conn allows done never to be called).
		return nil
	}
	ctx, cancel := context.WithCancel(c.ctx)
	c.wg.Go(func() {
		defer cancel()
		ans := c.pc.Handle(ctx, event, payload)
		if ctx.Err() != nil {
			return // forgotten, or the computer is stopping: nobody awaits it
		}
		b, err := encode(ans)
		if err != nil {
			done(nil, &core.BadAnswerError{Reason: err.Error()})
			return
		}
		done(b, nil)
	})
	return cancel
}

// close stops the handlers still running and waits for them.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// encode is the answer's JSON as an external computer's connection sends
// it: a protocol message in its wire form, anything else through
// encoding/json.
func encode(v any) (json.RawMessage, error) {
	if m, ok := v.(proto.Message); ok {
		b, err := smcp.ToWire(m)
		if err != nil {
			return nil, fmt.Errorf("encode answer: %w", err)
		}
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	return b, nil
}

// newSID names a hosted computer's session: unique among the node's
// sessions and, in a cluster, among every node's.
func newSID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "hosted-" + hex.EncodeToString(b)
}
