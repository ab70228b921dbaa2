package rpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// API keys of the test gateway.
const (
	keyAgent    = "k-agent"    // agent, offices A and B, no fixed name
	keyAlice    = "k-alice"    // agent "alice", office A
	keyOfficeB  = "k-office-b" // agent, office B only
	keyComputer = "k-computer" // computer, any office
	officeA     = "office-a"
	officeB     = "office-b"
)

func testKeys(t testing.TB) *core.KeyRing {
	t.Helper()
	ring, err := core.NewKeyRing(
		core.Key{Key: keyAgent, ID: "agent", Roles: []string{smcp.RoleAgent}, Offices: []string{officeA, officeB}},
		core.Key{Key: keyAlice, ID: "alice", Roles: []string{smcp.RoleAgent}, Offices: []string{officeA}, Name: "alice"},
		core.Key{Key: keyOfficeB, ID: "office-b", Roles: []string{smcp.RoleAgent}, Offices: []string{officeB}},
		core.Key{Key: keyComputer, ID: "computer", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// startGateway serves a gateway on loopback until the test ends.
func startGateway(t testing.TB, mutate ...func(*gateway.Config)) *gateway.Running {
	t.Helper()
	cfg := gateway.Config{
		Auth: testKeys(t),
		// A short margin keeps the gateway-made timeout answer fast to test.
		Core: core.Config{ToolCallMargin: 50 * time.Millisecond},
		RPC:  rpc.Options{CORSOrigins: []string{"https://app.example"}},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	return systest.Gateway(t, cfg)
}

// Clients of the three protocols.
type protocol struct {
	name string
	opts []connect.ClientOption
	http func() *http.Client
}

func h1Client() *http.Client { return &http.Client{Transport: &http.Transport{}} }

// h2cClient speaks HTTP/2 without TLS (prior knowledge), as gRPC needs.
func h2cClient() *http.Client {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: p}}
}

var protocols = []protocol{
	{name: "connect-h1", http: h1Client},
	{name: "connect-h2c", http: h2cClient},
	{name: "grpc", opts: []connect.ClientOption{connect.WithGRPC()}, http: h2cClient},
	{name: "grpc-web", opts: []connect.ClientOption{connect.WithGRPCWeb()}, http: h1Client},
}

func newClient(t testing.TB, g *gateway.Running, p protocol, headers ...string) smcpv1connect.AgentServiceClient {
	t.Helper()
	hc := p.http()
	t.Cleanup(hc.CloseIdleConnections)
	opts := append([]connect.ClientOption{connecttest.Headers(headers...)}, p.opts...)
	return smcpv1connect.NewAgentServiceClient(hc, g.URL, opts...)
}

// fakeComputer is a minimal Socket.IO computer (no MCP, no go-sdk) joined
// through the gateway with sioclient. It answers every client: event from a
// fixed catalogue, can hang a tool call until cancelled, answers protocol
// errors on demand (4201, 4202, 4204, 400) and records what reached it: what
// the error, deadline and isolation tests need to control exactly.
// TestRealComputer covers the real computer runtime.
type fakeComputer struct {
	name, office string
	c            *sioclient.Client

	mu       sync.Mutex
	requests []request // every client: event received
	cancels  []*smcpv1.AgentCallData
	changed  chan struct{} // signalled on every request or cancel
	running  map[string]context.CancelFunc
}

type request struct {
	event   string
	payload json.RawMessage
}

func startComputer(t testing.TB, g *gateway.Running, name, office string, mutate ...func(*sioclient.Options)) *fakeComputer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := sioclient.Options{URL: g.URL, APIKey: keyComputer, NoReconnect: true}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := sioclient.Dial(ctx, opts)
	if err != nil {
		t.Fatalf("computer dial: %v", err)
	}
	comp := &fakeComputer{name: name, office: office, c: c, changed: make(chan struct{}, 1), running: map[string]context.CancelFunc{}}
	t.Cleanup(c.Close)
	for _, ev := range smcp.EventNames(smcp.Routed) {
		c.Handle(ev, func(ctx context.Context, payload json.RawMessage) (any, error) {
			comp.record(request{ev, payload})
			return comp.answer(ctx, ev, payload)
		})
	}
	c.On(smcp.NotifyToolCallCancel, func(payload json.RawMessage) {
		m := &smcpv1.AgentCallData{}
		if err := smcp.Unmarshal(payload, m); err != nil {
			t.Errorf("computer: bad cancel %s: %v", payload, err)
			return
		}
		comp.mu.Lock()
		comp.cancels = append(comp.cancels, m)
		if stop := comp.running[m.GetReqId()]; stop != nil {
			stop()
		}
		comp.mu.Unlock()
		comp.signal()
	})
	if err := c.JoinOffice(ctx, smcp.RoleComputer, name, office); err != nil {
		t.Fatalf("computer join: %v", err)
	}
	return comp
}

func (c *fakeComputer) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *fakeComputer) record(r request) {
	c.mu.Lock()
	c.requests = append(c.requests, r)
	c.mu.Unlock()
	c.signal()
}

// waitFor polls cond (under the computer's lock) until it holds or 10 s pass.
func (c *fakeComputer) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-deadline.C:
			t.Fatalf("computer %s: timed out waiting for %s", c.name, what)
		}
	}
}

// lastRequest returns the last payload received for event.
func (c *fakeComputer) lastRequest(t *testing.T, event string) json.RawMessage {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.requests) - 1; i >= 0; i-- {
		if c.requests[i].event == event {
			return c.requests[i].payload
		}
	}
	t.Fatalf("computer %s never received %s", c.name, event)
	return nil
}

func textContent(text string) []*structpb.Struct {
	s, _ := structpb.NewStruct(map[string]any{"type": "text", "text": text})
	return []*structpb.Struct{s}
}

var catalogue = []*smcpv1.DPEDocumentSummary{
	{DocRef: "rpt-2026", Uri: "dpe://docs/rpt-2026", FileUri: "file:///srv/docs/rpt-2026.md", FileType: "markdown", Title: "Annual report 2026", PageCount: 3, Keywords: []string{"report", "finance"}, Server: "docs"},
	{DocRef: "memo-7", Uri: "dpe://docs/memo-7", FileUri: "file:///srv/docs/memo-7.txt", FileType: "text", Title: "Memo 7", PageCount: 1, Server: "docs"},
}

func (c *fakeComputer) answer(ctx context.Context, event string, payload json.RawMessage) (any, error) {
	switch event {
	case smcp.EventGetTools:
		schema, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}})
		return &smcpv1.GetToolsRet{Tools: []*smcpv1.SMCPTool{
			{Name: "echo", Description: "echoes text", ParamsSchema: schema, Meta: &structpb.Struct{}},
			{Name: "hang", Description: "never answers until cancelled", ParamsSchema: &structpb.Struct{}, Meta: &structpb.Struct{}},
		}, ReqId: reqID(payload)}, nil
	case smcp.EventGetConfig:
		return &smcpv1.GetComputerConfigRet{Servers: map[string]*smcpv1.MCPServerConfig{
			"docs": {Name: "docs", Type: "stdio", ServerParameters: &smcpv1.MCPServerConfig_Stdio{Stdio: &smcpv1.StdioServerParameters{
				Command: "smcp", Args: []string{"docs", "/srv/docs"}, Encoding: "utf-8", EncodingErrorHandler: "strict",
			}}},
		}}, nil
	case smcp.EventToolCall:
		req := &smcpv1.ToolCallReq{}
		if err := smcp.Unmarshal(payload, req); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		switch req.GetToolName() {
		case "echo":
			return &smcpv1.CallToolResult{Content: textContent("echo: " + req.GetParams().GetFields()["text"].GetStringValue())}, nil
		case "hang":
			ctx, stop := context.WithCancel(ctx)
			c.mu.Lock()
			c.running[req.GetReqId()] = stop
			c.mu.Unlock()
			<-ctx.Done()
			meta, _ := structpb.NewStruct(map[string]any{"a2c_cancelled": true, "a2c_cancel_reason": "agent_requested"})
			return &smcpv1.CallToolResult{Content: textContent("cancelled"), IsError: new(true), Meta: meta}, nil
		}
		return nil, smcp.Errorf(smcp.CodeNotFound, "tool %q not found", req.GetToolName())
	case smcp.EventGetDesktop:
		req := &smcpv1.GetDeskTopReq{}
		if err := smcp.Unmarshal(payload, req); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		desktops := []string{"window://docs/status\n\n2 documents", "window://docs/help"}
		if req.DesktopSize != nil && int(req.GetDesktopSize()) < len(desktops) {
			desktops = desktops[:max(req.GetDesktopSize(), 0)]
		}
		return &smcpv1.GetDeskTopRet{Desktops: desktops, ReqId: req.GetReqId()}, nil
	case smcp.EventGetFinder:
		req := &smcpv1.GetFinderReq{}
		if err := smcp.Unmarshal(payload, req); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		if req.Limit != nil && (req.GetLimit() < 1 || req.GetLimit() > 100) {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "limit must be in 1..100")
		}
		var docs []*smcpv1.DPEDocumentSummary
		for _, d := range catalogue {
			if matches(d, req.GetKeywords()) {
				docs = append(docs, d)
			}
		}
		return &smcpv1.GetFinderRet{Documents: docs, TotalCount: int32(len(docs)), ReqId: req.GetReqId()}, nil
	case smcp.EventReadResource:
		req := &smcpv1.ReadResourceReq{}
		if err := smcp.Unmarshal(payload, req); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		switch uri := req.GetUri(); {
		case uri == "dpe://docs/rpt-2026?format=markdown":
			text := "# Annual report 2026\n\nRevenue grew."
			mime := "text/markdown"
			return &smcpv1.ReadResourceRet{Contents: []*smcpv1.ResourceContents{{Uri: uri, MimeType: &mime, Text: &text}}, ReqId: req.GetReqId()}, nil
		case uri == "dpe://docs/rpt-2026/pages/9":
			return nil, smcp.Errorf(smcp.CodePageOutOfRange, "page 9 out of range (3 pages)")
		case strings.HasPrefix(uri, "dpe://docs/"):
			return nil, smcp.Errorf(smcp.CodeDocumentNotFound, "document not found").WithDetails(map[string]any{"uri": uri})
		default:
			return nil, smcp.Errorf(smcp.CodeInvalidDPEURI, "invalid dpe:// URI %q", uri)
		}
	}
	return nil, smcp.Errorf(smcp.CodeBadRequest, "unexpected event %s", event)
}

func matches(d *smcpv1.DPEDocumentSummary, keywords []string) bool {
	if len(keywords) == 0 {
		return true
	}
	for _, k := range keywords {
		if strings.Contains(strings.ToLower(d.GetTitle()), strings.ToLower(k)) {
			return true
		}
	}
	return false
}

func reqID(payload json.RawMessage) string {
	var m struct {
		ReqID string `json:"req_id"`
	}
	_ = json.Unmarshal(payload, &m)
	return m.ReqID
}

// wantCode checks that err is a Connect error with code and an smcp.v1.Error
// detail with smcpCode.
func wantCode(t *testing.T, err error, code connect.Code, smcpCode int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %v (SMCP %d), got success", code, smcpCode)
	}
	if got := connect.CodeOf(err); got != code {
		t.Fatalf("want code %v, got %v: %v", code, got, err)
	}
	e, ok := rpc.SMCPError(err)
	if !ok {
		t.Fatalf("error %v has no smcp.v1.Error detail", err)
	}
	if e.Code != smcpCode {
		t.Fatalf("want SMCP code %d, got %d (%s)", smcpCode, e.Code, e.Message)
	}
	if e.Message == "" {
		t.Fatalf("SMCP detail without a message")
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
