package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"
	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const (
	tokenAudience = "smcp-gateway"
	// computerKey is the API key the test's computers join with: keys and
	// tokens sign in side by side.
	computerKey = "computer-key-for-token-tests-8e21"
)

// tokenEnv is a gateway taking API keys and the tokens of an issuer on
// loopback, with computers pc-a in office A and pc-b in office B.
type tokenEnv struct {
	g        *gateway.Running
	iss      *tokentest.Issuer
	rsa, ec  *tokentest.Key
	log      *testwait.Buffer
	mu       sync.Mutex
	minted   []string // every token the test made, none of which may be logged
	verifier *tokens.Verifier
}

func startTokenGateway(t *testing.T) *tokenEnv {
	t.Helper()
	e := &tokenEnv{rsa: tokentest.NewKey(t, "rsa-2026", jose.RS256), ec: tokentest.NewKey(t, "ec-2026", jose.ES256), log: &testwait.Buffer{}}
	e.iss = tokentest.New(t, tokenAudience, e.rsa, e.ec)
	log := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v, err := tokens.NewVerifier(tokens.Config{
		Issuer: e.iss.URL, Audience: tokenAudience,
		OfficesClaim: "smcp_offices", RolesClaim: "smcp_roles", NameClaim: "preferred_username",
		RefreshInterval: 20 * time.Millisecond, Logger: log.With("component", "tokens"),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.verifier = v
	ring, err := core.NewKeyRing(core.Key{Key: computerKey, ID: "computers", Roles: []string{smcp.RoleComputer}})
	if err != nil {
		t.Fatal(err)
	}
	e.g = startGateway(t, gateway.Config{
		Auth:   tokens.Authenticator{Keys: ring, Tokens: v},
		Logger: log,
		// The authorization server is the verifier's issuer: not set here.
		MCP: mcpfront.Options{Scopes: []string{"smcp.agent"}},
	})
	dialComputerWithKey(t, e.g.URL, computerKey, "pc-a", "A")
	dialComputerWithKey(t, e.g.URL, computerKey, "pc-b", "B")
	return e
}

// token signs claims for agent name in offices, with extra claims over
// them.
func (e *tokenEnv) token(t *testing.T, key *tokentest.Key, name string, offices []string, extra map[string]any) string {
	t.Helper()
	c := e.iss.Claims("sub-"+name, map[string]any{
		"smcp_offices": offices, "smcp_roles": []string{smcp.RoleAgent}, "preferred_username": name,
	})
	for k, v := range extra {
		c[k] = v
	}
	return e.keep(tokentest.Sign(t, key, c))
}

func (e *tokenEnv) keep(token string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.minted = append(e.minted, token)
	return token
}

// noTokenLogged fails t if any token made, or its signature, is in the log.
func (e *tokenEnv) noTokenLogged(t *testing.T) {
	t.Helper()
	log := e.log.String()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, tok := range e.minted {
		sig := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(log, tok) || (sig != "" && strings.Contains(log, sig)) {
			t.Fatalf("a token is in the log:\n%s", log)
		}
	}
}

// rawSIOConnect opens a WebSocket to the gateway's Socket.IO endpoint and
// connects to /smcp with the auth object, as a browser or Node client does
// with io(url, {auth: {token}}); it returns the connection and the
// namespace's answer (40: connected, 44: connect_error).
func rawSIOConnect(t *testing.T, gwURL string, auth map[string]any) (*ws.Conn, string) {
	t.Helper()
	url := "ws" + strings.TrimPrefix(gwURL, "http") + "/socket.io/?EIO=4&transport=websocket"
	c, _, err := ws.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(testwait.Timeout))
	if _, open, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(open, []byte("0{")) {
		t.Fatalf("Engine.IO open: %q %v", open, err)
	}
	b, err := json.Marshal(auth)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(ws.TextMessage, append([]byte("40/smcp,"), b...)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("namespace connect: %v", err)
	}
	return c, string(msg)
}

// rawJoin sends server:join_office as agent name and returns its ack.
func rawJoin(t *testing.T, c *ws.Conn, name, office string) string {
	t.Helper()
	b, err := json.Marshal([]any{smcp.EventJoinOffice, map[string]any{"role": smcp.RoleAgent, "name": name, "office_id": office}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(ws.TextMessage, append([]byte("42/smcp,7"), b...)); err != nil {
		t.Fatal(err)
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("join ack: %v", err)
		}
		if s := string(msg); strings.HasPrefix(s, "43/smcp,7") {
			return strings.TrimPrefix(s, "43/smcp,7")
		}
	}
}

// rpcVariants are the Connect API's protocols, each with how the token is
// sent: the console's (Connect JSON from the browser, the token in the key
// header it sends), Connect, gRPC (h2c) and gRPC-Web with
// "Authorization: Bearer".
func rpcVariants(t *testing.T, base, token string) map[string]smcpv1connect.AgentServiceClient {
	bearer := connecttest.Headers("Authorization", "Bearer "+token)
	return map[string]smcpv1connect.AgentServiceClient{
		"console (connect+json, x-api-key)": rpcClient(t, base, false, connect.WithProtoJSON(),
			connecttest.Headers("x-api-key", token, "Origin", base)),
		"connect":  rpcClient(t, base, false, bearer),
		"grpc":     rpcClient(t, base, true, bearer),
		"grpc-web": rpcClient(t, base, false, connect.WithGRPCWeb(), bearer),
	}
}

// dialMCPToken connects the go-sdk MCP client to office with the token as
// "Authorization: Bearer".
func dialMCPToken(t *testing.T, base, office, token string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "token-test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp/" + office, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, base: http.DefaultTransport}}}
	cs, err := c.Connect(ctxT(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// mcpInitialize posts an MCP initialize to office with the headers given
// and returns the answer's status and WWW-Authenticate.
func mcpInitialize(t *testing.T, base, office string, h http.Header) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/mcp/"+office, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		// Free the office's seat the session took.
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			del, _ := http.NewRequestWithContext(ctxT(t), http.MethodDelete, base+"/mcp/"+office, nil)
			del.Header = h.Clone()
			del.Header.Set("Mcp-Session-Id", sid)
			if r, err := http.DefaultClient.Do(del); err == nil {
				_ = r.Body.Close()
			}
		}
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// A token of the issuer signs in on every front end, as the principal its
// claims describe: alice's token (offices [A], agent, name alice) acts in
// office A and nowhere else, on Socket.IO (key header and auth.token), the
// Connect API (Connect, gRPC, gRPC-Web, and the console's browser calls)
// and MCP.
func TestTokenSignsInOnEveryFrontEnd(t *testing.T) {
	e := startTokenGateway(t)
	ctx := ctxT(t)
	alice := e.token(t, e.rsa, "alice", []string{"A"}, nil)
	bob := e.token(t, e.ec, "bob", []string{"B"}, nil) // ES256

	t.Run("socket.io key header", func(t *testing.T) {
		c, err := sioclient.Dial(ctx, sioclient.Options{URL: e.g.URL, APIKey: alice, Logger: testLogger, NoReconnect: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wantCode(t, c.JoinOffice(ctx, smcp.RoleAgent, "alice", "B"), smcp.CodeForbidden)
		wantCode(t, c.JoinOffice(ctx, smcp.RoleAgent, "mallory", "A"), smcp.CodeForbidden)
		wantCode(t, c.JoinOffice(ctx, smcp.RoleComputer, "alice", "A"), smcp.CodeForbidden)
		if err := c.JoinOffice(ctx, smcp.RoleAgent, "alice", "A"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Request(ctx, smcp.EventGetTools, map[string]any{"agent": "alice", "req_id": "r1", "computer": "pc-a"}); err != nil {
			t.Fatalf("get_tools in office A: %v", err)
		}
		wantCode(t, func() error {
			_, err := c.Request(ctx, smcp.EventGetTools, map[string]any{"agent": "alice", "req_id": "r2", "computer": "pc-b"})
			return err
		}(), smcp.CodeNotFound) // pc-b is in office B: not reachable from A
	})

	t.Run("socket.io auth.token", func(t *testing.T) {
		c, answer := rawSIOConnect(t, e.g.URL, map[string]any{"token": bob})
		if !strings.HasPrefix(answer, "40/smcp,") {
			t.Fatalf("connect with auth.token: %s", answer)
		}
		if ack := rawJoin(t, c, "bob", "A"); !strings.Contains(ack, "false") || !strings.Contains(ack, "may not enter") {
			t.Fatalf("bob's token joined office A: %s", ack)
		}
		if ack := rawJoin(t, c, "bob", "B"); !strings.HasPrefix(ack, "[true") {
			t.Fatalf("bob's token in office B: %s", ack)
		}
	})

	t.Run("connect api", func(t *testing.T) {
		for name, client := range rpcVariants(t, e.g.URL, alice) {
			t.Run(name, func(t *testing.T) {
				res, err := client.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "A", Computer: "pc-a"})
				if err != nil {
					t.Fatalf("GetTools in office A: %v", err)
				}
				if len(res.GetTools()) != 1 {
					t.Fatalf("tools %v", res.GetTools())
				}
				_, err = client.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "B", Computer: "pc-b"})
				if connect.CodeOf(err) != connect.CodePermissionDenied {
					t.Fatalf("alice's token in office B: %v", err)
				}
			})
		}
	})

	t.Run("mcp", func(t *testing.T) {
		cs, err := dialMCPToken(t, e.g.URL, "A", alice)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if !slices.Contains(names, "pc-a__echo") || slices.Contains(names, "pc-b__echo") {
			t.Fatalf("tools of office A through alice's token: %v", names)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc-a__echo", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call: %+v %v", res, err)
		}
		status, challenge := mcpInitialize(t, e.g.URL, "B", http.Header{"Authorization": {"Bearer " + alice}})
		if status != http.StatusForbidden || challenge != "" {
			t.Fatalf("alice's token on office B's MCP endpoint: %d %q", status, challenge)
		}
	})
	e.noTokenLogged(t)
}

// Each kind of bad token is refused with 401 on every front end, the log
// says why, and no log line holds a token.
func TestBadTokensAreRefusedOnEveryFrontEnd(t *testing.T) {
	e := startTokenGateway(t)
	ctx := ctxT(t)
	stray := tokentest.NewKey(t, "stray", jose.RS256)
	other := tokentest.New(t, tokenAudience, stray)
	cases := []struct {
		name, reason string
		token        func() string
	}{
		{"expired", "expired at", func() string {
			return e.token(t, e.rsa, "alice", []string{"A"}, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()})
		}},
		{"wrong audience", `wrong audience`, func() string {
			return e.token(t, e.rsa, "alice", []string{"A"}, map[string]any{"aud": "someone-else"})
		}},
		{"wrong issuer", "wrong issuer", func() string {
			return e.token(t, e.rsa, "alice", []string{"A"}, map[string]any{"iss": other.URL})
		}},
		{"alg none", "alg none", func() string {
			return e.keep(tokentest.Unsigned(t, e.iss.Claims("sub-alice", map[string]any{
				"smcp_offices": []string{"A"}, "smcp_roles": []string{"agent"}, "preferred_username": "alice"})))
		}},
		{"key not in the JWKS", "unknown signing key", func() string {
			return e.token(t, stray, "alice", []string{"A"}, nil)
		}},
		{"tampered signature", "bad signature", func() string {
			return e.keep(tokentest.Tampered(t, e.token(t, e.rsa, "alice", []string{"A"}, nil)))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := tc.token()
			refusals := map[string]func() error{
				"socket.io key header": func() error {
					_, err := sioclient.Dial(ctx, sioclient.Options{URL: e.g.URL, APIKey: tok, Logger: testLogger, NoReconnect: true})
					if e, ok := smcp.AsError(err); ok && e.Code == smcp.CodeUnauthenticated {
						return nil
					}
					return fmt.Errorf("dial: %v", err)
				},
				"socket.io auth.token": func() error {
					_, answer := rawSIOConnect(t, e.g.URL, map[string]any{"token": tok})
					if strings.HasPrefix(answer, "44/smcp,") && strings.Contains(answer, `"code":401`) && strings.Contains(answer, tc.reason) {
						return nil
					}
					return fmt.Errorf("connect answer %s", answer)
				},
				"mcp": func() error {
					status, challenge := mcpInitialize(t, e.g.URL, "A", http.Header{"Authorization": {"Bearer " + tok}})
					want := `Bearer resource_metadata="` + e.g.URL + `/.well-known/oauth-protected-resource/mcp/A"`
					if status == http.StatusUnauthorized && challenge == want {
						return nil
					}
					return fmt.Errorf("initialize: %d %q", status, challenge)
				},
			}
			for name, client := range rpcVariants(t, e.g.URL, tok) {
				refusals[name] = func() error {
					_, err := client.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "A", Computer: "pc-a"})
					if connect.CodeOf(err) == connect.CodeUnauthenticated && strings.Contains(err.Error(), tc.reason) {
						return nil
					}
					return fmt.Errorf("GetTools: %v", err)
				}
			}
			for name, refused := range refusals {
				before := strings.Count(e.log.String(), "token refused")
				if err := refused(); err != nil {
					t.Errorf("%s: not refused with 401 (%q): %v", name, tc.reason, err)
					continue
				}
				lines := refusalLines(e.log.String(), tc.reason)
				if after := strings.Count(e.log.String(), "token refused"); after <= before || len(lines) == 0 {
					t.Errorf("%s: no log line says %q:\n%s", name, tc.reason, e.log.String())
				}
			}
		})
	}
	e.noTokenLogged(t)
}

// refusalLines are the log's "token refused" lines that give reason.
func refusalLines(log, reason string) []string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "token refused") && strings.Contains(line, strings.ReplaceAll(reason, `"`, `\"`)) {
			out = append(out, line)
		}
	}
	return out
}

// The MCP endpoint is an OAuth protected resource: its metadata (RFC 9728)
// names the issuer, a request without credentials gets a 401 pointing to
// it; a gateway without tokens publishes none.
func TestMCPProtectedResourceMetadata(t *testing.T) {
	e := startTokenGateway(t)
	status, challenge := mcpInitialize(t, e.g.URL, "A", http.Header{})
	metaURL := e.g.URL + "/.well-known/oauth-protected-resource/mcp/A"
	if status != http.StatusUnauthorized || challenge != `Bearer resource_metadata="`+metaURL+`"` {
		t.Fatalf("no credentials: %d %q", status, challenge)
	}
	resp, err := http.Get(metaURL)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ScopesSupported        []string `json:"scopes_supported"`
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d %v", resp.StatusCode, err)
	}
	if meta.Resource != e.g.URL+"/mcp/A" || !slices.Equal(meta.AuthorizationServers, []string{e.iss.URL}) ||
		!slices.Equal(meta.BearerMethodsSupported, []string{"header"}) || !slices.Equal(meta.ScopesSupported, []string{"smcp.agent"}) {
		t.Fatalf("metadata %+v", meta)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("metadata not readable cross-origin: %q", got)
	}
	// A wrong API key is refused with the same challenge.
	if status, challenge := mcpInitialize(t, e.g.URL, "A", http.Header{"X-Api-Key": {"wrong"}}); status != http.StatusUnauthorized ||
		!strings.Contains(challenge, "resource_metadata=") {
		t.Fatalf("wrong key: %d %q", status, challenge)
	}

	keysOnly := startGateway(t, gateway.Config{Auth: mustRing(t)})
	resp, err = http.Get(keysOnly.URL + "/.well-known/oauth-protected-resource/mcp/A")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("metadata without tokens: %d", resp.StatusCode)
	}
	if status, challenge := mcpInitialize(t, keysOnly.URL, "A", http.Header{}); status != http.StatusUnauthorized ||
		strings.Contains(challenge, "resource_metadata") {
		t.Fatalf("keys only: %d %q", status, challenge)
	}
}

func mustRing(t *testing.T) *core.KeyRing {
	t.Helper()
	ring, err := core.NewKeyRing(core.Key{Key: "only-a-key"})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// The issuer rotates to a new key: tokens signed with it sign in through
// the running gateway, with no restart.
func TestTokenKeyRotationThroughTheGateway(t *testing.T) {
	e := startTokenGateway(t)
	ctx := ctxT(t)
	client := rpcClient(t, e.g.URL, false, connecttest.Headers("Authorization", "Bearer "+e.token(t, e.rsa, "alice", []string{"A"}, nil)))
	if _, err := client.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "A", Computer: "pc-a"}); err != nil {
		t.Fatal(err)
	}
	next := tokentest.NewKey(t, "rsa-2027", jose.RS256)
	tok := e.token(t, next, "alice", []string{"A"}, nil)
	rotated := rpcClient(t, e.g.URL, false, connecttest.Headers("Authorization", "Bearer "+tok))
	_, err := rotated.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "A", Computer: "pc-a"})
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("a key the issuer does not publish yet: %v", err)
	}
	e.iss.Publish(e.rsa, next)
	// Polled: the key set is fetched again at most once per refresh
	// interval (20 ms here).
	testwait.Until(t, "the new key accepted", func() bool {
		_, err := rotated.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "A", Computer: "pc-a"})
		return err == nil
	})
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: e.g.URL, APIKey: tok, Logger: testLogger, NoReconnect: true})
	if err != nil {
		t.Fatalf("socket.io with the new key: %v", err)
	}
	c.Close()
	e.noTokenLogged(t)
}
