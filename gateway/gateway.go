// Package gateway assembles an SMCP gateway: one core.Hub, the Socket.IO front
// end, the Connect / gRPC / gRPC-Web API (gateway/rpc), every office as an MCP
// server at /mcp/{office_id} (gateway/mcpfront), the web console at /console/,
// /healthz (liveness), /readyz (readiness) and, when enabled, /metrics
// (Prometheus) on one http.ServeMux, served with graceful shutdown.
package gateway

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/console"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/metrics"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// maxHeaderBytes bounds a request's headers (HTTP/1 and HTTP/2).
const maxHeaderBytes = 64 << 10

// Defaults of Config.
const (
	// DefaultShutdownGrace is how long in-flight calls may finish on shutdown.
	DefaultShutdownGrace = 10 * time.Second
	// DefaultReadHeaderTimeout bounds the reading of a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes keep-alive connections without a request.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultBodyReadTimeout bounds the reading of a request's body (a
	// Socket.IO polling POST, a unary call's message; never a stream's
	// answer or a long-poll). An upload stream's body (PutBlob) may take
	// longer, as long as it is never silent for this long.
	DefaultBodyReadTimeout = 30 * time.Second
)

// Config of a gateway.
type Config struct {
	// Auth authenticates every caller; required (core.AllowAll{} for an
	// insecure gateway).
	Auth core.Authenticator
	Core core.Config
	SIO  sio.Config
	// RPC configures the typed API; its key header defaults to SIO's.
	RPC rpc.Options
	// MCP configures the MCP endpoint /mcp/{office_id}; its key header,
	// default agent and per-session rate default to the RPC's and SIO's.
	MCP mcpfront.Options
	// ShutdownGrace bounds how long Serve waits for in-flight calls.
	ShutdownGrace time.Duration
	// ReadHeaderTimeout, IdleTimeout and BodyReadTimeout bound the HTTP
	// exchange where a silent client would otherwise hold a connection (see
	// the Default constants).
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	BodyReadTimeout   time.Duration
	// TLS, when set, makes Serve speak HTTPS.
	TLS *tls.Config
	// Metrics serves Prometheus metrics at /metrics: on the gateway's port
	// to operator keys only (core.Principal.Operator; the metrics name
	// offices and keys), and, when MetricsListener is set, on that listener
	// to anyone who reaches it (a scraper on a private network).
	Metrics bool
	// MetricsListener, with Metrics, serves /metrics there without
	// authentication (--metrics-listen); Serve closes it.
	MetricsListener net.Listener
	// TracerProvider, when set, traces every RPC (otelconnect), every
	// routed Socket.IO client: event and every MCP request.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	// Redis, when set (redis://host:port/db, a Sentinel URL, or a Redis
	// Cluster's seeds with RedisCluster: see cluster.NewClient), makes this
	// gateway one node of
	// a cluster: the office registry, node heartbeats, and the calls and
	// notifications between nodes in Redis (gateway/cluster). Empty: one
	// node, no Redis.
	Redis string
	// RedisCluster reads Redis as a Redis Cluster's seed addresses
	// (--redis-cluster).
	RedisCluster bool
	// NodeID names the node in the cluster; random when empty.
	NodeID string
	// HeartbeatTTL is how long a silent node is deemed alive.
	HeartbeatTTL time.Duration
	// AdvertiseURL is where the other nodes of the cluster reach this
	// node's HTTP port (http://10.0.0.5:8080; a bare host:port takes the
	// scheme TLS gives), published in Redis with the heartbeat: MCP
	// sessions are served by the node that made them, and the others
	// forward their requests there. Empty: the listener's address, unless
	// it listens on every interface (0.0.0.0, ::), where the host's one
	// private IPv4 address is taken (see advertiseURL).
	AdvertiseURL string
	// RedisRegistry bounds the calls of the Redis office registry (zero:
	// its defaults).
	RedisRegistry cluster.RegistryOptions
	// NoConsole turns off the web console at /console/ (gateway/console).
	NoConsole bool
	// AllowedHosts are the host names a loopback listener answers besides
	// loopback ones, on every front end (httpauth.Rebound: against DNS
	// rebinding, a request to 127.0.0.1 under another name gets 403).
	AllowedHosts []string
	// MaxUnauthenticatedPerAddr bounds, per client address, the HTTP
	// connections that have not carried an authenticated request yet (more
	// are closed when accepted) and, on its own count, the Socket.IO
	// sessions that have not authenticated yet; negative: no limit.
	// AuthTimeout bounds how long either may stay so: a Socket.IO session
	// is closed, an HTTP connection's reads (the idle wait, headers,
	// bodies) get at most this. Zero: sio.DefaultMaxUnauthenticatedPerAddr
	// and sio.DefaultAuthTimeout, unless SIO sets its own.
	MaxUnauthenticatedPerAddr int
	AuthTimeout               time.Duration
	// Quotas bound calls per principal and tool (gateway/quota), shared
	// through Redis in a cluster; nil: none. SetQuotas replaces them.
	Quotas *quota.Table
	// Audit records every routed request (gateway/audit); Serve writes
	// what is queued before it returns.
	Audit AuditConfig
	// MetricsPerTool, with Metrics, counts tool calls, errors and latency
	// per office and tool, for at most this many offices and tools each
	// (the rest are "other"); 0: off.
	MetricsPerTool int
	// Computers are run by the gateway itself (gateway/hosted): each joins
	// its office in process once Serve starts, and leaves it when Serve
	// has drained the calls. In a cluster, one node at a time hosts each.
	Computers []hosted.Spec
}

// Gateway is an assembled gateway, not yet serving.
type Gateway struct {
	Hub *core.Hub
	SIO *sio.Server
	RPC *rpc.Server
	MCP *mcpfront.Server
	// Metrics is nil unless Config.Metrics.
	Metrics  *metrics.Metrics
	mux      *http.ServeMux
	serving  atomic.Bool
	draining atomic.Bool
	mu       sync.Mutex
	drainers []Drainer
	cfg      Config
	log      *slog.Logger
	// gov is the Guard of quotas, audit and per-tool metrics (nil: none);
	// auditLog its audit log, closed by Serve.
	gov      *governance
	auditLog *audit.Logger
	// Cluster only.
	rdb   goredis.UniversalClient
	node  *cluster.Node
	peers *cluster.Peers
	// ops answers the console's operator views.
	ops *operatorViews
	// hosted are the computers of Config.Computers.
	hosted *hosted.Set
}

// New assembles a gateway.
func New(cfg Config) (*Gateway, error) {
	if cfg.Auth == nil {
		return nil, errors.New("gateway: an authenticator is required (core.AllowAll{} for --insecure)")
	}
	if cfg.MetricsListener != nil && !cfg.Metrics {
		return nil, errors.New("gateway: a metrics listener needs metrics on (--metrics-listen without --metrics=false)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MaxUnauthenticatedPerAddr == 0 {
		cfg.MaxUnauthenticatedPerAddr = sio.DefaultMaxUnauthenticatedPerAddr
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = sio.DefaultAuthTimeout
	}
	if cfg.SIO.MaxUnauthenticatedPerAddr == 0 {
		cfg.SIO.MaxUnauthenticatedPerAddr = cfg.MaxUnauthenticatedPerAddr
	}
	if cfg.SIO.AuthTimeout <= 0 {
		cfg.SIO.AuthTimeout = cfg.AuthTimeout
	}
	// One list of browser origins: those the Connect API answers with CORS
	// may open Socket.IO connections too.
	if cfg.SIO.AllowedOrigins == nil {
		cfg.SIO.AllowedOrigins = cfg.RPC.CORSOrigins
	}
	// One rule of host names for every front end.
	if cfg.SIO.AllowedHosts == nil {
		cfg.SIO.AllowedHosts = cfg.AllowedHosts
	}
	if cfg.RPC.AllowedHosts == nil {
		cfg.RPC.AllowedHosts = cfg.AllowedHosts
	}
	if cfg.MCP.AllowedHosts == nil {
		cfg.MCP.AllowedHosts = cfg.AllowedHosts
	}
	// Every front end authenticates through it, so that a connection that
	// carried an authenticated request leaves the bounds of unauthConns.
	authLog := &authAudit{}
	cfg.Auth = markingAuth{Authenticator: cfg.Auth, audit: authLog}
	if cfg.Core.Logger == nil {
		cfg.Core.Logger = cfg.Logger.With("component", "core")
	}
	if cfg.SIO.Logger == nil {
		cfg.SIO.Logger = cfg.Logger.With("component", "sio")
	}
	var rdb goredis.UniversalClient
	var reg *cluster.Registry
	if cfg.Redis != "" {
		var err error
		if rdb, err = connectRedis(cfg.Redis, cfg.RedisCluster); err != nil {
			return nil, err
		}
		if cfg.NodeID == "" {
			cfg.NodeID = rand.Text()[:12]
		}
		reg = cluster.NewRegistry(rdb, cfg.RedisRegistry)
		cfg.Core.Registry = reg
		cfg.Core.Node = cfg.NodeID
	}
	gov := governanceOf(cfg, rdb)
	if gov != nil {
		cfg.Core.Guard = gov
		if len(cfg.Audit.Sinks) > 0 {
			cfg.Core.Events = gov.event
		}
	}
	hub := core.New(cfg.Core)
	var node *cluster.Node
	if rdb != nil {
		node = cluster.NewNode(rdb, reg, hub, cfg.HeartbeatTTL, cfg.Logger.With("component", "cluster"))
	}
	var m *metrics.Metrics
	if cfg.Metrics {
		m = metrics.New(hub)
		cfg.SIO.Metrics = m
		cfg.RPC.HandlerOptions = append(cfg.RPC.HandlerOptions, connect.WithInterceptors(m.Interceptor()))
	}
	if cfg.TracerProvider != nil {
		cfg.SIO.Tracer = cfg.TracerProvider.Tracer(tracerName)
		if cfg.MCP.Tracer == nil {
			cfg.MCP.Tracer = cfg.TracerProvider.Tracer(mcpfront.TracerName)
		}
		otel, err := otelconnect.NewInterceptor(otelconnect.WithTracerProvider(cfg.TracerProvider),
			otelconnect.WithoutMetrics())
		if err != nil {
			if rdb != nil {
				_ = rdb.Close()
			}
			return nil, fmt.Errorf("gateway: tracing: %w", err)
		}
		cfg.RPC.HandlerOptions = append(cfg.RPC.HandlerOptions, connect.WithInterceptors(otel))
	}
	s := sio.New(hub, cfg.Auth, cfg.SIO)
	var peers *cluster.Peers
	if rdb != nil {
		// Calls and notifications cross nodes through gateway/cluster.
		peers = cluster.NewPeers(rdb, hub, node.Health(), cfg.Logger.With("component", "cluster"))
		hub.SetPeers(peers)
	}
	g := &Gateway{Hub: hub, SIO: s, Metrics: m, mux: http.NewServeMux(), cfg: cfg, log: cfg.Logger, rdb: rdb, node: node, peers: peers,
		gov: gov}
	if rdb != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if cfg.AdvertiseURL != "" {
			u, err := normalizeAdvertise(cfg.AdvertiseURL, cfg.TLS != nil)
			if err != nil {
				s.Close()
				_ = rdb.Close()
				return nil, err
			}
			node.SetURL(u)
		}
		if err := g.node.Start(ctx); err != nil {
			s.Close()
			_ = rdb.Close()
			return nil, err
		}
	}
	g.mux.Handle(s.Path(), s.Handler())
	if cfg.RPC.MaxRequestBytes == 0 {
		cfg.RPC.MaxRequestBytes = cfg.SIO.MaxMessageBytes // one request limit for both front ends
	}
	if cfg.RPC.APIKeyHeader == "" {
		cfg.RPC.APIKeyHeader = cfg.SIO.APIKeyHeader
	}
	if cfg.RPC.EventsPerSecond == 0 { // ReadBlob's chunk requests count as Socket.IO events do
		cfg.RPC.EventsPerSecond, cfg.RPC.EventBurst = cfg.SIO.EventsPerSecond, cfg.SIO.EventBurst
	}
	if cfg.RPC.Logger == nil {
		cfg.RPC.Logger = cfg.Logger.With("component", "rpc")
	}
	g.ops = newOperatorViews(g, cfg)
	cfg.RPC.Operator = g.ops
	if rdb != nil {
		cfg.RPC.OfficesElsewhere = g.ops.officesElsewhere
	}
	g.RPC = rpc.New(hub, cfg.Auth, cfg.RPC)
	g.RPC.Mount(g.mux)
	mopts := mcpOptions(cfg)
	if node != nil {
		mopts.Peers = node
	}
	g.MCP = mcpfront.New(hub, cfg.Auth, mopts)
	g.MCP.Mount(g.mux)
	if peers != nil {
		// A node reaped here: the calls to it are answered, and the MCP
		// sessions it held are not looked for there any more.
		node.OnNodeGone(func(id string) {
			peers.NodeGone(id)
			g.MCP.NodeGone(id)
		})
	}
	// MCP tools/call and resources/read in flight are answered before the
	// computers that serve them are disconnected.
	g.AddDrainer(g.MCP)
	// Liveness: the process answers HTTP. Readiness: it serves and is not
	// draining, so a load balancer stops sending new clients at shutdown.
	g.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok")
	})
	g.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case g.draining.Load() || s.Draining():
			plain(w, http.StatusServiceUnavailable, "draining")
		case !g.serving.Load():
			plain(w, http.StatusServiceUnavailable, "not serving")
		default:
			plain(w, http.StatusOK, "ready")
		}
	})
	g.mux.HandleFunc(signInCallbackPath, g.signInCallback)
	if !cfg.NoConsole {
		// Public files only: every call the page makes goes through the
		// Connect API with the key the user types in.
		g.mux.Handle("GET "+console.Path, console.Handler(console.Options{APIKeyHeader: cfg.RPC.APIKeyHeader, AllowedHosts: cfg.AllowedHosts}))
		g.mux.Handle("GET /{$}", http.RedirectHandler(console.Path, http.StatusFound))
	}
	if m != nil {
		m.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "smcp_mcp_sessions",
			Help: "Open MCP sessions at /mcp/{office_id}, each an agent of its office.",
		}, func() float64 { return float64(g.MCP.Sessions()) }))
		g.mux.Handle("GET /metrics", operatorsOnly(cfg.Auth, cfg.RPC.APIKeyHeader, cfg.AllowedHosts, m.Handler()))
	}
	// Last: nothing after it fails, and Serve closes it.
	g.ops.keepRecent(&cfg)
	al, err := startAudit(cfg, gov)
	if err != nil {
		return nil, err
	}
	g.auditLog = al
	authLog.log, authLog.node = al, cfg.NodeID
	if m != nil && gov != nil {
		m.Registry().MustRegister(gov.collectors()...)
	}
	// Last: the computers' skill folders are watched from here on, and
	// Serve stops them.
	if g.hosted, err = hosted.New(hub, cfg.Computers, cfg.Logger.With("component", "hosted"),
		hosted.WithSignInVia(cfg.MCP.PublicURL)); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return g, nil
}

// ReloadHosted reads the configuration files of the hosted computers
// again and applies them (SIGHUP).
func (g *Gateway) ReloadHosted() error { return g.hosted.Reload() }

// operatorsOnly serves h to callers with an operator key: the metrics name
// offices and key ids, which no agent or computer key, nor a token, may
// read. Scrapers that cannot send a key get a listener of their own
// (Config.MetricsListener).
func operatorsOnly(auth core.Authenticator, keyHeader string, hosts []string, h http.Handler) http.Handler {
	if keyHeader == "" {
		keyHeader = sio.DefaultAPIKeyHeader
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpauth.Rebound(r, hosts) {
			plain(w, http.StatusForbidden, httpauth.ReboundError(r).Message)
			return
		}
		cred, err := httpauth.Credential(r.Header, keyHeader)
		var p *core.Principal
		if err == nil {
			p, err = auth.Authenticate(r.Context(), cred)
		}
		if err != nil {
			msg := err.Error()
			if e, ok := smcp.AsError(err); ok {
				msg = e.Message
			}
			w.Header().Set("WWW-Authenticate", "Bearer")
			plain(w, http.StatusUnauthorized, "/metrics: "+msg+" (an operator key, or --metrics-listen for scrapers)")
			return
		}
		if !p.Operator {
			plain(w, http.StatusForbidden, "/metrics on this port is for operator keys (a key without roles, offices or name); scrapers: --metrics-listen")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// mcpOptions fills the MCP front end's identity and limits from the other
// front ends' settings, so that one key header, one default agent and one
// rate apply to every agent of the gateway, and its authorization server
// from the token verifier.
func mcpOptions(cfg Config) mcpfront.Options {
	o := cfg.MCP
	if o.APIKeyHeader == "" {
		o.APIKeyHeader = cfg.RPC.APIKeyHeader
	}
	if o.DefaultAgent == "" {
		o.DefaultAgent = cfg.RPC.DefaultAgent
		if o.DefaultAgent == "" {
			o.DefaultAgent = rpc.DefaultAgent
		}
	}
	if o.EventsPerSecond == 0 {
		o.EventsPerSecond, o.EventBurst = cfg.SIO.EventsPerSecond, cfg.SIO.EventBurst
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = int64(cfg.RPC.MaxRequestBytes)
	}
	if o.Logger == nil {
		o.Logger = cfg.Logger.With("component", "mcp")
	}
	auth := cfg.Auth
	if m, ok := auth.(markingAuth); ok {
		auth = m.Authenticator
	}
	if ta, ok := auth.(tokens.Authenticator); ok && ta.Tokens != nil && len(o.AuthorizationServers) == 0 {
		// Tokens sign in: MCP clients learn from the endpoint where to get one.
		o.AuthorizationServers = []string{ta.Tokens.Issuer()}
	}
	return o
}

// tracerName is the instrumentation scope of the Socket.IO spans.
const tracerName = "github.com/smcpgw/smcp-gateway/gateway/sio"

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body + "\n"))
}

func connectRedis(url string, redisCluster bool) (goredis.UniversalClient, error) {
	rdb, err := cluster.NewClient(url, redisCluster)
	if err != nil {
		return nil, fmt.Errorf("gateway: --redis: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = rdb.Ping(ctx).Err()
	if err == nil {
		err = cluster.CheckServer(ctx, rdb)
	}
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("gateway: redis %s: %w", cluster.Redacted(url), err)
	}
	return rdb, nil
}

// serverLog is net/http's ErrorLog, at the level of who caused each line:
// a failed TLS handshake is the client's (a scanner, plain HTTP to the
// HTTPS port), one line per connection: Debug; a handler's panic is the
// gateway's fault: Error; anything else (an accept error): Warn.
type serverLog struct{ log *slog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	switch {
	case strings.HasPrefix(msg, "http: TLS handshake error"):
		level = slog.LevelDebug
	case strings.HasPrefix(msg, "http: panic serving"):
		level = slog.LevelError
	}
	l.log.Log(context.Background(), level, msg)
	return len(p), nil
}

// Mux is where other front ends mount their handlers.
func (g *Gateway) Mux() *http.ServeMux { return g.mux }

// Handler serves everything mounted on the mux.
func (g *Gateway) Handler() http.Handler { return g.mux }

// Serve serves on ln until ctx ends, then shuts down gracefully (see
// shutdown). Every goroutine it starts has ended when it returns.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	if mln := g.cfg.MetricsListener; mln != nil {
		// Closed however Serve returns (its server's Shutdown closes it too).
		defer func() { _ = mln.Close() }()
	}
	srv := &http.Server{
		Handler:           boundBodyReads(g.mux, g.cfg.BodyReadTimeout, rpc.StreamsRequestBody),
		ReadHeaderTimeout: g.cfg.ReadHeaderTimeout,
		// A keep-alive connection with no request (a refused caller's, a
		// client's gone quiet) is closed after this.
		IdleTimeout: g.cfg.IdleTimeout,
		// No ReadTimeout or WriteTimeout: they bound the whole exchange and
		// would cut long-polling, WebSockets and WatchOffice streams. Bodies
		// are bounded by boundBodyReads instead.
		ErrorLog: log.New(serverLog{g.log}, "", 0),
		// Headers are read before anyone is authenticated: net/http's 1 MiB
		// default would let each unauthenticated connection make the
		// gateway hold a megabyte. Keys, tokens and the A2C headers are far
		// smaller.
		MaxHeaderBytes: maxHeaderBytes,
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	srv.Protocols.SetUnencryptedHTTP2(true) // h2c for gRPC on the same port
	// Shutdown must not wait for connections that never sent a request
	// (see freshConns).
	fresh := newFreshConns()
	srv.ConnState = func(c net.Conn, state http.ConnState) {
		fresh.track(c, state)
		trackState(c, state)
	}
	srv.RegisterOnShutdown(fresh.closeAll)
	// Connections without an authenticated request are bounded (see
	// unauthConns); the bound is below TLS, which counts as unauthenticated.
	if g.node != nil {
		g.advertise(ln.Addr())
	}
	ln = newUnauthConns(g.cfg.MaxUnauthenticatedPerAddr, g.cfg.AuthTimeout, g.Metrics).listener(ln)
	srv.ConnContext = connContext
	if g.cfg.TLS != nil {
		srv.TLSConfig = g.cfg.TLS
		ln = tls.NewListener(ln, g.cfg.TLS)
	}
	if g.peers != nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := g.peers.Start(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	var eg errgroup.Group
	var metricsSrv *http.Server
	if mln := g.cfg.MetricsListener; mln != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", g.Metrics.Handler())
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: g.cfg.ReadHeaderTimeout, IdleTimeout: g.cfg.IdleTimeout,
			MaxHeaderBytes: maxHeaderBytes, ErrorLog: log.New(serverLog{g.log}, "", 0)}
		eg.Go(func() error {
			if err := metricsSrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("gateway: serve metrics: %w", err)
			}
			return nil
		})
		g.log.Info("metrics listening", "addr", mln.Addr().String())
	}
	served := make(chan struct{})
	eg.Go(func() error {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("gateway: serve: %w", err)
		}
		return nil
	})
	g.serving.Store(true)
	defer g.serving.Store(false)
	beat, stopBeat := context.WithCancel(context.Background())
	defer stopBeat()
	if g.node != nil {
		eg.Go(func() error { g.node.Run(beat); return nil })
		// The console's views of the whole cluster (gateway/opsview).
		eg.Go(func() error { g.ops.board.Run(beat); return nil })
	}
	// Hosted computers join once the cluster's peers run (a call from
	// another node reaches them), and stay until the calls are drained.
	hostCtx, stopHosted := context.WithCancel(context.Background())
	defer stopHosted()
	eg.Go(func() error { g.hosted.Run(hostCtx); return nil })
	g.log.Info("gateway listening", "addr", ln.Addr().String(), "sio_path", g.SIO.Path(), "tls", g.cfg.TLS != nil)

	select {
	case <-served: // the listener failed; shut down what runs and report it
	case <-ctx.Done():
	}
	g.shutdown(srv)
	stopHosted()
	if metricsSrv != nil {
		// After the drain: scrapes go on while it lasts. A scrape is short.
		ctx, cancel := context.WithTimeout(context.Background(), g.cfg.ShutdownGrace)
		if err := metricsSrv.Shutdown(ctx); err != nil {
			_ = metricsSrv.Close()
		}
		cancel()
	}
	stopBeat()
	err := eg.Wait()
	// Every call has been answered (shutdown waited for the hub): the
	// records of all of them are queued, and written now.
	if g.auditLog != nil {
		ctx, cancel := context.WithTimeout(context.Background(), auditDrain)
		if err := g.auditLog.Close(ctx); err != nil {
			g.log.Warn("audit", "err", err)
		}
		cancel()
	}
	if g.peers != nil {
		g.peers.Stop()
	}
	if g.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := g.node.Stop(ctx); err != nil {
			g.log.Warn("leave cluster", "err", err)
		}
		cancel()
		_ = g.rdb.Close()
	}
	g.log.Info("gateway stopped")
	return err
}

// shutdown drains, then closes. Draining: /readyz answers 503 and every
// front end refuses new calls while the listener stays open (a load
// balancer's probe still gets its 503), and the calls in flight on every
// front end are answered, within ShutdownGrace. Computers stay connected
// until then: a Connect call is answered over a computer's Socket.IO
// connection. Only then the listener is closed, then every socket.
func (g *Gateway) shutdown(srv *http.Server) {
	g.mu.Lock()
	drainers := append([]Drainer{g.SIO, g.RPC}, g.drainers...)
	g.mu.Unlock()
	// Every front end refuses before /readyz says 503: a caller who saw the
	// 503 and still sends a call gets a refusal, not a call that is cut.
	for _, d := range drainers {
		if r, ok := d.(Refuser); ok {
			r.Refuse()
		}
	}
	g.draining.Store(true)
	g.log.Info("shutting down", "grace", g.cfg.ShutdownGrace.String())
	grace, cancel := context.WithTimeout(context.Background(), g.cfg.ShutdownGrace)
	defer cancel()
	var drain errgroup.Group
	for _, d := range drainers {
		drain.Go(func() error { return d.Drain(grace) })
	}
	if err := drain.Wait(); err != nil {
		g.log.Warn("shutdown grace ended with calls in flight", "err", err)
	}
	var closing errgroup.Group
	closing.Go(func() error {
		if err := srv.Shutdown(grace); err != nil {
			return srv.Close()
		}
		return nil
	})
	// Shutdown waits for requests to end: a long-poll ends only when its
	// socket is closed, an MCP event stream when its session ends (which
	// frees its office). End both while it waits.
	closing.Go(func() error {
		g.MCP.Close()
		return nil
	})
	g.SIO.Close()
	_ = closing.Wait()
	g.Hub.Wait()
}

// A Drainer is a front end that joins the gateway's shutdown: Drain refuses
// new calls and returns once the calls in flight are answered or ctx ends.
type Drainer interface {
	Drain(ctx context.Context) error
}

// A Refuser is a Drainer that can refuse new calls at once, without
// waiting: the gateway's shutdown calls Refuse on every front end first.
type Refuser interface {
	Refuse()
}

var (
	_ Refuser = (*sio.Server)(nil)
	_ Refuser = (*rpc.Server)(nil)
	_ Refuser = (*mcpfront.Server)(nil)
)

// AddDrainer makes the gateway's shutdown wait for d, as it waits for the
// Socket.IO and RPC front ends, before computers are disconnected.
func (g *Gateway) AddDrainer(d Drainer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drainers = append(g.drainers, d)
}

// boundBodyReads gives each request with a body d to send it: a client that
// sends half a body and stalls has its connection closed (for HTTP/2, the
// stream's body read fails) instead of holding it for ever. The deadline is
// lifted as soon as the body has been read, so the handler may take as long
// as it needs to answer; requests without a body (long-polls, WebSocket
// upgrades) are not touched. A request for which stream is true (a
// client-streaming RPC such as PutBlob) may send for as long as it makes
// progress: its d bounds the silence between reads, not the whole body.
func boundBodyReads(h http.Handler, d time.Duration, stream func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		var idle time.Duration
		if stream(r) {
			idle = d
		}
		if r.ProtoMajor >= 2 {
			b := newStreamDeadlineBody(w, r.Body, d, idle)
			defer b.end()
			r.Body = b
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(d)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, idle: idle}
		}
		h.ServeHTTP(w, r)
	})
}

type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	idle   time.Duration // > 0: each read with data pushes the deadline this far
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.lifted:
		// net/http now watches the connection for the client leaving; with
		// the deadline left in place that watch would cancel the call.
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err == nil && n > 0 && b.idle > 0:
		// Setting a connection's deadline is a timer update in the
		// runtime's poller, cheap enough to do on every read.
		_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
	return n, err
}

// streamDeadlineBody bounds the reading of an HTTP/2 request's body with a
// timer of its own, which on expiry sets a read deadline in the past: the
// stream's body read then fails at once, as it would with the deadline
// set ahead. Setting it ahead (ResponseController.SetReadDeadline) costs
// a message through the connection's serve loop, a timer started there,
// and a grown stack on the stream's goroutine: about 3 µs of the
// gateway's CPU per h2c CallTool (docs/BENCHMARKS.md, typed RPC); for the
// same reason a stream's progress resets the timer rather than the
// deadline. The timer ends when the body has been read or the handler
// returns, after which the ResponseWriter must not be touched.
type streamDeadlineBody struct {
	io.ReadCloser
	w     http.ResponseWriter
	idle  time.Duration // > 0: each read with data restarts the timer for this long
	mu    sync.Mutex
	timer *time.Timer
	ended bool
}

func newStreamDeadlineBody(w http.ResponseWriter, body io.ReadCloser, d, idle time.Duration) *streamDeadlineBody {
	b := &streamDeadlineBody{ReadCloser: body, w: w, idle: idle}
	b.mu.Lock()
	b.timer = time.AfterFunc(d, b.expire)
	b.mu.Unlock()
	return b
}

func (b *streamDeadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err != nil:
		b.end()
	case n > 0 && b.idle > 0:
		b.progress()
	}
	return n, err
}

// progress restarts the idle timer, unless it has fired or the body ended.
func (b *streamDeadlineBody) progress() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.timer.Reset(b.idle)
	}
}

func (b *streamDeadlineBody) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.ended = true
		b.timer.Stop()
	}
}

func (b *streamDeadlineBody) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.ended = true
		_ = http.NewResponseController(b.w).SetReadDeadline(time.Unix(1, 0))
	}
}

// Running is a gateway serving on a loopback listener, for tests and demos.
type Running struct {
	*Gateway
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL    string
	cancel context.CancelFunc
	done   chan error
	stop   sync.Once
	err    error
}

// Start serves a new gateway on addr ("127.0.0.1:0" for any free port)
// until Stop is called.
func Start(cfg Config, addr string) (*Running, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway: listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{Gateway: g, URL: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	if cfg.TLS != nil {
		r.URL = "https://" + ln.Addr().String()
	}
	go func() { r.done <- g.Serve(ctx, ln) }()
	return r, nil
}

// Stop shuts the gateway down and waits for it. Later calls return the
// first call's result.
func (r *Running) Stop() error {
	r.stop.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}
