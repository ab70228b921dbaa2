package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
)

func runGateway(ctx context.Context, args []string) error {
	c, err := parseGatewayConfig(args)
	if err != nil {
		return err
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if c.LogJSON {
		handler = slog.NewJSONHandler(os.Stderr, opts)
	}
	log := slog.New(handler)

	cfg, err := c.gatewayConfig(log)
	if err != nil {
		return err
	}
	if c.TraceStdout {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
		if err != nil {
			return fmt.Errorf("trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		cfg.TracerProvider = tp
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return g.Serve(ctx, ln)
}

// parseGatewayConfig reads the flags and the --config file: the file fills
// the configuration, and the flags given on the command line win over it.
func parseGatewayConfig(args []string) (*gatewayConfig, error) {
	fs := flag.NewFlagSet("smcp gateway", flag.ContinueOnError)
	configFile := fs.String("config", "", "YAML configuration file (see docs/gateway.example.yaml); flags given on the command line override it")
	c := defaultGatewayConfig()
	c.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
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
	KeysFile        string        `yaml:"keys_file"`
	Insecure        bool          `yaml:"insecure"`
	SIOPath         string        `yaml:"sio_path"`
	APIKeyHeader    string        `yaml:"api_key_header"`
	RequireVersion  bool          `yaml:"require_version"`
	TLSCert         string        `yaml:"tls_cert"`
	TLSKey          string        `yaml:"tls_key"`
	MaxMessageBytes int           `yaml:"max_message_bytes"`
	MaxAnswerBytes  int           `yaml:"max_answer_bytes"`
	CallTimeout     time.Duration `yaml:"call_timeout"`
	MaxPending      int           `yaml:"max_pending"`
	MaxAgentCalls   int           `yaml:"max_agent_in_flight"`
	EventsPerSecond float64       `yaml:"events_per_second"`
	EventBurst      int           `yaml:"event_burst"`
	MaxConnsPerAddr int           `yaml:"max_conns_per_addr"`
	ShutdownGrace   time.Duration `yaml:"shutdown_grace"`
	CORSOrigins     string        `yaml:"cors_origins"`
	RPCAgent        string        `yaml:"rpc_agent"`
	Metrics         bool          `yaml:"metrics"`
	FastLane        bool          `yaml:"fast_lane"`
	Redis           string        `yaml:"redis"`
	NodeID          string        `yaml:"node_id"`
	RedisTTL        time.Duration `yaml:"redis_ttl"`
	TraceStdout     bool          `yaml:"trace_stdout"`
	LogLevel        string        `yaml:"log_level"`
	LogJSON         bool          `yaml:"log_json"`
}

func defaultGatewayConfig() *gatewayConfig {
	return &gatewayConfig{
		Listen: "127.0.0.1:8080", SIOPath: sio.DefaultPath, APIKeyHeader: sio.DefaultAPIKeyHeader,
		MaxMessageBytes: sio.DefaultMaxMessageBytes, MaxAnswerBytes: core.DefaultMaxAnswerBytes, CallTimeout: core.DefaultRequestTimeout,
		MaxPending: core.DefaultMaxPending, MaxAgentCalls: core.DefaultMaxAgentInFlight,
		EventsPerSecond: sio.DefaultEventsPerSecond, EventBurst: sio.DefaultEventBurst,
		MaxConnsPerAddr: sio.DefaultMaxConnsPerAddr, ShutdownGrace: gateway.DefaultShutdownGrace,
		RPCAgent: rpc.DefaultAgent, Metrics: true, FastLane: true, RedisTTL: cluster.DefaultHeartbeatTTL, LogLevel: "info",
	}
}

func (c *gatewayConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to listen on")
	fs.StringVar(&c.APIKey, "api-key", c.APIKey, "API key every caller must present (default $SMCP_API_KEY)")
	fs.StringVar(&c.KeysFile, "keys-file", c.KeysFile, "YAML or JSON file of API keys with their allowed roles, offices and names")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "accept callers without an API key (development only)")
	fs.StringVar(&c.SIOPath, "sio-path", c.SIOPath, "Engine.IO HTTP path of the Socket.IO endpoint")
	fs.StringVar(&c.APIKeyHeader, "api-key-header", c.APIKeyHeader, "header carrying the API key")
	fs.BoolVar(&c.RequireVersion, "require-version", c.RequireVersion, "refuse clients that do not send a2c_version")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "TLS certificate file (PEM); serve HTTPS with --tls-key")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "TLS private key file (PEM)")
	fs.IntVar(&c.MaxMessageBytes, "max-message-bytes", c.MaxMessageBytes, "largest event payload accepted")
	fs.IntVar(&c.MaxAnswerBytes, "max-answer-bytes", c.MaxAnswerBytes, "largest computer answer relayed (a larger one fails that call only)")
	fs.DurationVar(&c.CallTimeout, "call-timeout", c.CallTimeout, "deadline of client: events other than tool_call")
	fs.IntVar(&c.MaxPending, "max-pending", c.MaxPending, "requests awaiting one computer's answer, at most")
	fs.IntVar(&c.MaxAgentCalls, "max-agent-in-flight", c.MaxAgentCalls, "requests one office's agent may have in flight, at most")
	fs.Float64Var(&c.EventsPerSecond, "events-per-second", c.EventsPerSecond, "Socket.IO events per second per connection (token bucket; excess gets 429, twice the rate disconnects; -1: no limit)")
	fs.IntVar(&c.EventBurst, "event-burst", c.EventBurst, "token bucket size of --events-per-second")
	fs.IntVar(&c.MaxConnsPerAddr, "max-conns-per-addr", c.MaxConnsPerAddr, "Socket.IO connections per client IP address (-1: no limit)")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", c.ShutdownGrace, "how long in-flight calls may finish on shutdown")
	fs.StringVar(&c.CORSOrigins, "cors-origins", c.CORSOrigins, "comma-separated browser origins allowed to call the Connect/gRPC-Web API (\"*\" for any)")
	fs.StringVar(&c.RPCAgent, "rpc-agent", c.RPCAgent, "agent name of RPC callers whose key has no fixed name and who send no x-smcp-agent")
	fs.BoolVar(&c.Metrics, "metrics", c.Metrics, "serve Prometheus metrics at /metrics")
	fs.BoolVar(&c.FastLane, "fast-lane", c.FastLane, "serve plain HTTP/1.1 Connect unary calls without net/http's per-request cycle (cleartext only; false: net/http serves everything)")
	fs.StringVar(&c.Redis, "redis", c.Redis, "Redis URL (redis://host:6379/0): run as one node of a cluster sharing offices through Redis")
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "this node's id in the cluster (default: random)")
	fs.DurationVar(&c.RedisTTL, "redis-ttl", c.RedisTTL, "cluster: a node silent this long is dead and its sessions leave their offices")
	fs.BoolVar(&c.TraceStdout, "trace-stdout", c.TraceStdout, "export OpenTelemetry traces of RPCs and routed events to stderr")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.BoolVar(&c.LogJSON, "log-json", c.LogJSON, "log as JSON")
}

// load reads a YAML file over c; unknown keys are refused so that a typo is
// not silently ignored.
func (c *gatewayConfig) load(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer func() { _ = f.Close() }()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// gatewayConfig checks c and builds the gateway's configuration.
func (c *gatewayConfig) gatewayConfig(log *slog.Logger) (gateway.Config, error) {
	auth, err := gatewayAuth(c.APIKey, c.KeysFile, c.Insecure, log)
	if err != nil {
		return gateway.Config{}, err
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
	if c.CallTimeout <= 0 || c.MaxMessageBytes <= 0 || c.MaxAnswerBytes <= 0 || c.MaxPending <= 0 || c.ShutdownGrace <= 0 || c.MaxAgentCalls <= 0 || c.RedisTTL <= 0 {
		return gateway.Config{}, errors.New("--call-timeout, --max-message-bytes, --max-answer-bytes, --max-pending, --max-agent-in-flight, --redis-ttl and --shutdown-grace must be positive")
	}
	if c.EventsPerSecond == 0 || c.MaxConnsPerAddr == 0 || c.EventBurst <= 0 {
		return gateway.Config{}, errors.New("--events-per-second and --max-conns-per-addr must be positive or -1 (no limit), --event-burst positive")
	}
	return gateway.Config{
		Auth: auth,
		Core: core.Config{RequestTimeout: c.CallTimeout, MaxPending: c.MaxPending, MaxAgentInFlight: c.MaxAgentCalls, MaxAnswerBytes: c.MaxAnswerBytes},
		SIO: sio.Config{
			Path: c.SIOPath, APIKeyHeader: c.APIKeyHeader, MaxMessageBytes: c.MaxMessageBytes, RequireVersion: c.RequireVersion,
			EventsPerSecond: c.EventsPerSecond, EventBurst: c.EventBurst, MaxConnsPerAddr: c.MaxConnsPerAddr,
		},
		RPC:           rpc.Options{CORSOrigins: splitList(c.CORSOrigins), DefaultAgent: c.RPCAgent},
		ShutdownGrace: c.ShutdownGrace,
		TLS:           tlsConfig,
		NoFastLane:    !c.FastLane,
		Metrics:       c.Metrics,
		Logger:        log,
		Redis:         c.Redis,
		NodeID:        c.NodeID,
		HeartbeatTTL:  c.RedisTTL,
	}, nil
}

// gatewayAuth picks the authenticator: a keys file, else one key from the
// flag or $SMCP_API_KEY; without either the gateway refuses to start unless
// --insecure. Keys are never logged.
func gatewayAuth(apiKey, keysFile string, insecure bool, log *slog.Logger) (core.Authenticator, error) {
	if apiKey == "" {
		apiKey = os.Getenv("SMCP_API_KEY")
	}
	switch {
	case keysFile != "" && apiKey != "":
		return nil, errors.New("use either --keys-file or --api-key/$SMCP_API_KEY, not both")
	case keysFile != "":
		ring, err := core.LoadKeyRing(keysFile)
		if err != nil {
			return nil, err
		}
		log.Info("authentication: keys file", "path", keysFile)
		return ring, nil
	case apiKey != "":
		log.Info("authentication: one API key")
		return core.NewKeyRing(core.Key{Key: apiKey, ID: "api-key"})
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
