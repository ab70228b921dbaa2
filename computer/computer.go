// Package computer is the SMCP Computer runtime: it hosts MCP servers
// (package servers), aggregates their tools (package tools), organizes their
// window:// resources into a Desktop and their dpe:// documents into a
// Finder, and answers the client: events a gateway routes to it.
//
// A computer runs in-process from a configuration:
//
//	cfg, _ := config.Load("mcp.json")
//	c, _ := computer.New(computer.Options{Name: "laptop", Config: cfg, Confirm: tools.ConfirmAuto})
//	err := c.Run(ctx, computer.Gateway{URL: "http://127.0.0.1:8080", Office: "office-1", APIKey: key})
//
// Run starts the MCP servers, joins the office and serves until ctx ends;
// then it leaves and stops the servers. Start/Handle/Close are the same
// pieces without a gateway link (tests, embedding).
//
// # DPE errors from MCP servers
//
// A document MCP server signals the DPE errors of resources/read as a
// JSON-RPC error whose code is the SMCP code itself: 4201 (document not
// found), 4202 (page out of range) or 4203 (element not found); message is
// human-readable and data, when present, is a JSON object passed to the
// agent as the error's details (e.g. {"doc_ref": "x"} or
// {"page_index": 9, "page_count": 3}). The computer answers
// client:read_resource with the flat error {code, message, details}. A
// generic MCP "resource not found" (-32002) for a dpe:// URI is mapped to
// 4201. 4204 (invalid dpe:// URI) is decided by the computer before any
// MCP server is asked.
package computer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/blobs"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/computer/skills"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/computer/uploads"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
)

// Options configure a Computer.
type Options struct {
	// Name of the computer in its office.
	Name   string
	Config *config.Config
	Logger *slog.Logger
	// Confirm is the policy for tools that are not auto_apply when no
	// ConfirmAsker is set: tools.ConfirmAuto or tools.ConfirmDeny (default).
	Confirm string
	// ConfirmAsker asks a person about calls that are not auto_apply
	// (a terminal when interactive).
	ConfirmAsker tools.Asker
	// InputAsker asks a person for input values (a terminal when interactive).
	InputAsker config.Asker
	// LookupEnv supplies A2C_SMCP_<ID> input values (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Restart backoff of crashed MCP servers (defaults 500ms .. 30s).
	BackoffMin, BackoffMax time.Duration
	// KeepAlive pings MCP sessions at this interval (default 15s; <0 off).
	KeepAlive time.Duration
	// HistorySize bounds the tool-call history (default 64).
	HistorySize int
	// OnUpdate, when set, sees every server:update_* event the computer
	// emits (after it is handed to the gateway link, if any).
	OnUpdate func(event string)
	// Protocol is the protocol version the computer speaks: Protocol02
	// (PROTOCOL.md; the default, what the zero value always meant),
	// Protocol03 or Protocol04 (PROTOCOL-0.4.md: tools, configuration,
	// resources and desktop by bundle id), or Protocol05 (the 0.5 draft,
	// PROTOCOL-0.5.md). `smcp computer` defaults to 0.4.
	Protocol string
	// SkillDirs hold the user's skill folders (0.3+), in discovery order.
	SkillDirs []string
	// LandingRoot is where client:put_blob lands files (0.4); "" refuses
	// uploads. Only from trusted settings (flag, environment, embedding):
	// never from an MCP configuration file (PROTOCOL-0.4.md §7 C7).
	LandingRoot string
	// LandingQuotaBytes and LandingQuotaFiles bound what the landing root
	// holds (uploads.Options.QuotaBytes, QuotaFiles); 0: no bound.
	LandingQuotaBytes int64
	LandingQuotaFiles int
	// MaxBlobBytes is the largest blob the computer serves (a skill file, a
	// tool result's binary items) or takes (an upload); 0: 100 MiB.
	MaxBlobBytes int64
	// AuthStore holds the OAuth tokens of the MCP servers that need a
	// sign-in (computer/upstreamauth); nil: no OAuth, a server's 401 is
	// answered 4006 as it comes.
	AuthStore *upstreamauth.Store
	// SignInRedirect and OnSignIn, with AuthStore, let a host drive the
	// sign-in of a headless computer: an HTTP server that refuses its
	// initialize with a Bearer 401 gets a sign-in whose authorization
	// response goes to SignInRedirect (a callback the host receives);
	// OnSignIn gets the URL to show to operators (never to agents), and the
	// host hands the response back with CompleteSignIn. Without OnSignIn,
	// the host is the gateway the computer is linked to: the request goes
	// to it as server:auth_required (again after every join, while it
	// waits), and its client:auth_callback finishes the sign-in
	// (docs/UPSTREAM.md); SignInRedirect is then the gateway's
	// /oauth/callback/{office}/{computer} (GatewaySignInRedirect).
	SignInRedirect string
	OnSignIn       func(SignInRequest)
}

// Computer is one SMCP computer.
type Computer struct {
	opts Options
	name string
	// signInViaLink: the gateway of the link is the host of sign-ins
	// (Options.OnSignIn unset).
	signInViaLink bool
	log           *slog.Logger
	// protocol is Options.Protocol; bundled is true from 0.3 (bundle ids).
	protocol string
	bundled  bool
	diagMu   sync.Mutex
	diags    []string

	servers *servers.Manager
	exec    *tools.Executor
	// handlers serve the client: events, by event name (protocol table).
	handlers map[string]handler
	toolsMu  sync.Mutex // rebuildTools
	catalog  atomic.Pointer[tools.Catalog]

	cfgMu sync.Mutex
	cfg   *config.Config

	resMu   sync.Mutex // change detection: see resourcesChanged
	desktop *desktopState
	finder  *finderState
	hosts   atomic.Pointer[hostIndex]

	linkMu sync.Mutex
	link   Emitter

	reloadMu     sync.Mutex // one ApplyConfigContext at a time
	holdMu       sync.Mutex
	holding      int  // reloads in progress: update_tool_list waits
	heldToolList bool // an update_tool_list waits for the end of a reload

	// 0.3/0.4: nil in lower profiles.
	skills  *skills.Registry
	blobs   *blobs.Service
	uploads *uploads.Manager

	signIns *signIns

	closeOnce sync.Once
}

// Emitter sends a fire-and-forget event to the gateway.
type Emitter interface {
	Emit(event string, payload any) error
}

// New makes a computer. Its MCP servers start with Start (or Run).
func New(opts Options) (*Computer, error) {
	if opts.Name == "" {
		return nil, errors.New("computer: a name is required")
	}
	if opts.Config == nil {
		opts.Config = &config.Config{Servers: map[string]*config.Server{}}
	}
	switch opts.Confirm {
	case "":
		opts.Confirm = tools.ConfirmDeny
	case tools.ConfirmAuto, tools.ConfirmDeny:
	default:
		return nil, fmt.Errorf("computer: confirm policy %q (want %q or %q)", opts.Confirm, tools.ConfirmAuto, tools.ConfirmDeny)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.Protocol == "" {
		opts.Protocol = Protocol02
	}
	if _, ok := A2CVersion(opts.Protocol); !ok {
		return nil, fmt.Errorf("computer: protocol %q (want %s, %s, %s or %s)", opts.Protocol, Protocol02, Protocol03, Protocol04, Protocol05)
	}
	if err := opts.Config.CheckProtocol(opts.Protocol); err != nil {
		return nil, fmt.Errorf("computer: %w", err)
	}
	log := opts.Logger.With("computer", opts.Name)
	c := &Computer{opts: opts, name: opts.Name, log: log, cfg: opts.Config,
		protocol: opts.Protocol, bundled: opts.Protocol != Protocol02}
	var err error
	if c.handlers, err = c.newHandlers(); err != nil {
		return nil, err
	}
	if c.bundled {
		c.catalog.Store(tools.BuildBundled(nil, nil))
	} else {
		c.catalog.Store(tools.Build(nil, nil))
	}
	c.signIns = newSignIns()
	if c.opts.SignInRedirect != "" && c.opts.OnSignIn == nil {
		c.opts.OnSignIn, c.signInViaLink = c.reportSignIn, true
	}
	c.desktop = newDesktopState()
	c.finder = newFinderState()
	c.servers = servers.New(servers.Options{
		Logger:     log,
		Resolver:   config.NewResolver(opts.Config.Inputs, opts.LookupEnv, opts.InputAsker),
		Listener:   c.onServerEvent,
		BackoffMin: opts.BackoffMin,
		BackoffMax: opts.BackoffMax,
		KeepAlive:  max(opts.KeepAlive, 0),
		AuthStore:  opts.AuthStore,
	})
	c.exec = tools.NewExecutor(tools.ExecOptions{
		Caller:      c.servers,
		Catalog:     c.catalog.Load,
		Asker:       opts.ConfirmAsker,
		Policy:      opts.Confirm,
		HistorySize: opts.HistorySize,
		Logger:      log,
		Unlisted:    c.awaitingSignIn,
	})
	if err := c.startLater(); err != nil {
		return nil, err
	}
	return c, nil
}

// awaitingSignIn finds the server a bundled tool name is meant for when
// that server cannot connect for want of authorization.
func (c *Computer) awaitingSignIn(name string) (string, string, tools.AuthFailure) {
	bundle, _, ok := strings.Cut(name, "__")
	if !ok || bundle == "" {
		return "", "", nil
	}
	for _, s := range c.servers.Snapshots() {
		if s.BundleID != bundle {
			continue
		}
		if ae := c.servers.AuthPending(s.Name); ae != nil {
			return s.Name, s.BundleID, ae
		}
	}
	return "", "", nil
}

// Name returns the computer's name.
func (c *Computer) Name() string { return c.name }

// Servers returns the MCP server manager (states, snapshots).
func (c *Computer) Servers() *servers.Manager { return c.servers }

// Start starts every configured MCP server in the background, in parallel.
// It does not wait for them: see WaitReady.
func (c *Computer) Start() error {
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	for _, n := range c.serving(c.cfg) {
		if err := c.servers.Set(c.cfg.Servers[n]); err != nil {
			return err
		}
	}
	return nil
}

// WaitReady waits until every enabled server has connected or failed once,
// or ctx ends.
func (c *Computer) WaitReady(ctx context.Context) error {
	for {
		pending := 0
		for _, s := range c.servers.Snapshots() {
			if s.State == servers.StateStarting && s.Restarts == 0 {
				pending++
			}
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("computer: %d MCP servers still starting: %w", pending, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops the MCP servers.
func (c *Computer) Close() {
	c.closeOnce.Do(func() {
		c.signIns.close()
		c.servers.Close()
		c.closeLater()
		c.log.Info("computer stopped")
	})
}

// SetLink sets where update events go (nil: nowhere).
func (c *Computer) SetLink(e Emitter) {
	c.linkMu.Lock()
	c.link = e
	c.linkMu.Unlock()
}

// notify emits server:update_* {computer}.
func (c *Computer) notify(event string) {
	c.linkMu.Lock()
	link := c.link
	c.linkMu.Unlock()
	if link != nil {
		if err := link.Emit(event, map[string]any{"computer": c.name}); err != nil {
			c.log.Warn("emit update", "event", event, "err", err)
		}
	}
	c.log.Debug("update emitted", "event", event)
	if c.opts.OnUpdate != nil {
		c.opts.OnUpdate(event)
	}
}

// rebuildTools recomputes the catalog and reports whether the listed tools
// changed. Servers report concurrently: reading the snapshots and swapping
// the catalog is one critical section, so an older view never wins.
func (c *Computer) rebuildTools() bool {
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	var st []tools.ServerTools
	for _, s := range c.servers.Snapshots() {
		st = append(st, tools.ServerTools{Server: s.Name, BundleID: s.BundleID, Config: s.Config, Tools: s.Tools})
	}
	var next *tools.Catalog
	if c.bundled {
		next = tools.BuildBundled(st, c.log)
	} else {
		next = tools.Build(st, c.log)
	}
	prev := c.catalog.Swap(next)
	return !sameTools(prev, next)
}

func sameTools(a, b *tools.Catalog) bool {
	ea, eb := a.Entries(), b.Entries()
	if len(ea) != len(eb) {
		return false
	}
	for i := range ea {
		if ea[i].Name != eb[i].Name || ea[i].Server != eb[i].Server || ea[i].Tool != eb[i].Tool {
			return false
		}
	}
	return true
}

// onServerEvent turns MCP server events into catalog, Desktop and Finder
// updates, and those into server:update_* events (PROTOCOL.md §6).
func (c *Computer) onServerEvent(ev servers.Event) {
	c.log.Debug("mcp server event", "server", ev.Server, "event", ev.Kind.String(), "uri", ev.URI)
	switch ev.Kind {
	case servers.ToolsChanged:
		c.rebuildTools()
		c.notifyToolList()
	case servers.Connected, servers.Disconnected, servers.Removed:
		if c.rebuildTools() {
			c.notifyToolList()
		}
		c.resourcesChanged(ev.Server, ev.Kind)
		c.syncSkills(ev.Server, ev.Kind, "")
	case servers.ResourcesChanged:
		c.resourcesChanged(ev.Server, ev.Kind)
		c.syncSkills(ev.Server, ev.Kind, "")
	case servers.ResourceUpdated:
		c.resourceUpdated(ev.Server, ev.URI)
		c.syncSkills(ev.Server, ev.Kind, ev.URI)
	case servers.AuthRequired:
		c.authRequired(ev)
	}
}
