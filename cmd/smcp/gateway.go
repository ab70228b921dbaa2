package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/policy"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func runGateway(ctx context.Context, args []string) error {
	c, err := parseGatewayConfig(args)
	if err != nil {
		return err
	}
	log, err := newLogger(c.LogLevel, c.LogJSON)
	if err != nil {
		return err
	}
	cfg, err := c.gatewayConfig(log)
	if err != nil {
		return err
	}
	if cfg.Redis != "" {
		goredis.SetLogger(cluster.RedisLogger{Log: log.With("component", "go-redis")})
	}
	tp, err := newTracerProvider(ctx, c.TraceStdout, log)
	if err != nil {
		return err
	}
	if tp != nil {
		defer func() {
			// Spans still buffered are sent; a collector gone does not hold
			// the exit for long.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				log.Warn("trace exporter shutdown", "err", err)
			}
		}()
		cfg.TracerProvider = tp
		if len(cfg.Audit.Sinks) > 0 {
			sink, err := otlpAuditSink(ctx, log)
			if err != nil {
				return err
			}
			if sink != nil {
				cfg.Audit.Sinks = append(cfg.Audit.Sinks, sink)
			}
		}
	}
	if c.MetricsListen != "" {
		if !c.Metrics {
			return errors.New("--metrics-listen needs --metrics")
		}
		mln, err := net.Listen("tcp", c.MetricsListen)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		defer func() { _ = mln.Close() }() // if Serve is not reached
		cfg.MetricsListener = mln
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return err
	}
	if c.keyRing != nil {
		// Quotas reload with the keys and the rules, all or none.
		c.keyRing.AlsoReload(func(b []byte) (func(), error) {
			t, err := quota.Parse(c.KeysFile, b)
			if err != nil {
				return nil, err
			}
			return func() { g.SetQuotas(t) }, nil
		})
	}
	if ta, ok := cfg.Auth.(tokens.Authenticator); ok && ta.Tokens != nil {
		// A wrong issuer URL shows now rather than at the first token; the
		// gateway serves anyway (keys sign in, and tokens once the issuer
		// answers).
		pctx, cancel := context.WithTimeout(ctx, tokens.DefaultFetchTimeout)
		if err := ta.Tokens.Prefetch(pctx); err != nil {
			log.Warn("tokens: the issuer's keys are not fetched yet", "issuer", ta.Tokens.Issuer(), "err", err)
		}
		cancel()
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if c.keyRing != nil {
		stop := watchKeys(ctx, c.keyRing, log)
		defer stop()
	}
	if len(c.Computers) > 0 {
		stop := watchHosted(ctx, g, log)
		defer stop()
	}
	return g.Serve(ctx, ln)
}

// watchHosted reloads the hosted computers' configuration files on SIGHUP
// (beside the keys file, which has its own watch), until stop is called.
func watchHosted(ctx context.Context, g *gateway.Gateway, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := g.ReloadHosted(); err != nil {
					log.Error("hosted computers: reload", "err", err)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}

// watchKeys reloads the keys file on SIGHUP and when it changes, until
// stop is called (which waits for the watch to end). Without a keys file
// SIGHUP keeps its default (the process ends).
func watchKeys(ctx context.Context, ring *core.KeyRing, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ring.Watch(ctx, log, hup); err != nil {
			log.Error("keys file: reloads stopped", "path", ring.Path(), "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}

const gatewayUsage = `usage: smcp gateway [--config FILE] [flags]

Serves Socket.IO (/smcp) and the Connect/gRPC API on one port. Configuration
comes from, the first found winning: the command line, $SMCP_<FLAG>, the
--config file (YAML, every flag is a key with underscores: see
docs/gateway.example.yaml), the defaults. Relative paths in the file
(keys_file, tls_cert, tls_key) are read from the file's folder.

Hosted computers: the file's computers: (a list of {name, office, config,
skills, protocol, confirm, landing_root}) run in the gateway itself, config
being the file smcp computer --config reads; SIGHUP reloads those files.

Authentication: --keys-file (docs/keys.example.yaml: keys with roles, offices
and names), else --api-key/$SMCP_API_KEY (one key for everyone), else
--insecure. With a keys file, $SMCP_API_KEY in the environment is left to the
clients (smcp computer, smcp agent) and not used by the gateway.

Tokens: --oidc-issuer URL --oidc-audience AUD accept, beside the keys (or
alone), JWT bearer tokens that issuer signs (OIDC discovery, its JWKS;
issuer, audience, expiry and signature checked). --oidc-offices-claim,
--oidc-roles-claim and --oidc-name-claim bind a token to offices, roles and
an agent name as a scoped key. /mcp/{office} then publishes its OAuth
protected-resource metadata (RFC 9728) naming the issuer.

Tracing: OpenTelemetry spans of RPCs and routed events go to the exporter the
standard environment names: OTEL_TRACES_EXPORTER=otlp (with
OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, ...), console, or none (the
default); --trace-stdout is OTEL_TRACES_EXPORTER=console.`

// parseGatewayConfig reads the flags, the environment and the --config file:
// the file fills the configuration, and the flags given on the command line
// or in the environment win over it.
func parseGatewayConfig(args []string) (*gatewayConfig, error) {
	fs := newFlags("gateway", gatewayUsage)
	configFile := fs.String("config", "", "YAML configuration file (see docs/gateway.example.yaml); flags and $SMCP_<FLAG> override it")
	c := defaultGatewayConfig()
	c.register(fs.FlagSet)
	if err := fs.parse(args); err != nil {
		return nil, err
	}
	c.apiKeyFromEnv = fs.fromEnv[apiKeyFlag] != ""
	c.apiKeyOnArgv = fs.onCommandLine(apiKeyFlag)
	if *configFile == "" {
		return c, nil
	}
	given := map[string]string{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	if err := c.load(*configFile); err != nil {
		return nil, err
	}
	for name, value := range given {
		if err := fs.Set(name, value); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// gatewayConfig is the whole configuration of `smcp gateway`: each field is
// both a flag and a key of the YAML file.
type gatewayConfig struct {
	Listen          string        `yaml:"listen"`
	APIKey          string        `yaml:"api_key"`
	APIKeyFile      string        `yaml:"api_key_file"`
	KeysFile        string        `yaml:"keys_file"`
	Insecure        bool          `yaml:"insecure"`
	SIOPath         string        `yaml:"sio_path"`
	APIKeyHeader    string        `yaml:"api_key_header"`
	RequireVersion  bool          `yaml:"require_version"`
	Protocols       string        `yaml:"protocols"`
	TLSCert         string        `yaml:"tls_cert"`
	TLSKey          string        `yaml:"tls_key"`
	MaxMessageBytes int           `yaml:"max_message_bytes"`
	MaxAnswerBytes  int           `yaml:"max_answer_bytes"`
	CallTimeout     time.Duration `yaml:"call_timeout"`
	SeatLease       time.Duration `yaml:"seat_lease"`
	MaxPending      int           `yaml:"max_pending"`
	MaxAgentCalls   int           `yaml:"max_agent_in_flight"`
	EventsPerSecond float64       `yaml:"events_per_second"`
	EventBurst      int           `yaml:"event_burst"`
	MaxConnsPerAddr int           `yaml:"max_conns_per_addr"`
	MaxUnauthAddr   int           `yaml:"max_unauthenticated_per_addr"`
	AuthTimeout     time.Duration `yaml:"auth_timeout"`
	MaxQueued       int           `yaml:"max_queued_events"`
	QueuedBytesPC   int           `yaml:"max_queued_bytes_per_computer"`
	QueuedBytes     int           `yaml:"max_queued_bytes"`
	MCPSessions     int           `yaml:"max_mcp_sessions"`
	MCPSessionsAddr int           `yaml:"max_mcp_sessions_per_addr"`
	MCPSessionsKey  int           `yaml:"max_mcp_sessions_per_key"`
	MCPListen       int           `yaml:"max_mcp_listen_streams"`
	MCPListenAddr   int           `yaml:"max_mcp_listen_streams_per_addr"`
	MCPListenKey    int           `yaml:"max_mcp_listen_streams_per_key"`
	MCPViews        int           `yaml:"max_mcp_office_views"`
	MCPViewsKey     int           `yaml:"max_mcp_office_views_per_key"`
	MCPBlobBytes    int           `yaml:"mcp_max_blob_bytes"`
	MCPOrigins      string        `yaml:"mcp_allowed_origins"`
	ShutdownGrace   time.Duration `yaml:"shutdown_grace"`
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	BodyTimeout     time.Duration `yaml:"body_read_timeout"`
	HeaderTimeout   time.Duration `yaml:"read_header_timeout"`
	CORSOrigins     string        `yaml:"cors_origins"`
	AllowedHosts    string        `yaml:"allowed_hosts"`
	RPCAgent        string        `yaml:"rpc_agent"`
	Metrics         bool          `yaml:"metrics"`
	MetricsListen   string        `yaml:"metrics_listen"`
	Redis           string        `yaml:"redis"`
	RedisCluster    bool          `yaml:"redis_cluster"`
	NodeID          string        `yaml:"node_id"`
	AdvertiseURL    string        `yaml:"advertise_url"`
	RedisTTL        time.Duration `yaml:"redis_ttl"`
	RedisTimeout    time.Duration `yaml:"redis_timeout"`
	RedisClaim      time.Duration `yaml:"redis_claim_timeout"`
	TraceStdout     bool          `yaml:"trace_stdout"`
	LogLevel        string        `yaml:"log_level"`
	LogJSON         bool          `yaml:"log_json"`
	OIDCIssuer      string        `yaml:"oidc_issuer"`
	OIDCAudience    string        `yaml:"oidc_audience"`
	OIDCOffices     string        `yaml:"oidc_offices_claim"`
	OIDCRoles       string        `yaml:"oidc_roles_claim"`
	OIDCName        string        `yaml:"oidc_name_claim"`
	OIDCScopes      string        `yaml:"oidc_scopes"`
	OIDCRulesClaim  string        `yaml:"oidc_rules_claim"`
	OIDCRuleSets    claimRuleSets `yaml:"oidc_rule_sets_by_claim"`
	OIDCRefresh     time.Duration `yaml:"oidc_jwks_refresh"`
	OIDCMaxLife     time.Duration `yaml:"oidc_max_token_lifetime"`
	PublicURL       string        `yaml:"public_url"`
	AuditFile       string        `yaml:"audit_file"`
	Audit           string        `yaml:"audit"`
	AuditHashArgs   bool          `yaml:"audit_hash_args"`
	AuditMaxSizeMB  int           `yaml:"audit_max_size_mb"`
	AuditMaxBackups int           `yaml:"audit_max_backups"`
	MetricsPerTool  int           `yaml:"metrics_per_tool"`

	// The answers' digests (--audit-hash-results), beside the arguments'.
	AuditHashResults bool `yaml:"audit_hash_results"`

	// Computers the gateway hosts itself (YAML only: docs/OPERATIONS.md,
	// Hosted computers).
	Computers []hosted.Spec `yaml:"computers"`

	// apiKeyFromEnv: APIKey came from $SMCP_API_KEY, not the command line
	// or the file; a keys file then takes precedence over it.
	apiKeyFromEnv bool
	// apiKeyOnArgv: APIKey came from the command line, where ps shows it.
	apiKeyOnArgv bool
	// keyRing is the ring of KeysFile, which SIGHUP and changes of the
	// file reload.
	keyRing *core.KeyRing
}

func defaultGatewayConfig() *gatewayConfig {
	return &gatewayConfig{
		Listen: "127.0.0.1:8080", Protocols: "0.2,0.3,0.4", SIOPath: sio.DefaultPath, APIKeyHeader: sio.DefaultAPIKeyHeader,
		MaxMessageBytes: sio.DefaultMaxMessageBytes, MaxAnswerBytes: core.DefaultMaxAnswerBytes, CallTimeout: core.DefaultRequestTimeout,
		SeatLease:  core.DefaultSeatLease,
		MaxPending: core.DefaultMaxPending, MaxAgentCalls: core.DefaultMaxAgentInFlight,
		EventsPerSecond: sio.DefaultEventsPerSecond, EventBurst: sio.DefaultEventBurst,
		MaxConnsPerAddr: sio.DefaultMaxConnsPerAddr, MaxUnauthAddr: sio.DefaultMaxUnauthenticatedPerAddr, AuthTimeout: sio.DefaultAuthTimeout,
		MaxQueued: sio.DefaultMaxQueuedEvents, ShutdownGrace: gateway.DefaultShutdownGrace,
		QueuedBytesPC: sio.DefaultMaxQueuedBytesPerComputer, QueuedBytes: sio.DefaultMaxQueuedBytes,
		MCPSessions: mcpfront.DefaultMaxSessions, MCPSessionsAddr: mcpfront.DefaultMaxSessionsPerAddr,
		MCPSessionsKey: mcpfront.DefaultMaxSessionsPerKey, MCPListen: mcpfront.DefaultMaxListenStreams,
		MCPListenAddr: mcpfront.DefaultMaxListenStreamsPerAddr, MCPListenKey: mcpfront.DefaultMaxListenStreamsPerKey,
		MCPViews: mcpfront.DefaultMaxOfficeViews, MCPViewsKey: mcpfront.DefaultMaxOfficeViewsPerKey, MCPBlobBytes: mcpfront.DefaultMaxBlobBytes,
		IdleTimeout: gateway.DefaultIdleTimeout, BodyTimeout: gateway.DefaultBodyReadTimeout, HeaderTimeout: gateway.DefaultReadHeaderTimeout,
		RPCAgent: rpc.DefaultAgent, Metrics: true, RedisTTL: cluster.DefaultHeartbeatTTL,
		RedisTimeout: cluster.DefaultTimeout, RedisClaim: cluster.DefaultClaimTimeout, LogLevel: "info",
		OIDCRefresh: tokens.DefaultRefreshInterval, OIDCMaxLife: tokens.DefaultMaxLifetime, AuditMaxSizeMB: 100,
	}
}

func (c *gatewayConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to listen on")
	fs.StringVar(&c.APIKey, apiKeyFlag, c.APIKey, "API key every caller must present (one key for everyone; see --keys-file); better from $SMCP_API_KEY or --api-key-file: a command line is visible to every user of the machine")
	fs.StringVar(&c.APIKeyFile, apiKeyFileFlag, c.APIKeyFile, "file holding the API key (its first line)")
	fs.StringVar(&c.KeysFile, "keys-file", c.KeysFile, "YAML or JSON file of API keys with their allowed roles, offices and names (docs/keys.example.yaml)")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "accept callers without an API key (development only)")
	fs.StringVar(&c.SIOPath, "sio-path", c.SIOPath, "Engine.IO HTTP path of the Socket.IO endpoint")
	fs.StringVar(&c.APIKeyHeader, "api-key-header", c.APIKeyHeader, "header carrying the API key")
	fs.BoolVar(&c.RequireVersion, "require-version", c.RequireVersion, "refuse clients that do not send a2c_version (otherwise they speak 0.2)")
	fs.StringVar(&c.Protocols, "protocols", c.Protocols, "comma-separated SMCP protocol versions served side by side, each office in one of them; 0.5 (draft: the room model of one agent and one computer per office) is served only when named here")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "TLS certificate file (PEM); serve HTTPS with --tls-key")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "TLS private key file (PEM)")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", c.MaxMessageBytes, "largest event payload accepted")
	fs.IntVar(&c.MaxAnswerBytes, "max-answer-bytes", c.MaxAnswerBytes, "largest computer answer relayed (a larger one fails that call only)")
	fs.DurationVar(&c.CallTimeout, "call-timeout", c.CallTimeout, "deadline of client: events other than tool_call")
	fs.DurationVar(&c.SeatLease, "seat-lease", c.SeatLease, "an office's agent seat held by an MCP session or an RPC stream lapses this long after its holder's last request (docs/OPERATIONS.md, Seats)")
	fs.IntVar(&c.MaxPending, "max-pending", c.MaxPending, "requests awaiting one computer's answer, at most")
	fs.IntVar(&c.MaxAgentCalls, "max-agent-in-flight", c.MaxAgentCalls, "requests one office's agent may have in flight, at most")
	fs.Float64Var(&c.EventsPerSecond, "events-per-second", c.EventsPerSecond, "Socket.IO events per second per connection (token bucket; excess gets 429, twice the rate disconnects; -1: no limit); also ReadBlob's chunk requests per stream, which wait for their token")
	fs.IntVar(&c.EventBurst, "event-burst", c.EventBurst, "token bucket size of --events-per-second")
	fs.IntVar(&c.MaxConnsPerAddr, "max-conns-per-addr", c.MaxConnsPerAddr, "Socket.IO connections per client IP address (-1: no limit)")
	fs.IntVar(&c.MaxUnauthAddr, "max-unauthenticated-per-addr", c.MaxUnauthAddr, "per client IP address: HTTP connections without an authenticated request yet (more are closed), and Socket.IO sessions not authenticated yet (more get 429), each counted on its own (-1: no limit)")
	fs.DurationVar(&c.AuthTimeout, "auth-timeout", c.AuthTimeout, "a Socket.IO session must authenticate within this; an HTTP connection without an authenticated request waits at most this for its next request")
	fs.IntVar(&c.MaxQueued, "max-queued-events", c.MaxQueued, "Socket.IO events of one connection waiting behind its joins, leaves and list_room (which wait on the office registry); more get 429")
	fs.IntVar(&c.QueuedBytesPC, "max-queued-bytes-per-computer", c.QueuedBytesPC, "bytes of requests toward one computer's Socket.IO connection not written yet (it is not reading); more get 429")
	fs.IntVar(&c.QueuedBytes, "max-queued-bytes", c.QueuedBytes, "bytes of requests toward computers not written yet, over the whole gateway; more get 503")
	fs.IntVar(&c.MCPSessions, "max-mcp-sessions", c.MCPSessions, "open MCP sessions (/mcp/{office_id}) of the gateway; more get 429")
	fs.IntVar(&c.MCPSessionsAddr, "max-mcp-sessions-per-addr", c.MCPSessionsAddr, "open MCP sessions per client IP address; more get 429 (-1: no limit)")
	fs.IntVar(&c.MCPSessionsKey, "max-mcp-sessions-per-key", c.MCPSessionsKey, "open MCP sessions per key or token subject, from any address (-1: no limit); at this or the per-address bound, the least recently used idle session of that address or key is closed for the new one, else 429")
	fs.IntVar(&c.MCPListen, "max-mcp-listen-streams", c.MCPListen, "open MCP 2026-07-28 subscriptions/listen streams of the gateway; more get 429")
	fs.IntVar(&c.MCPListenAddr, "max-mcp-listen-streams-per-addr", c.MCPListenAddr, "open subscriptions/listen streams per client IP address; more get 429 (-1: no limit)")
	fs.IntVar(&c.MCPListenKey, "max-mcp-listen-streams-per-key", c.MCPListenKey, "open subscriptions/listen streams per key or token subject; more get 429 (-1: no limit)")
	fs.IntVar(&c.MCPViews, "max-mcp-office-views", c.MCPViews, "offices with a shared view for MCP 2026-07-28 requests; at the bound the least recently used idle view is closed, else 429")
	fs.IntVar(&c.MCPViewsKey, "max-mcp-office-views-per-key", c.MCPViewsKey, "shared office views made by one key or token subject (-1: no limit); at the bound its least recently used idle one is closed, else 429")
	fs.IntVar(&c.MCPBlobBytes, "mcp-max-blob-bytes", c.MCPBlobBytes, "largest blob (a skill file, a tool result's binary items together) the MCP front end drains into one answer; a larger one is refused before it moves (MCP has no streaming: Connect ReadBlob and Socket.IO get_blob stream any size)")
	fs.StringVar(&c.MCPOrigins, "mcp-allowed-origins", c.MCPOrigins, "comma-separated web origins (https://app.example.com, or *) whose pages may call /mcp/{office_id}; a request from another Origin gets 403. Always allowed: no Origin, the gateway's own host, loopback")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.ShutdownGrace, "how long in-flight calls may finish on shutdown")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close a keep-alive HTTP connection without a request after this")
	fs.DurationVar(&c.BodyTimeout, "body-read-timeout", c.BodyTimeout, "a request's body must arrive within this; an upload stream (PutBlob) may not fall silent for longer (answers are not bounded)")
	fs.DurationVar(&c.HeaderTimeout, "read-header-timeout", c.HeaderTimeout, "a request's headers must arrive within this")
	fs.StringVar(&c.CORSOrigins, "cors-origins", c.CORSOrigins, "comma-separated browser origins allowed to call the Connect/gRPC-Web API and to open Socket.IO connections (\"*\" for any; the gateway's own origin always may)")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", c.AllowedHosts, "comma-separated host names a gateway listening on loopback answers besides loopback ones (against DNS rebinding, other Host names get 403 on every front end): names in /etc/hosts, a proxy on this machine that keeps the client's Host")
	fs.StringVar(&c.RPCAgent, "rpc-agent", c.RPCAgent, "agent name of RPC callers whose key has no fixed name and who send no x-smcp-agent")
	fs.BoolVar(&c.Metrics, "metrics", c.Metrics, "serve Prometheus metrics at /metrics (on --listen to operator keys only: a key without roles, offices or name)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", c.MetricsListen, "also serve /metrics on this address, without authentication, for scrapers (keep it private: 127.0.0.1:9090, or a network only the scraper reaches)")
	fs.StringVar(&c.Redis, "redis", c.Redis, "Redis URL (redis://host:6379/0, Sentinel: redis://sentinel1:26379?master_name=NAME&addr=sentinel2:26379..., Redis Cluster: redis://seed1:6379?addr=seed2:6379... with --redis-cluster): run as one node of a cluster sharing offices through Redis")
	fs.BoolVar(&c.RedisCluster, "redis-cluster", c.RedisCluster, "--redis names a Redis Cluster: its host and addr= are seeds")
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "this node's id in the cluster (default: random)")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", c.AdvertiseURL, "cluster: where the other nodes reach this node's HTTP port (http://10.0.0.5:8080), to forward its MCP sessions' requests; default: --listen's address, or the host's one private IPv4 address when --listen is 0.0.0.0 or [::]")
	fs.DurationVar(&c.RedisTTL, "redis-ttl", c.RedisTTL, "cluster: a node silent this long is dead and its sessions leave their offices")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", c.RedisTimeout, "cluster: bound of one office-registry call to Redis (a listing, a lookup, a release)")
	fs.DurationVar(&c.RedisClaim, "redis-claim-timeout", c.RedisClaim, "cluster: bound of a join's claim in Redis, which may wait out a dead node's heartbeat: above --redis-ttl")
	fs.BoolVar(&c.TraceStdout, "trace-stdout", c.TraceStdout, "export OpenTelemetry traces of RPCs and routed events to stderr (OTEL_TRACES_EXPORTER=console; otlp and OTEL_EXPORTER_OTLP_ENDPOINT for a collector)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.BoolVar(&c.LogJSON, "log-json", c.LogJSON, "log as JSON")
	fs.StringVar(&c.OIDCIssuer, "oidc-issuer", c.OIDCIssuer, "accept JWT bearer tokens this OpenID Connect issuer signs (its URL, as in its tokens' iss; discovery finds its keys)")
	fs.StringVar(&c.OIDCAudience, "oidc-audience", c.OIDCAudience, "with --oidc-issuer: the audience (aud) a token must be for")
	fs.StringVar(&c.OIDCOffices, "oidc-offices-claim", c.OIDCOffices, "token claim listing the offices it may enter (a dotted path reaches into objects); unset: every office")
	fs.StringVar(&c.OIDCRoles, "oidc-roles-claim", c.OIDCRoles, "token claim listing its roles (agent, computer); unset: every role")
	fs.StringVar(&c.OIDCName, "oidc-name-claim", c.OIDCName, "token claim holding the only agent or computer name it may use (e.g. preferred_username); unset: any name")
	fs.StringVar(&c.OIDCRulesClaim, "oidc-rules-claim", c.OIDCRulesClaim, "token claim (e.g. groups) whose values --oidc-rule-sets-by-claim maps to rule sets of the keys file (docs/GOVERNANCE.md)")
	fs.Var(&c.OIDCRuleSets, "oidc-rule-sets-by-claim", "rule sets of the keys file per value of --oidc-rules-claim: value=set[+set],... (e.g. echo-users=echo-only,interns=safe+read-only)")
	fs.StringVar(&c.OIDCScopes, "oidc-scopes", c.OIDCScopes, "comma-separated scopes published as scopes_supported in the MCP endpoint's metadata (not checked in tokens)")
	fs.DurationVar(&c.OIDCRefresh, "oidc-jwks-refresh", c.OIDCRefresh, "least time between two fetches of the issuer's keys prompted by tokens (a key id not held yet)")
	fs.DurationVar(&c.OIDCMaxLife, "oidc-max-token-lifetime", c.OIDCMaxLife, "longest token lifetime accepted (exp - iat, or exp - now without iat); a longer-lived token is refused")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "the gateway's URL as clients reach it (behind a proxy), for the MCP endpoint's metadata (default: each request's own) and the redirect URI of hosted computers' sign-ins (docs/UPSTREAM.md; unset: they sign in with smcp computer auth login only)")
	fs.StringVar(&c.AuditFile, "audit-file", c.AuditFile, "write the audit trail (a JSON line per routed request, docs/GOVERNANCE.md) to this file, rotated by size, or - for stdout; also to OTLP logs when tracing exports OTLP")
	fs.StringVar(&c.Audit, "audit", c.Audit, "best-effort (records dropped and counted when the queue is full) or required (calls refused with 503 while the audit cannot be written)")
	fs.BoolVar(&c.AuditHashArgs, "audit-hash-args", c.AuditHashArgs, "record the SHA-256 of each tool call's arguments (never the arguments)")
	fs.BoolVar(&c.AuditHashResults, "audit-hash-results", c.AuditHashResults, "record the SHA-256 of each answer relayed, a tool call's result included (never the answer)")
	fs.IntVar(&c.AuditMaxSizeMB, "audit-max-size-mb", c.AuditMaxSizeMB, "size at which the audit file is rotated")
	fs.IntVar(&c.AuditMaxBackups, "audit-max-backups", c.AuditMaxBackups, "rotated audit files kept (0: all)")
	fs.IntVar(&c.MetricsPerTool, "metrics-per-tool", c.MetricsPerTool, "count tool calls, errors and latency per office and tool in /metrics, for at most this many offices and tools each (the rest are \"other\"); 0: off")
}

// load reads a YAML file over c; unknown keys are refused so that a typo is
// not silently ignored. Relative paths the file names are read from the
// file's folder, so that a configuration works from any working directory.
func (c *gatewayConfig) load(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer func() { _ = f.Close() }()
	before := *c
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for _, p := range []struct {
		now *string
		was string
	}{
		{&c.KeysFile, before.KeysFile}, {&c.TLSCert, before.TLSCert}, {&c.TLSKey, before.TLSKey}, {&c.APIKeyFile, before.APIKeyFile},
		{&c.AuditFile, before.AuditFile},
	} {
		if p.now == &c.AuditFile && *p.now == "-" {
			continue // stdout
		}
		if *p.now != p.was && *p.now != "" && !filepath.IsAbs(*p.now) {
			*p.now = filepath.Join(dir, *p.now)
		}
	}
	if c.APIKey != before.APIKey {
		c.apiKeyFromEnv = false
	}
	for i := range c.Computers {
		hc := &c.Computers[i]
		for _, p := range append([]*string{&hc.Config, &hc.LandingRoot, &hc.AuthStore, &hc.AuthStoreKeyFile}, pointers(hc.Skills)...) {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
	}
	return nil
}

// pointers are the addresses of ss's elements.
func pointers(ss []string) []*string {
	ps := make([]*string, len(ss))
	for i := range ss {
		ps[i] = &ss[i]
	}
	return ps
}

// gatewayConfig checks c and builds the gateway's configuration.
func (c *gatewayConfig) gatewayConfig(log *slog.Logger) (gateway.Config, error) {
	apiKey := c.APIKey
	switch {
	case apiKey != "" && c.APIKeyFile != "" && !c.apiKeyFromEnv:
		return gateway.Config{}, errors.New("use either --api-key or --api-key-file, not both")
	case c.APIKeyFile != "":
		// The file wins over $SMCP_API_KEY, which docs/OPERATIONS.md has clients
		// export in the same shell.
		k, err := readKeyFile(c.APIKeyFile)
		if err != nil {
			return gateway.Config{}, err
		}
		apiKey, c.apiKeyFromEnv = k, false
	case c.apiKeyOnArgv:
		log.Warn("--api-key on the command line is visible to other users of this machine (ps); use $SMCP_API_KEY or --api-key-file")
	}
	if c.KeysFile != "" && c.apiKeyFromEnv {
		// docs/OPERATIONS.md has clients export SMCP_API_KEY; the same shell may
		// start a gateway with a keys file, which then decides alone.
		log.Info("keys file in use: $SMCP_API_KEY is left to the clients")
		apiKey = ""
	}
	auth, err := gatewayAuth(apiKey, c.KeysFile, c.Insecure, c.OIDCIssuer != "", log)
	if err != nil {
		return gateway.Config{}, err
	}
	for flag, list := range map[string]string{"--cors-origins": c.CORSOrigins, "--mcp-allowed-origins": c.MCPOrigins} {
		if _, err := httpauth.ParseOrigins(splitList(list)); err != nil {
			return gateway.Config{}, fmt.Errorf("%s: %w", flag, err)
		}
	}
	if ring, ok := auth.(*core.KeyRing); ok && ring.Path() != "" {
		c.keyRing = ring
	}
	guard, err := c.rules(c.keyRing, log)
	if err != nil {
		return gateway.Config{}, err
	}
	quotas, err := c.quotas()
	if err != nil {
		return gateway.Config{}, err
	}
	auditCfg, err := c.auditConfig()
	if err != nil {
		return gateway.Config{}, err
	}
	mcpOpts := mcpfront.Options{MaxSessions: c.MCPSessions, MaxSessionsPerAddr: c.MCPSessionsAddr, PublicURL: c.PublicURL,
		AllowedOrigins: splitList(c.MCPOrigins), MaxSessionsPerKey: c.MCPSessionsKey,
		MaxListenStreams: c.MCPListen, MaxListenStreamsPerAddr: c.MCPListenAddr, MaxListenStreamsPerKey: c.MCPListenKey,
		MaxOfficeViews: c.MCPViews, MaxOfficeViewsPerKey: c.MCPViewsKey, MaxBlobBytes: c.MCPBlobBytes}
	if c.MCPBlobBytes <= 0 {
		return gateway.Config{}, errors.New("--mcp-max-blob-bytes must be positive")
	}
	if c.MCPListen <= 0 || c.MCPViews <= 0 || c.MCPSessionsKey == 0 || c.MCPListenAddr == 0 || c.MCPListenKey == 0 || c.MCPViewsKey == 0 {
		return gateway.Config{}, errors.New("--max-mcp-listen-streams and --max-mcp-office-views must be positive, --max-mcp-sessions-per-key, --max-mcp-listen-streams-per-addr, --max-mcp-listen-streams-per-key and --max-mcp-office-views-per-key positive or -1 (no limit)")
	}
	if c.OIDCIssuer != "" {
		v, err := c.tokenVerifier(log)
		if err != nil {
			return gateway.Config{}, err
		}
		auth = tokens.Authenticator{Keys: auth, Tokens: v}
		mcpOpts.AuthorizationServers = []string{c.OIDCIssuer}
		mcpOpts.Scopes = splitList(c.OIDCScopes)
	}
	var tlsConfig *tls.Config
	if c.TLSCert != "" || c.TLSKey != "" {
		if c.TLSCert == "" || c.TLSKey == "" {
			return gateway.Config{}, errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return gateway.Config{}, fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if c.CallTimeout <= 0 || c.SeatLease <= 0 || c.MaxMessageBytes <= 0 || c.MaxAnswerBytes <= 0 || c.MaxPending <= 0 || c.ShutdownGrace <= 0 || c.MaxAgentCalls <= 0 || c.RedisTTL <= 0 ||
		c.IdleTimeout <= 0 || c.BodyTimeout <= 0 || c.HeaderTimeout <= 0 || c.MaxQueued <= 0 || c.MCPSessions <= 0 || c.AuthTimeout <= 0 ||
		c.QueuedBytesPC <= 0 || c.QueuedBytes <= 0 {
		return gateway.Config{}, errors.New("--call-timeout, --seat-lease, --max-message-bytes, --max-answer-bytes, --max-pending, --max-agent-in-flight, --max-queued-events, --max-queued-bytes-per-computer, --max-queued-bytes, --max-mcp-sessions, --redis-ttl, --shutdown-grace, --idle-timeout, --body-read-timeout, --read-header-timeout and --auth-timeout must be positive")
	}
	if c.RedisTimeout <= 0 || c.RedisClaim <= c.RedisTTL {
		return gateway.Config{}, errors.New("--redis-timeout must be positive, --redis-claim-timeout above --redis-ttl (a claim may wait out a dead node's heartbeat)")
	}
	if c.EventsPerSecond == 0 || c.MaxConnsPerAddr == 0 || c.MCPSessionsAddr == 0 || c.MaxUnauthAddr == 0 || c.EventBurst <= 0 {
		return gateway.Config{}, errors.New("--events-per-second, --max-conns-per-addr, --max-mcp-sessions-per-addr and --max-unauthenticated-per-addr must be positive or -1 (no limit), --event-burst positive")
	}
	var protocols []smcp.Version
	for _, p := range splitList(c.Protocols) {
		v, err := smcp.ParseProfile(p)
		if err != nil {
			return gateway.Config{}, fmt.Errorf("--protocols: %w", err)
		}
		protocols = append(protocols, v)
	}
	if len(protocols) == 0 {
		return gateway.Config{}, errors.New("--protocols: name at least one version (0.2, 0.3, 0.4, or the 0.5 draft)")
	}
	for _, hc := range c.Computers {
		p := hc.Protocol
		if p == "" {
			p = computer.Protocol04
		}
		if v, err := smcp.ParseProfile(p); err != nil || !slices.Contains(protocols, v) {
			return gateway.Config{}, fmt.Errorf("computers: %q speaks protocol %q, which --protocols does not serve (%s)", hc.Name, p, c.Protocols)
		}
	}
	return gateway.Config{
		Auth: auth,
		Core: core.Config{RequestTimeout: c.CallTimeout, SeatLease: c.SeatLease, MaxPending: c.MaxPending, MaxAgentInFlight: c.MaxAgentCalls, MaxAnswerBytes: c.MaxAnswerBytes,
			Guard: guard},
		SIO: sio.Config{
			Path: c.SIOPath, APIKeyHeader: c.APIKeyHeader, MaxMessageBytes: c.MaxMessageBytes, RequireVersion: c.RequireVersion,
			Protocols: protocols, EventsPerSecond: c.EventsPerSecond, EventBurst: c.EventBurst, MaxConnsPerAddr: c.MaxConnsPerAddr,
			MaxQueuedEvents: c.MaxQueued, MaxQueuedBytesPerComputer: c.QueuedBytesPC, MaxQueuedBytes: c.QueuedBytes,
		},
		RPC:                       rpc.Options{CORSOrigins: splitList(c.CORSOrigins), DefaultAgent: c.RPCAgent},
		MCP:                       mcpOpts,
		ShutdownGrace:             c.ShutdownGrace,
		IdleTimeout:               c.IdleTimeout,
		BodyReadTimeout:           c.BodyTimeout,
		ReadHeaderTimeout:         c.HeaderTimeout,
		MaxUnauthenticatedPerAddr: c.MaxUnauthAddr,
		AuthTimeout:               c.AuthTimeout,
		AllowedHosts:              splitList(c.AllowedHosts),
		TLS:                       tlsConfig,
		Metrics:                   c.Metrics,
		Logger:                    log,
		Redis:                     c.Redis,
		RedisCluster:              c.RedisCluster,
		NodeID:                    c.NodeID,
		AdvertiseURL:              c.AdvertiseURL,
		HeartbeatTTL:              c.RedisTTL,
		RedisRegistry:             cluster.RegistryOptions{Timeout: c.RedisTimeout, ClaimTimeout: c.RedisClaim},
		Quotas:                    quotas,
		Audit:                     auditCfg,
		MetricsPerTool:            c.MetricsPerTool,
		Computers:                 c.Computers,
	}, nil
}

// tokenVerifier is the verifier of --oidc-issuer's tokens.
func (c *gatewayConfig) tokenVerifier(log *slog.Logger) (*tokens.Verifier, error) {
	if c.OIDCRefresh <= 0 || c.OIDCMaxLife <= 0 {
		return nil, errors.New("--oidc-jwks-refresh and --oidc-max-token-lifetime must be positive")
	}
	v, err := tokens.NewVerifier(tokens.Config{
		Issuer: c.OIDCIssuer, Audience: c.OIDCAudience,
		OfficesClaim: c.OIDCOffices, RolesClaim: c.OIDCRoles, NameClaim: c.OIDCName,
		RulesClaim: c.OIDCRulesClaim, RuleSetsByClaim: c.OIDCRuleSets,
		RefreshInterval: c.OIDCRefresh, MaxLifetime: c.OIDCMaxLife, Logger: log.With("component", "tokens"),
	})
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer: %w", err)
	}
	log.Info("authentication: bearer tokens", "issuer", c.OIDCIssuer, "audience", c.OIDCAudience,
		"offices_claim", c.OIDCOffices, "roles_claim", c.OIDCRoles, "name_claim", c.OIDCName, "max_token_lifetime", c.OIDCMaxLife.String())
	return v, nil
}

// rules loads the rule sets of the keys file (docs/GOVERNANCE.md) and
// checks the ones tokens are mapped to; nil when there are none to apply.
func (c *gatewayConfig) rules(ring *core.KeyRing, log *slog.Logger) (core.Guard, error) {
	var mapped []string
	for _, sets := range c.OIDCRuleSets {
		mapped = append(mapped, sets...)
	}
	switch {
	case len(c.OIDCRuleSets) > 0 && c.OIDCRulesClaim == "":
		return nil, errors.New("--oidc-rule-sets-by-claim needs --oidc-rules-claim (the claim whose values it maps)")
	case len(c.OIDCRuleSets) > 0 && c.KeysFile == "":
		return nil, errors.New("--oidc-rule-sets-by-claim names rule sets of the keys file: set --keys-file")
	case c.KeysFile == "":
		return nil, nil
	}
	parse := func(b []byte) (*policy.Rules, error) {
		r, err := policy.Parse(c.KeysFile, b)
		if err != nil {
			return nil, err
		}
		if err := r.Check(mapped); err != nil {
			return nil, fmt.Errorf("--oidc-rule-sets-by-claim: %w", err)
		}
		return r, nil
	}
	b, err := os.ReadFile(c.KeysFile)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	r, err := parse(b)
	if err != nil {
		return nil, err
	}
	log.Info("rules: rule sets of the keys file apply", "rule_sets", r.Names())
	engine := policy.NewEngine(r)
	if ring != nil {
		// The rule sets reload with the keys, both or neither; the engine is
		// there even without rule sets, so that a reload can add the first.
		ring.AlsoReload(func(b []byte) (func(), error) {
			r, err := parse(b)
			if err != nil {
				return nil, err
			}
			return func() { engine.Set(r) }, nil
		})
	}
	return engine, nil
}

// claimRuleSets maps values of a token claim to rule sets; as a flag,
// value=set[+set],...
type claimRuleSets map[string][]string

func (m *claimRuleSets) String() string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(*m)) {
		parts = append(parts, v+"="+strings.Join((*m)[v], "+"))
	}
	return strings.Join(parts, ",")
}

func (m *claimRuleSets) Set(s string) error {
	out := claimRuleSets{}
	for _, part := range splitList(s) {
		value, sets, ok := strings.Cut(part, "=")
		if !ok || value == "" || sets == "" {
			return fmt.Errorf("%q: want value=set[+set]", part)
		}
		out[value] = append(out[value], strings.Split(sets, "+")...)
	}
	*m = out
	return nil
}

// gatewayAuth picks the authenticator of API keys: a keys file, else one key
// (from the flag, the file or $SMCP_API_KEY); without either the gateway
// refuses to start unless --insecure, or tokens sign in (withTokens: nil,
// tokens only). Keys are never logged.
func gatewayAuth(apiKey, keysFile string, insecure, withTokens bool, log *slog.Logger) (core.Authenticator, error) {
	switch {
	case keysFile != "" && apiKey != "":
		return nil, errors.New("use either --keys-file or --api-key, not both")
	case insecure && withTokens:
		return nil, errors.New("--insecure accepts anyone: it does not go with --oidc-issuer")
	case keysFile != "":
		ring, err := core.LoadKeyRing(keysFile)
		if err != nil {
			return nil, err
		}
		log.Info("authentication: keys file (reloaded on SIGHUP and when it changes)", "path", keysFile)
		return ring, nil
	case apiKey != "":
		log.Info("authentication: one API key")
		return core.NewKeyRing(core.Key{Key: apiKey, ID: "api-key"})
	case withTokens:
		log.Info("authentication: bearer tokens only (no API key)")
		return nil, nil
	case insecure:
		log.Warn("authentication disabled (--insecure): anyone reaching this port may act as any agent or computer")
		return core.AllowAll{}, nil
	}
	return nil, errors.New("no API key: set --api-key or $SMCP_API_KEY, or --keys-file (or --insecure for development)")
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
