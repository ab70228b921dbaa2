package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	smcpcomputer "github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/policy"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// govKeys is the keys file of examples/governance: the test holds its keys
// to what their comments say.
const govKeys = "../examples/governance/keys.yaml"

// govEnv is a gateway with the rules of examples/governance and tokens of
// an issuer whose "groups" claim value echo-users maps to echo-only, and a
// computer hosting @modelcontextprotocol/server-everything (over stdio,
// from npm) joined with full-key.
type govEnv struct {
	g     *gateway.Running
	pc    *smcpcomputer.Computer
	iss   *tokentest.Issuer
	key   *tokentest.Key
	tools []string // every tool the computer lists
	// version is the computer's protocol, prefix what its tools' names
	// start with in it.
	version, prefix string
}

const govOffice, govPC = "gov", "pc"

func startGovernance(t *testing.T, protocol string) *govEnv {
	t.Helper()
	entry := nodetest.EverythingServer(t, filepath.Join("..", "test", "npm-mcp"))
	rules, err := policy.LoadFile(govKeys)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := core.LoadKeyRing(govKeys)
	if err != nil {
		t.Fatal(err)
	}
	e := &govEnv{key: tokentest.NewKey(t, "gov", jose.ES256)}
	e.iss = tokentest.New(t, tokenAudience, e.key)
	v, err := tokens.NewVerifier(tokens.Config{Issuer: e.iss.URL, Audience: tokenAudience,
		RulesClaim: "groups", RuleSetsByClaim: map[string][]string{"echo-users": {"echo-only"}}})
	if err != nil {
		t.Fatal(err)
	}
	e.g = startGateway(t, gateway.Config{Auth: tokens.Authenticator{Keys: ring, Tokens: v},
		Core: core.Config{Guard: policy.NewEngine(rules)}, Quotas: govQuotas(t), Logger: testLogger})
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	pc, err := smcpcomputer.New(smcpcomputer.Options{Name: govPC, Protocol: protocol, Confirm: tools.ConfirmAuto, Logger: testLogger,
		Config: &config.Config{Servers: map[string]*config.Server{
			"everything": systest.Server(t, "everything", map[string]any{"command": "node", "args": []any{entry, "stdio"}}),
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	link, err := pc.Connect(ctx, smcpcomputer.Gateway{URL: e.g.URL, Office: govOffice, APIKey: "full-key", Dial: sioclient.Options{Logger: testLogger}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	e.pc, e.version = pc, protocol
	e.prefix = ""
	if protocol != smcpcomputer.Protocol02 {
		e.prefix = "everything__" // the bundle id of the server (0.3+)
	}
	// The server adds tools once initialized (tools/list_changed): wait
	// for the list to settle on the ones the test calls.
	full := rpcClient(t, e.g.URL, false, connecttest.Headers(rpc.DefaultAPIKeyHeader, "full-key"))
	testwait.Until(t, "server-everything's tools", func() bool {
		res, err := full.GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: govOffice, Computer: govPC})
		if err != nil {
			return false
		}
		e.tools = e.tools[:0]
		for _, tool := range res.GetTools() {
			e.tools = append(e.tools, tool.GetName())
		}
		return slices.Contains(e.tools, e.prefix+"echo") && slices.Contains(e.tools, e.prefix+"get-sum")
	})
	return e
}

// calls is how many tool calls reached the computer.
func (e *govEnv) calls() int { return len(e.pc.History()) }

func (e *govEnv) token(t *testing.T, groups ...string) string {
	t.Helper()
	return tokentest.Sign(t, e.key, e.iss.Claims("sub-"+strings.Join(groups, "-"), map[string]any{"groups": groups}))
}

// frontEnd is one way of listing and calling the computer's tools.
type frontEnd struct {
	list func(t *testing.T) []string
	// call calls a tool; refused is the refusal's text, "" when the call
	// was made.
	call func(t *testing.T, tool string) (refused string)
}

// checkEchoOnly: the caller lists only echo, and every other tool is
// refused without reaching the computer; echo itself is called.
func (e *govEnv) checkEchoOnly(t *testing.T, fe frontEnd, echo string) {
	t.Helper()
	if got := fe.list(t); !slices.Equal(got, []string{echo}) {
		t.Fatalf("listed %v, want only %s", got, echo)
	}
	before := e.calls()
	for _, tool := range []string{"get-sum", "get-env"} {
		if refused := fe.call(t, strings.Replace(echo, "echo", tool, 1)); refused == "" {
			t.Fatalf("%s was called", tool)
		}
	}
	if n := e.calls() - before; n != 0 {
		t.Fatalf("%d refused calls reached the computer", n)
	}
	if refused := fe.call(t, echo); refused != "" {
		t.Fatalf("echo refused: %s", refused)
	}
	if n := e.calls() - before; n != 1 {
		t.Fatalf("echo: %d calls reached the computer, want 1", n)
	}
}

// checkFull: the caller lists every tool and calls another than echo.
func (e *govEnv) checkFull(t *testing.T, fe frontEnd, sum string) {
	t.Helper()
	if got := fe.list(t); len(got) != len(e.tools) {
		t.Fatalf("listed %v, want all of %v", got, e.tools)
	}
	before := e.calls()
	if refused := fe.call(t, sum); refused != "" {
		t.Fatalf("%s refused: %s", sum, refused)
	}
	if n := e.calls() - before; n != 1 {
		t.Fatalf("%d calls reached the computer, want 1", n)
	}
}

func sumParams(t *testing.T, tool string) *structpb.Struct {
	t.Helper()
	m := map[string]any{"message": "hi"}
	if strings.Contains(tool, "sum") {
		m = map[string]any{"a": 40, "b": 2}
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sioFront is a Socket.IO agent with key.
func (e *govEnv) sioFront(t *testing.T, key string) frontEnd {
	t.Helper()
	v, err := smcp.ParseProfile(e.version)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: e.g.URL, APIKey: key, Logger: testLogger, Version: v.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), govOffice); err != nil {
		t.Fatal(err)
	}
	return frontEnd{
		list: func(t *testing.T) []string {
			ret, err := ag.GetTools(ctxT(t), govPC)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range ret.GetTools() {
				names = append(names, tool.GetName())
			}
			return names
		},
		call: func(t *testing.T, tool string) string {
			res, err := ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Agent: "bot", ReqId: agent.NewReqID(), Computer: govPC,
				ToolName: tool, Params: sumParams(t, tool), Timeout: 20})
			if err != nil {
				se, ok := smcp.AsError(err)
				if !ok || se.Code != smcp.CodeForbidden || !strings.Contains(se.Message, `rule sets "echo-only"`) {
					t.Fatalf("%s: refusal %v is not a flat 403 naming the rule set", tool, err)
				}
				return se.Message
			}
			if res.GetIsError() {
				t.Fatalf("%s failed: %v", tool, res)
			}
			return ""
		},
	}
}

// rpcFront is the Connect API (grpc: over gRPC, h2c) with the credential
// in header h.
func (e *govEnv) rpcFront(t *testing.T, grpc bool, h, cred string) frontEnd {
	t.Helper()
	c := rpcClient(t, e.g.URL, grpc, connecttest.Headers(h, cred, rpc.AgentHeader, "bot"))
	return frontEnd{
		list: func(t *testing.T) []string {
			ret, err := c.GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: govOffice, Computer: govPC})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range ret.GetTools() {
				names = append(names, tool.GetName())
			}
			return names
		},
		call: func(t *testing.T, tool string) string {
			res, err := c.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: govOffice, Computer: govPC, ToolName: tool,
				Params: sumParams(t, tool), Timeout: 20})
			if err != nil {
				se, ok := rpc.SMCPError(err)
				if connect.CodeOf(err) != connect.CodePermissionDenied || !ok || se.Code != smcp.CodeForbidden ||
					!strings.Contains(se.Message, `rule sets "echo-only"`) {
					t.Fatalf("%s: refusal %v is not PermissionDenied naming the rule set", tool, err)
				}
				return se.Message
			}
			if res.GetResult().GetIsError() {
				t.Fatalf("%s failed: %v", tool, res)
			}
			return ""
		},
	}
}

// headerTransport sets a header on every request.
type headerTransport struct{ k, v string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.k, h.v)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpFront is the go-sdk MCP client in protocol version (2025-11-25: a
// session; 2026-07-28: stateless requests).
func (e *govEnv) mcpFront(t *testing.T, version, h, cred string) frontEnd {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "governance-test", Version: "1"}, nil)
	cs, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: e.g.URL + "/mcp/" + govOffice, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{h, cred}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return frontEnd{
		list: func(t *testing.T) []string {
			var names []string
			for tool, err := range cs.Tools(ctxT(t), nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
			}
			return names
		},
		call: func(t *testing.T, tool string) string {
			args := map[string]any{"message": "hi"}
			if strings.Contains(tool, "sum") {
				args = map[string]any{"a": 40, "b": 2}
			}
			res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: tool, Arguments: args})
			switch {
			case err != nil:
				// A tool this caller is not shown is unknown to its
				// session: the go-sdk refuses it.
				if !strings.Contains(err.Error(), "unknown tool") {
					t.Fatalf("%s: %v", tool, err)
				}
				return err.Error()
			case res.IsError:
				text := ""
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				if !strings.Contains(text, `rule sets "echo-only"`) {
					t.Fatalf("%s failed: %s", tool, text)
				}
				return text
			}
			return ""
		},
	}
}

// The rules of examples/governance on every front end, with the
// third-party server-everything behind a real computer: echo-only-key, and
// a token whose groups claim maps to echo-only, list only echo and are
// refused on any other tool without the computer seeing the call, naming
// the rule set; full-key lists and calls everything.
func TestGovernanceEchoOnlyOnEveryFrontEnd(t *testing.T) {
	for _, protocol := range []string{smcpcomputer.Protocol02, smcpcomputer.Protocol04} {
		t.Run(protocol, func(t *testing.T) { testGovernance(t, protocol) })
	}
}

func testGovernance(t *testing.T, protocol string) {
	e := startGovernance(t, protocol)
	if !slices.Contains(e.tools, e.prefix+"get-env") {
		t.Fatalf("server-everything lists no get-env: %v", e.tools)
	}
	echo, sum := e.prefix+"echo", e.prefix+"get-sum"
	// One agent seat per office: each caller in turn.
	t.Run("socket.io", func(t *testing.T) {
		e.checkEchoOnly(t, e.sioFront(t, "echo-only-key"), echo)
	})
	t.Run("socket.io full", func(t *testing.T) {
		e.checkFull(t, e.sioFront(t, "full-key"), sum)
	})
	for _, grpc := range []bool{false, true} {
		name := map[bool]string{false: "connect", true: "grpc"}[grpc]
		t.Run(name, func(t *testing.T) {
			e.checkEchoOnly(t, e.rpcFront(t, grpc, rpc.DefaultAPIKeyHeader, "echo-only-key"), echo)
			e.checkFull(t, e.rpcFront(t, grpc, rpc.DefaultAPIKeyHeader, "full-key"), sum)
		})
		t.Run(name+" token", func(t *testing.T) {
			e.checkEchoOnly(t, e.rpcFront(t, grpc, "Authorization", "Bearer "+e.token(t, "echo-users")), echo)
			e.checkFull(t, e.rpcFront(t, grpc, "Authorization", "Bearer "+e.token(t, "staff")), sum)
		})
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("mcp "+version, func(t *testing.T) {
			e.checkEchoOnly(t, e.mcpFront(t, version, "x-api-key", "echo-only-key"), "pc__"+echo)
			e.checkFull(t, e.mcpFront(t, version, "x-api-key", "full-key"), "pc__"+sum)
		})
		t.Run("mcp token "+version, func(t *testing.T) {
			e.checkEchoOnly(t, e.mcpFront(t, version, "Authorization", "Bearer "+e.token(t, "echo-users")), "pc__"+echo)
		})
	}
}

// answerRecorder is an http.RoundTripper keeping the status and
// Retry-After of the last answer to a POST: the go-sdk client reports a
// refusal's error without them.
type answerRecorder struct {
	next       http.RoundTripper
	mu         sync.Mutex
	status     int
	retryAfter string
}

func (a *answerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		a.mu.Lock()
		a.status, a.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		a.mu.Unlock()
	}
	return resp, err
}

func (a *answerRecorder) last() (status int, retryAfter string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.status, a.retryAfter
}

// mcpRetryAfterMS is the retry_after_ms of the flat 429 in the data of
// the JSON-RPC error err wraps; it fails the test when there is none.
func mcpRetryAfterMS(t *testing.T, err error) float64 {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("%v is not a JSON-RPC error", err)
	}
	var flat struct {
		Code    int            `json:"code"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(je.Data, &flat); err != nil || flat.Code != 429 {
		t.Fatalf("JSON-RPC error %v: data %s is not a flat 429", je, je.Data)
	}
	ms, _ := flat.Details["retry_after_ms"].(float64)
	return ms
}

// postToolCall POSTs a tools/call of tool to the MCP endpoint url as a
// client of protocol version would (sid: its session, 2025-11-25; none
// for 2026-07-28, whose request carries its _meta) and returns the answer
// and its body.
func postToolCall(t *testing.T, url, version, sid, tool string) (*http.Response, []byte) {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	if sid == "" {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// quotaGuard refuses every tool call as a quota does: 429 with the wait.
type quotaGuard struct{}

func (quotaGuard) Admit(_ context.Context, c *core.Call) (func(core.Outcome), error) {
	if c.Event == smcp.EventToolCall {
		return nil, smcp.Errorf(core.CodeTooManyPending, "calls per second of key %q exceeded", c.Principal.ID).
			WithDetails(map[string]any{"retry_after_ms": 1500})
	}
	return nil, nil
}

func (quotaGuard) Visible(*core.Call) bool { return true }

// A quota's refusal reaches each front end in its form: a flat 429 with
// details.retry_after_ms on Socket.IO; on Connect HTTP 429 with
// Retry-After (whole seconds, rounded up); on gRPC ResourceExhausted with
// google.rpc.RetryInfo; on MCP (a session, a 2026-07-28 request) HTTP 429
// with Retry-After, the JSON-RPC error's data carrying the code and the
// wait. The computer sees none of the calls.
func TestGuardRefusalOnEveryFrontEnd(t *testing.T) {
	g := startGateway(t, gateway.Config{Core: core.Config{Guard: quotaGuard{}}})
	pc := dialComputer(t, g.URL, "pc", "o")

	a := dialAgent(t, g.URL, "alice", "o")
	_, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Agent: "alice", Computer: "pc", ToolName: "echo", ReqId: "r1", Timeout: 5})
	if se, ok := smcp.AsError(err); !ok || se.Code != 429 || se.Details["retry_after_ms"] != 1500.0 {
		t.Fatalf("Socket.IO: %v", err)
	}
	a.Close()

	// alice's seat is freed as the gateway sees her connection end: until
	// then the office refuses another agent (403).
	var resp *http.Response
	testwait.Until(t, "alice's seat freed", func() bool {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, g.URL+"/smcp.v1.AgentService/CallTool",
			strings.NewReader(`{"office_id":"o","computer":"pc","tool_name":"echo"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode != http.StatusForbidden
	})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("Connect: HTTP %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	_, err = rpcClient(t, g.URL, true).CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo"})
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		t.Fatalf("gRPC: %v", err)
	}
	var wait time.Duration
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			if ri, ok := v.(*errdetails.RetryInfo); ok {
				wait = ri.GetRetryDelay().AsDuration()
			}
		}
	}
	if wait != 1500*time.Millisecond {
		t.Fatalf("gRPC RetryInfo %v, want 1.5s", wait)
	}

	// MCP: the POST of the tools/call is answered 429 with Retry-After,
	// its body the JSON-RPC error whose data is the flat 429: in a session
	// (the go-sdk client, which reports the error, and the same POST sent
	// raw) and in a 2026-07-28 request.
	rec := &answerRecorder{next: http.DefaultTransport}
	c := mcp.NewClient(&mcp.Implementation{Name: "quota-test", Version: "1"}, nil)
	cs, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/o", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: rec}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	_, err = cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc__echo", Arguments: map[string]any{}})
	status, retryAfter := rec.last()
	if status != http.StatusTooManyRequests || retryAfter != "2" || mcpRetryAfterMS(t, err) != 1500 {
		t.Fatalf("MCP session: HTTP %d, Retry-After %q, %v", status, retryAfter, err)
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		sid := ""
		if version == "2025-11-25" {
			sid = cs.ID()
		}
		resp, body := postToolCall(t, g.URL+"/mcp/o", version, sid, "pc__echo")
		var answer struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if err := json.Unmarshal(body, &answer); err != nil || answer.Error == nil {
			t.Fatalf("MCP %s raw: HTTP %d, body %s", version, resp.StatusCode, body)
		}
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || mcpRetryAfterMS(t, answer.Error) != 1500 {
			t.Fatalf("MCP %s raw: HTTP %d, Retry-After %q, Content-Type %q, body %s", version, resp.StatusCode,
				resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), body)
		}
	}

	if got := pc.receivedEvents(); slices.Contains(got, smcp.EventToolCall) {
		t.Fatalf("a refused call reached the computer: %v", got)
	}
}
