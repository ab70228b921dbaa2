package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The example configuration file is complete and valid, the file is read
// strictly, and flags given on the command line win over it.
func TestGatewayConfigFile(t *testing.T) {
	example := filepath.Join("..", "..", "docs", "gateway.example.yaml")
	c, err := parseGatewayConfig([]string{"--config", example})
	if err != nil {
		t.Fatalf("example configuration: %v", err)
	}
	if c.Listen != "127.0.0.1:8080" || c.MaxMessageBytes != 1<<20 || !c.Metrics {
		t.Fatalf("example configuration read as %+v", c)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "gw.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("listen: 0.0.0.0:9000\ncall_timeout: 7s\nevents_per_second: 10\nredis: redis://r:6379/0\n")
	c, err = parseGatewayConfig([]string{"--config", file, "--listen", "127.0.0.1:9100"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9100" {
		t.Errorf("listen = %q: the flag must win over the file", c.Listen)
	}
	if c.CallTimeout != 7*time.Second || c.EventsPerSecond != 10 || c.Redis != "redis://r:6379/0" {
		t.Errorf("file values not applied: %+v", c)
	}
	// Flags after --config win too, and the order does not matter.
	c, err = parseGatewayConfig([]string{"--call-timeout", "3s", "--config", file})
	if err != nil || c.CallTimeout != 3*time.Second || c.Listen != "0.0.0.0:9000" {
		t.Errorf("flag before --config: %+v, %v", c, err)
	}

	write("listen: 0.0.0.0:9000\nlisten_adress: typo\n")
	if _, err := parseGatewayConfig([]string{"--config", file}); err == nil || !strings.Contains(err.Error(), "listen_adress") {
		t.Errorf("an unknown key must be refused by name, got %v", err)
	}
	if _, err := parseGatewayConfig([]string{"--config", filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("a missing file must be an error")
	}
}

// docs/gateway.example.yaml starts a gateway as is, from any working
// directory: its keys_file is read from the config file's folder, and the
// keys of docs/keys.example.yaml authenticate with their bounds. An exported
// $SMCP_API_KEY (the client setup of docs/OPERATIONS.md) does not stop it.
func TestGatewayExampleFilesLoad(t *testing.T) {
	t.Setenv("SMCP_API_KEY", "the-clients-key")
	example, err := filepath.Abs(filepath.Join("..", "..", "docs", "gateway.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // nowhere near docs/
	c, err := parseGatewayConfig([]string{"--config", example, "--listen", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(example), "keys.example.yaml"); c.KeysFile != want {
		t.Fatalf("keys_file = %q, want %q (relative to the config file)", c.KeysFile, want)
	}
	cfg, err := c.gatewayConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("example configuration does not load: %v", err)
	}
	gw, err := gateway.Start(cfg, c.Listen)
	if err != nil {
		t.Fatalf("example configuration does not start: %v", err)
	}
	defer func() { _ = gw.Stop() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(key string) (*agent.Client, error) {
		return agent.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: key, NoReconnect: true}, "assistant")
	}
	if _, err := dial("the-clients-key"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("$SMCP_API_KEY must not be a gateway key when a keys file is set: %v", err)
	}
	a, err := dial("example-agent-key")
	if err != nil {
		t.Fatalf("example agent key: %v", err)
	}
	defer a.Close()
	if err := a.Join(ctx, "office-2"); err == nil || !strings.Contains(err.Error(), "office-2") {
		t.Errorf("the example agent key is bound to office-1, joined office-2: %v", err)
	}
	if err := a.Join(ctx, "office-1"); err != nil {
		t.Errorf("example agent key in office-1: %v", err)
	}
	// The operator key evicts the agent holding office-1 (the console's
	// eviction); the agent key may not.
	evict := func(key string) error {
		c := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connecttest.Headers(rpc.DefaultAPIKeyHeader, key))
		_, err := c.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "office-1"})
		return err
	}
	if err := evict("example-agent-key"); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("the example agent key evicted: %v", err)
	}
	if err := evict("example-operator-key"); err != nil {
		t.Errorf("the example operator key may not evict: %v", err)
	}

	// An explicit --api-key with a keys file is a contradiction.
	c, err = parseGatewayConfig([]string{"--config", example, "--api-key", "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.gatewayConfig(slog.New(slog.DiscardHandler)); err == nil {
		t.Error("--api-key with a keys file was accepted")
	}
}

// buildGatewayConfig is the gateway's configuration from an --insecure
// command line with args.
func buildGatewayConfig(t *testing.T, args ...string) (gateway.Config, error) {
	t.Helper()
	c, err := parseGatewayConfig(append([]string{"--insecure"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	return c.gatewayConfig(slog.New(slog.DiscardHandler))
}

// The MCP session bounds reach the front end from flags, the environment
// and the file; -1 lifts the per-address one, 0 is refused.
func TestMCPSessionLimitFlags(t *testing.T) {
	cfg, err := buildGatewayConfig(t)
	if err != nil || cfg.MCP.MaxSessions != mcpfront.DefaultMaxSessions || cfg.MCP.MaxSessionsPerAddr != mcpfront.DefaultMaxSessionsPerAddr {
		t.Errorf("defaults: %+v, %v", cfg.MCP, err)
	}
	cfg, err = buildGatewayConfig(t, "--max-mcp-sessions", "10", "--max-mcp-sessions-per-addr", "-1")
	if err != nil || cfg.MCP.MaxSessions != 10 || cfg.MCP.MaxSessionsPerAddr != -1 {
		t.Errorf("flags: %+v, %v", cfg.MCP, err)
	}
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("max_mcp_sessions_per_addr: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || cfg.MCP.MaxSessionsPerAddr != 3 {
		t.Errorf("file: %+v, %v", cfg.MCP, err)
	}
	t.Setenv("SMCP_MAX_MCP_SESSIONS_PER_ADDR", "5")
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || cfg.MCP.MaxSessionsPerAddr != 5 {
		t.Errorf("environment over file: %+v, %v", cfg.MCP, err)
	}
	for _, args := range [][]string{{"--max-mcp-sessions-per-addr", "0"}, {"--max-mcp-sessions", "0"}, {"--max-mcp-sessions", "-1"}} {
		if _, err := buildGatewayConfig(t, args...); err == nil || !strings.Contains(err.Error(), "--max-mcp-sessions") {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// The bounds of MCP sessions per key, listen streams and office views
// reach the front end from flags and the file, with their defaults; -1
// lifts the per-address and per-key ones, 0 is refused naming the flag.
func TestMCPStreamAndViewBoundFlags(t *testing.T) {
	// Per key sessions; listen streams: total, per address, per key; views:
	// total, per key.
	got := func(o mcpfront.Options) [6]int {
		return [6]int{o.MaxSessionsPerKey, o.MaxListenStreams, o.MaxListenStreamsPerAddr, o.MaxListenStreamsPerKey,
			o.MaxOfficeViews, o.MaxOfficeViewsPerKey}
	}
	cfg, err := buildGatewayConfig(t)
	want := [6]int{mcpfront.DefaultMaxSessionsPerKey, mcpfront.DefaultMaxListenStreams, mcpfront.DefaultMaxListenStreamsPerAddr,
		mcpfront.DefaultMaxListenStreamsPerKey, mcpfront.DefaultMaxOfficeViews, mcpfront.DefaultMaxOfficeViewsPerKey}
	if err != nil || got(cfg.MCP) != want {
		t.Errorf("defaults: %v, %v", got(cfg.MCP), err)
	}
	cfg, err = buildGatewayConfig(t, "--max-mcp-sessions-per-key", "-1", "--max-mcp-listen-streams", "9",
		"--max-mcp-listen-streams-per-addr", "-1", "--max-mcp-listen-streams-per-key", "4",
		"--max-mcp-office-views", "7", "--max-mcp-office-views-per-key", "-1")
	if want := [6]int{-1, 9, -1, 4, 7, -1}; err != nil || got(cfg.MCP) != want {
		t.Errorf("flags: %v, %v", got(cfg.MCP), err)
	}
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("max_mcp_listen_streams_per_key: 3\nmax_mcp_office_views: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || cfg.MCP.MaxListenStreamsPerKey != 3 || cfg.MCP.MaxOfficeViews != 5 {
		t.Errorf("file: %+v, %v", got(cfg.MCP), err)
	}
	for _, flag := range []string{"--max-mcp-sessions-per-key", "--max-mcp-listen-streams", "--max-mcp-listen-streams-per-addr",
		"--max-mcp-listen-streams-per-key", "--max-mcp-office-views", "--max-mcp-office-views-per-key"} {
		if _, err := buildGatewayConfig(t, flag, "0"); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s 0: %v, want an error naming the flag", flag, err)
		}
	}
}

// The Redis registry's bounds come from flags or the file; a claim bound
// not above the heartbeat TTL is refused (a claim may wait a TTL for a dead
// node's heartbeat to lapse).
func TestRedisRegistryTimeoutFlags(t *testing.T) {
	cfg, err := buildGatewayConfig(t)
	if err != nil || cfg.RedisRegistry.Timeout != cluster.DefaultTimeout || cfg.RedisRegistry.ClaimTimeout != cluster.DefaultClaimTimeout {
		t.Errorf("defaults: %+v, %v", cfg.RedisRegistry, err)
	}
	cfg, err = buildGatewayConfig(t, "--redis-timeout", "2s", "--redis-claim-timeout", "9s")
	if err != nil || cfg.RedisRegistry.Timeout != 2*time.Second || cfg.RedisRegistry.ClaimTimeout != 9*time.Second {
		t.Errorf("flags: %+v, %v", cfg.RedisRegistry, err)
	}
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("redis_timeout: 1s\nredis_claim_timeout: 4s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || cfg.RedisRegistry.Timeout != time.Second || cfg.RedisRegistry.ClaimTimeout != 4*time.Second {
		t.Errorf("file: %+v, %v", cfg.RedisRegistry, err)
	}
	for _, args := range [][]string{{"--redis-timeout", "0"}, {"--redis-claim-timeout", "3s", "--redis-ttl", "3s"}} {
		if _, err := buildGatewayConfig(t, args...); err == nil || !strings.Contains(err.Error(), "--redis-") {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// --redis-cluster, $SMCP_REDIS_CLUSTER or the file's redis_cluster makes
// --redis a Redis Cluster's seeds.
func TestRedisClusterFlag(t *testing.T) {
	cfg, err := buildGatewayConfig(t)
	if err != nil || cfg.RedisCluster {
		t.Errorf("default: %v, %v", cfg.RedisCluster, err)
	}
	if cfg, err = buildGatewayConfig(t, "--redis-cluster"); err != nil || !cfg.RedisCluster {
		t.Errorf("flag: %v, %v", cfg.RedisCluster, err)
	}
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("redis_cluster: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || !cfg.RedisCluster {
		t.Errorf("file: %v, %v", cfg.RedisCluster, err)
	}
	t.Setenv("SMCP_REDIS_CLUSTER", "true")
	if cfg, err = buildGatewayConfig(t); err != nil || !cfg.RedisCluster {
		t.Errorf("environment: %v, %v", cfg.RedisCluster, err)
	}
}

// Where the other nodes reach this one comes from --advertise-url or the
// file's advertise_url; unset, the gateway derives it from its listener.
func TestAdvertiseURLFlag(t *testing.T) {
	cfg, err := buildGatewayConfig(t)
	if err != nil || cfg.AdvertiseURL != "" {
		t.Errorf("default: %q, %v", cfg.AdvertiseURL, err)
	}
	cfg, err = buildGatewayConfig(t, "--advertise-url", "http://10.0.0.5:8080")
	if err != nil || cfg.AdvertiseURL != "http://10.0.0.5:8080" {
		t.Errorf("flag: %q, %v", cfg.AdvertiseURL, err)
	}
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("advertise_url: gw-2.internal:8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = buildGatewayConfig(t, "--config", file); err != nil || cfg.AdvertiseURL != "gw-2.internal:8080" {
		t.Errorf("file: %q, %v", cfg.AdvertiseURL, err)
	}
}

// --oidc-* flags and keys make tokens of the issuer sign in beside the keys
// (or alone), mapped by the claims named, and the MCP endpoint a protected
// resource of that issuer.
func TestGatewayTokenFlags(t *testing.T) {
	t.Setenv("SMCP_API_KEY", "") // the tokens-only case must have no key
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, "gw-aud", key)
	log := slog.New(slog.DiscardHandler)
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("oidc_issuer: "+iss.URL+"\noidc_audience: gw-aud\noidc_offices_claim: smcp_offices\n"+
		"oidc_roles_claim: smcp_roles\noidc_name_claim: preferred_username\noidc_scopes: smcp.agent, smcp.computer\n"+
		"oidc_jwks_refresh: 1s\noidc_max_token_lifetime: 2h\npublic_url: https://gw.example.com\napi_key: a-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseGatewayConfig([]string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.gatewayConfig(log)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.MCP.AuthorizationServers, []string{iss.URL}) || !slices.Equal(cfg.MCP.Scopes, []string{"smcp.agent", "smcp.computer"}) ||
		cfg.MCP.PublicURL != "https://gw.example.com" {
		t.Fatalf("MCP options %+v", cfg.MCP)
	}
	ctx := t.Context()
	p, err := cfg.Auth.Authenticate(ctx, tokentest.Sign(t, key, iss.Claims("u1", map[string]any{
		"smcp_offices": []string{"o1"}, "smcp_roles": "agent", "preferred_username": "alice",
	})))
	if err != nil || p.Name != "alice" || !slices.Equal(p.Offices, []string{"o1"}) || !slices.Equal(p.Roles, []string{"agent"}) {
		t.Fatalf("token: %+v %v", p, err)
	}
	if p, err := cfg.Auth.Authenticate(ctx, "a-key"); err != nil || p.ID != "api-key" {
		t.Fatalf("the API key beside tokens: %+v %v", p, err)
	}
	_, err = cfg.Auth.Authenticate(ctx, tokentest.Sign(t, key, iss.Claims("u1", map[string]any{
		"smcp_offices": []string{"o1"}, "smcp_roles": "agent", "preferred_username": "alice",
		"exp": time.Now().Add(3 * time.Hour).Unix(),
	})))
	if err == nil || !strings.Contains(err.Error(), "above the maximum of 2h0m0s") {
		t.Fatalf("a 3 h token under oidc_max_token_lifetime 2h: %v", err)
	}

	// Tokens alone: no key needed to start.
	c, err = parseGatewayConfig([]string{"--oidc-issuer", iss.URL, "--oidc-audience", "gw-aud"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = c.gatewayConfig(log); err != nil {
		t.Fatalf("tokens only: %v", err)
	}
	if _, err := cfg.Auth.Authenticate(ctx, "a-key"); err == nil {
		t.Fatal("a key signed in to a tokens-only gateway")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--oidc-issuer", iss.URL}, "audience is required"},
		{[]string{"--oidc-issuer", "http://id.example.com", "--oidc-audience", "a"}, "must be https"},
		{[]string{"--oidc-issuer", iss.URL, "--oidc-audience", "a", "--insecure"}, "--insecure"},
		{[]string{"--oidc-issuer", iss.URL, "--oidc-audience", "a", "--oidc-jwks-refresh", "0s"}, "--oidc-jwks-refresh"},
		{[]string{"--oidc-issuer", iss.URL, "--oidc-audience", "a", "--oidc-max-token-lifetime", "0s"}, "--oidc-max-token-lifetime"},
	} {
		c, err := parseGatewayConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.gatewayConfig(log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// --mcp-allowed-origins (and mcp_allowed_origins, $SMCP_MCP_ALLOWED_ORIGINS)
// reach the MCP front end's allow-list; the flag wins over the file.
func TestGatewayMCPOrigins(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("api_key: a-key\nmcp_allowed_origins: https://a.example.com, https://b.example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want []string
	}{
		{[]string{"--config", file}, "", []string{"https://a.example.com", "https://b.example.com"}},
		{[]string{"--config", file, "--mcp-allowed-origins", "*"}, "", []string{"*"}},
		{[]string{"--api-key", "a-key"}, "https://c.example.com", []string{"https://c.example.com"}},
	} {
		t.Setenv("SMCP_MCP_ALLOWED_ORIGINS", tc.env)
		c, err := parseGatewayConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := c.gatewayConfig(log)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.MCP.AllowedOrigins, tc.want) {
			t.Errorf("%v (env %q): allowed origins %v, want %v", tc.args, tc.env, cfg.MCP.AllowedOrigins, tc.want)
		}
	}
}

// examples/governance/gateway.yaml loads as its README starts it: its keys
// sign in and its rule sets become the core's guard.
func TestGovernanceExampleLoads(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	c, err := parseGatewayConfig([]string{"--config", "examples/governance/gateway.yaml", "--listen", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.gatewayConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Core.Guard == nil {
		t.Fatal("the example's rule sets are not applied")
	}
	for key, rules := range map[string][]string{"full-key": nil, "echo-only-key": {"echo-only"}, "slow-key": nil} {
		p, err := cfg.Auth.Authenticate(context.Background(), key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !slices.Equal(p.RuleSets, rules) {
			t.Errorf("%s: rule sets %v, want %v", key, p.RuleSets, rules)
		}
	}
	// A token mapping to a rule set the keys file lacks stops the gateway.
	c.OIDCIssuer, c.OIDCAudience, c.OIDCRulesClaim = "https://idp.example.com", "smcp", "groups"
	c.OIDCRuleSets = claimRuleSets{"admins": {"no-such-set"}}
	if _, err := c.gatewayConfig(slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), `"no-such-set"`) {
		t.Fatalf("an unknown rule set was accepted: %v", err)
	}
}

// --oidc-rule-sets-by-claim reads value=set[+set],... and writes it back
// the same way (a flag given beside --config is set again over the file).
func TestClaimRuleSetsFlag(t *testing.T) {
	var m claimRuleSets
	if err := m.Set("echo-users=echo-only, interns=safe+read-only"); err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "echo-users=echo-only,interns=safe+read-only" {
		t.Fatalf("String() = %q", got)
	}
	if err := m.Set("nothing"); err == nil {
		t.Fatal("a value without sets was accepted")
	}
}

// --allowed-hosts (allowed_hosts, $SMCP_ALLOWED_HOSTS) reaches the gateway;
// an origin list entry that is not an origin stops the start, naming its
// flag.
func TestGatewayAllowedHostsAndOrigins(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("api_key: a-key\nallowed_hosts: gw.internal, gw2.internal\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string
		want []string
	}{
		{[]string{"--config", file}, "", []string{"gw.internal", "gw2.internal"}},
		{[]string{"--config", file, "--allowed-hosts", "gw3.internal"}, "", []string{"gw3.internal"}},
		{[]string{"--api-key", "a-key"}, "gw4.internal", []string{"gw4.internal"}},
	} {
		t.Setenv("SMCP_ALLOWED_HOSTS", tc.env)
		c, err := parseGatewayConfig(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := c.gatewayConfig(log)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.AllowedHosts, tc.want) {
			t.Errorf("%v (env %q): allowed hosts %v, want %v", tc.args, tc.env, cfg.AllowedHosts, tc.want)
		}
	}
	t.Setenv("SMCP_ALLOWED_HOSTS", "")
	for _, flag := range []string{"--cors-origins", "--mcp-allowed-origins"} {
		c, err := parseGatewayConfig([]string{"--api-key", "a-key", flag, "https://ok.example, https://a*b.example"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.gatewayConfig(log); err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), "a*b.example") {
			t.Errorf("%s with a bad entry: %v", flag, err)
		}
	}
}

// --metrics-listen serves /metrics to scrapers without a key on its own
// address; the gateway's port serves it to operator keys only.
func TestGatewayMetricsListen(t *testing.T) {
	metricsAddr := freeAddr(t)
	base, _ := startGatewayProcess(t, []string{"SMCP_API_KEY=metrics-listen-test-key"}, "--metrics-listen", metricsAddr)
	get := func(url, key string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("http://"+metricsAddr+"/metrics", ""); s != http.StatusOK {
		t.Errorf("--metrics-listen /metrics without a key: %d", s)
	}
	if s := get(base+"/metrics", ""); s != http.StatusUnauthorized {
		t.Errorf("public /metrics without a key: %d, want 401", s)
	}
	if s := get(base+"/metrics", "metrics-listen-test-key"); s != http.StatusOK {
		t.Errorf("public /metrics with the gateway's one key (an operator's): %d", s)
	}
}

// The rule sets reload with the keys file, both or neither: a rule set
// changed under an unchanged key applies from the next call; a bad rule
// keeps the keys and rules in force.
func TestRulesReloadWithTheKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const keys = "keys:\n  - {key: k-1, id: one, rules: [no-shell]}\n"
	write("rule_sets:\n  no-shell:\n    - deny: {tool: other}\n" + keys)
	c, err := parseGatewayConfig([]string{"--keys-file", path, "--listen", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.gatewayConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	visible := func(key string) bool {
		p, err := cfg.Auth.Authenticate(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Core.Guard.Visible(&core.Call{Principal: p, Event: smcp.EventToolCall,
			Office: "o", Computer: "pc", Tool: &core.ToolView{Name: "shell", Exposed: "shell"}})
	}
	if !visible("k-1") {
		t.Fatal("a rule denying another tool hides shell")
	}
	write("rule_sets:\n  no-shell:\n    - deny: {tool: shell}\n" + keys)
	if _, err := c.keyRing.Reload(); err != nil {
		t.Fatal(err)
	}
	if visible("k-1") {
		t.Fatal("the reloaded rule set does not apply")
	}
	write("rule_sets:\n  no-shell:\n    - deny: {cel: 'tool.name ==='}\nkeys:\n  - {key: k-2, id: one, rules: [no-shell]}\n")
	if _, err := c.keyRing.Reload(); err == nil || !strings.Contains(err.Error(), "no-shell") {
		t.Fatalf("a bad rule was reloaded: %v", err)
	}
	if visible("k-1") {
		t.Fatal("a refused reload changed the rules or the keys")
	}
}
