package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"connectrpc.com/connect"
	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/policy"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// Server kinds a bench child process serves.
const (
	KindGateway = "gateway"
	KindFloor   = "floor"
	// KindRelay is the floor whose CallTool and MCP handlers forward each
	// call to the office's computer instead of answering in place
	// (relay.go); its Socket.IO relay is the floor's.
	KindRelay = "relay"
	// KindGovernance is the gateway with governance on: a keys file whose
	// one key (GovernanceKey) has a rule set and a quota never reached,
	// and the audit trail written to a file.
	KindGovernance = "governance"
	// KindKeys is the gateway authenticating with KindGovernance's key (a
	// keys file of that one key), governance off: the base of the bench's
	// governance on/off ratio, so that the two rows differ in rules,
	// quotas and audit only, not in authentication.
	KindKeys = "keys"
)

// GovernanceKey is the API key of KindGovernance's keys file, for agents
// and computers alike.
const GovernanceKey = "bench-governance-key"

// governanceKeys is KindGovernance's keys file: the rule set lets the
// bench's one tool through (it is evaluated on every call), the quota
// (calls per second and in flight, spent on every call) is far beyond any
// run.
const governanceKeys = `rule_sets:
  bench:
    - allow: {tool: echo}
    - deny: {computer: "prod-*", tool: "shell*"}
keys:
  - id: bench
    key: ` + GovernanceKey + `
    rules: [bench]
    quota: {calls_per_second: 1000000000, burst: 1000000000, in_flight: 1000000}
`

// StatsPath serves RuntimeStats (?gc=1 collects garbage first) on servers
// started by Serve; ProfilePath is net/http/pprof's index.
const (
	StatsPath   = "/debug/bench/stats"
	ProfilePath = "/debug/pprof/"
)

// Node makes a gateway one node of a cluster: its Redis URL and node id
// (gateway.Config.Redis and NodeID). The zero Node is a single gateway.
type Node struct {
	Redis, ID string
	// RedisCluster: Redis names a Redis Cluster's seeds.
	RedisCluster bool
	// MCPMaxBlobBytes is the MCP front end's bound on a blob drained into
	// one answer (mcpfront.Options.MaxBlobBytes; 0: its default): the blob
	// mode moves files above the default through it.
	MCPMaxBlobBytes int
}

// Serve serves a gateway (insecure, for benchmarks; a cluster node when
// node.Redis is set) or a floor relay on ln until ctx ends, with the runtime
// stats and pprof endpoints mounted.
func Serve(ctx context.Context, kind string, node Node, ln net.Listener, log *slog.Logger) error {
	if node.Redis != "" && kind != KindGateway {
		return fmt.Errorf("loadtest: only a %s joins a cluster", KindGateway)
	}
	switch kind {
	case KindGateway, KindGovernance, KindKeys:
		cfg := gateway.Config{Auth: core.AllowAll{}}
		if kind != KindGateway {
			dir, err := os.MkdirTemp("", "bench-"+kind+"-")
			if err != nil {
				return err
			}
			defer func() { _ = os.RemoveAll(dir) }()
			if cfg, err = governanceConfig(dir, kind == KindGovernance); err != nil {
				return err
			}
		}
		// One agent socket carries up to ~20k events/s here, far beyond the
		// per-connection limit meant for production: the limiter stays on
		// (its cost is measured) with a rate no run reaches.
		g, err := gateway.New(gateway.Config{Auth: cfg.Auth, Core: cfg.Core, Quotas: cfg.Quotas, Audit: cfg.Audit, Logger: log,
			SIO: sio.Config{EventsPerSecond: 1e7, MaxConnsPerAddr: -1}, MCP: mcpfront.Options{EventsPerSecond: 1e7,
				MaxSessions: 1 << 20, MaxSessionsPerAddr: -1, MaxSessionsPerKey: -1, // one key (AllowAll), one address
				MaxListenStreams: 1 << 20, MaxListenStreamsPerAddr: -1, MaxListenStreamsPerKey: -1,
				MaxOfficeViews: 1 << 20, MaxOfficeViewsPerKey: -1, MaxBlobBytes: node.MCPMaxBlobBytes},
			Redis: node.Redis, RedisCluster: node.RedisCluster, NodeID: node.ID, MaxUnauthenticatedPerAddr: -1})
		if err != nil {
			return err
		}
		mountDebug(g.Mux())
		return g.Serve(ctx, ln)
	case KindFloor, KindRelay:
		f := NewFloor("/socket.io/")
		var callTool smcpv1connect.AgentServiceHandler = connectFloor{}
		mcpHandler := NewMCPFloor(log)
		if kind == KindRelay {
			callTool, mcpHandler = connectRelay{floor: f}, NewMCPRelay(f, log)
		}
		mux := http.NewServeMux()
		mux.Handle("/socket.io/", f.Handler())
		// The Connect floor has what any production Connect server has and
		// the gateway has too: a bound on a request's size
		// (WithReadMaxBytes, connect-go's documented guard) and on the time
		// its body may take to arrive (ReadTimeout: for HTTP/2, one timer
		// per stream, as the gateway's boundBodyReads), at the gateway's
		// defaults. No auth, no interceptors: the gateway's are its own.
		mux.Handle(smcpv1connect.NewAgentServiceHandler(callTool, connect.WithCompressMinBytes(1024),
			connect.WithReadMaxBytes(rpc.DefaultMaxRequestBytes)))
		mux.Handle(mcpfront.Pattern, mcpHandler)
		mountDebug(mux)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: gateway.DefaultReadHeaderTimeout,
			ReadTimeout: gateway.DefaultBodyReadTimeout, IdleTimeout: gateway.DefaultIdleTimeout}
		hs.Protocols = new(http.Protocols)
		hs.Protocols.SetHTTP1(true)
		hs.Protocols.SetUnencryptedHTTP2(true)
		errc := make(chan error, 1)
		go func() { errc <- hs.Serve(ln) }()
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
		}
		f.Close()
		return hs.Close()
	}
	return fmt.Errorf("loadtest: unknown server kind %q (want %s, %s, %s, %s or %s)", kind, KindGateway, KindGovernance, KindKeys, KindFloor, KindRelay)
}

// governanceConfig is the governance of KindGovernance (on) or KindKeys
// (off: the key alone): its keys file (governanceKeys) and audit file in
// dir, loaded as smcp gateway --keys-file --audit-file loads them.
func governanceConfig(dir string, on bool) (gateway.Config, error) {
	var cfg gateway.Config
	keys := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(keys, []byte(governanceKeys), 0o600); err != nil {
		return cfg, err
	}
	ring, err := core.LoadKeyRing(keys)
	if err != nil {
		return cfg, err
	}
	if !on {
		cfg.Auth = ring
		return cfg, nil
	}
	rules, err := policy.LoadFile(keys)
	if err != nil {
		return cfg, err
	}
	quotas, err := quota.LoadFile(keys)
	if err != nil {
		return cfg, err
	}
	sink, err := audit.OpenFile(audit.FileOptions{Path: filepath.Join(dir, "audit.jsonl")})
	if err != nil {
		return cfg, err
	}
	cfg.Auth, cfg.Core.Guard, cfg.Quotas = ring, policy.NewEngine(rules), quotas
	cfg.Audit.Sinks = []audit.Sink{sink}
	return cfg, nil
}

// connectFloor is the floor of the CallTool modes: the same net/http server
// and connect-go handler as the gateway's, answering in place with a fixed
// result, no computer, no routing. What the gateway costs above it is its
// own; what it costs is the price of net/http and connect-go per call.
type connectFloor struct {
	smcpv1connect.UnimplementedAgentServiceHandler
}

var floorResult = func() *smcpv1.CallToolResult {
	text, _ := structpb.NewStruct(map[string]any{"type": "text", "text": "ok"})
	isError := false
	return &smcpv1.CallToolResult{Content: []*structpb.Struct{text}, IsError: &isError}
}()

func (connectFloor) CallTool(_ context.Context, req *smcpv1.CallToolRequest) (*smcpv1.CallToolResponse, error) {
	return &smcpv1.CallToolResponse{Result: floorResult, ReqId: req.GetReqId()}, nil
}

// NewMCPFloor is the floor of the MCP modes: the gateway's net/http server
// and go-sdk streamable HTTP handler, with the same options, answering
// tools/call "pc__echo" in place with the arguments as text (what the echo
// computer answers through the gateway), no computer, no routing. Every
// session shares one go-sdk server: a session's server is built once, at
// initialize, outside the measured calls.
func NewMCPFloor(log *slog.Logger) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "smcp-bench-floor", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "pc__echo", InputSchema: &jsonschema.Schema{Type: "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger: log, SessionTimeout: mcpfront.DefaultSessionTimeout, MaxRequestBodyBytes: mcpfront.DefaultMaxRequestBytes, JSONResponse: true,
	})
}

func mountDebug(mux *http.ServeMux) {
	mux.HandleFunc("GET "+StatsPath, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("gc") != "" {
			runtime.GC()
			debug.FreeOSMemory()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(RuntimeStats{Goroutines: runtime.NumGoroutine(), HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc, StackInuse: ms.StackInuse})
	})
	mux.HandleFunc(ProfilePath, pprof.Index)
	mux.HandleFunc(ProfilePath+"profile", pprof.Profile)
}

// StatsClient reads RuntimeStats from servers started by Serve, summed.
func StatsClient(bases ...string) func(ctx context.Context, gc bool) (RuntimeStats, error) {
	return func(ctx context.Context, gc bool) (RuntimeStats, error) {
		var sum RuntimeStats
		for _, base := range bases {
			s, err := readStats(ctx, base, gc)
			if err != nil {
				return sum, err
			}
			sum.Goroutines += s.Goroutines
			sum.HeapInuse += s.HeapInuse
			sum.HeapAlloc += s.HeapAlloc
			sum.StackInuse += s.StackInuse
		}
		return sum, nil
	}
}

func readStats(ctx context.Context, base string, gc bool) (RuntimeStats, error) {
	u := base + StatsPath
	if gc {
		u += "?gc=1"
	}
	var s RuntimeStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return s, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, fmt.Errorf("loadtest: server stats: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return s, fmt.Errorf("loadtest: server stats: %s: %s", res.Status, b)
	}
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("loadtest: server stats: %w", err)
	}
	// Read to EOF so that the connection is reused: an abandoned one is a
	// goroutine of the server's until it notices, counted in the figures.
	_, _ = io.Copy(io.Discard, res.Body)
	return s, nil
}

// FetchProfile writes the server's CPU profile over the next d to w.
func FetchProfile(ctx context.Context, base string, d time.Duration, w io.Writer) error {
	u := fmt.Sprintf("%s%sprofile?seconds=%d", base, ProfilePath, max(1, int(d.Round(time.Second)/time.Second)))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("loadtest: CPU profile: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("loadtest: CPU profile: %s", res.Status)
	}
	_, err = io.Copy(w, res.Body)
	return err
}
