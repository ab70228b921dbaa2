package mcpfront_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// Keys of the tests: keyA may enter office A only, keyB office B only,
// keyAll every office.
const (
	keyA    = "mcp-key-office-a-5b1e"
	keyB    = "mcp-key-office-b-c93a"
	keyAll  = "mcp-key-every-office-0d4f"
	docHost = "org.mcpfront.docs"
)

// waitFor bounds every wait: a deadline for a broken test, not a timing
// assertion.
const waitFor = 30 * time.Second

var quiet = slog.New(slog.DiscardHandler)

// testLogger shows the gateway's warnings when SMCP_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("SMCP_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return quiet
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// startGateway serves a gateway with the three test keys on loopback.
func startGateway(t testing.TB, cfg gateway.Config) *gateway.Running {
	t.Helper()
	ring, err := core.NewKeyRing(
		core.Key{Key: keyA, ID: "a", Offices: []string{"A"}},
		core.Key{Key: keyB, ID: "b", Offices: []string{"B"}},
		core.Key{Key: keyAll, ID: "all"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth == nil {
		cfg.Auth = ring
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	g, err := gateway.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Stop(); err != nil {
			t.Errorf("gateway stop: %v", err)
		}
	})
	return g
}

// fixture is a real go-sdk MCP server over streamable HTTP on loopback: the
// tools echo (read-only), add (with an output schema) and slow (records
// its start and its cancellation), and one window.
type fixture struct {
	name      string
	server    *mcp.Server
	url       string
	window    string
	started   chan string
	cancelled chan string

	mu     sync.Mutex
	text   string
	listed bool
}

func newFixture(t testing.TB, name string) *fixture {
	t.Helper()
	f := &fixture{name: name, window: "window://" + name + "/status",
		started: make(chan string, 16), cancelled: make(chan string, 16)}
	f.server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	type echoIn struct {
		Text string `json:"text" jsonschema:"text to echo"`
	}
	mcp.AddTool(f.server, &mcp.Tool{Name: "echo", Description: "Echo the text, prefixed with the server's name.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Text}}}, nil, nil
		})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	type addOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(f.server, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	type slowIn struct {
		Tag     string  `json:"tag"`
		Seconds float64 `json:"seconds"`
	}
	mcp.AddTool(f.server, &mcp.Tool{Name: "slow", Description: "Wait the given seconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			f.started <- in.Tag
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + in.Tag}}}, nil, nil
			case <-ctx.Done():
				f.cancelled <- in.Tag
				return nil, nil, ctx.Err()
			}
		})
	f.setWindow("status of " + name)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.server }, nil))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// setWindow (re)sets the window's text and tells the subscribed computer
// (resources/updated), which then tells its office update_desktop.
func (f *fixture) setWindow(text string) {
	f.mu.Lock()
	f.text = text
	first := !f.listed
	f.listed = true
	f.mu.Unlock()
	if first {
		f.server.AddResource(&mcp.Resource{URI: f.window, Name: f.name + " status", MIMEType: "text/plain"},
			func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				f.mu.Lock()
				defer f.mu.Unlock()
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: f.text}}}, nil
			})
		return
	}
	_ = f.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: f.window})
}

// docsServer is the real document server over a folder with one two-page
// Markdown document, on loopback.
func docsServer(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	md := "---\ntitle: Launch plan\n---\n\n# Launch plan\n\nWe launch in March.\n\n## Risks\n\nNone known.\n"
	if err := os.WriteFile(filepath.Join(root, "plan.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := docserver.New(docserver.Options{Root: root, Host: docHost, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// startComputer runs a real computer named name in office, hosting the MCP
// servers at urls (server name → URL), joined through the gateway with key.
// The returned function makes it leave.
func startComputer(t testing.TB, g *gateway.Running, key, office, name string, urls map[string]string) func() {
	t.Helper()
	return startComputerWith(t, g, key, office, name, urls, computer.Gateway{Dial: sioclient.Options{Logger: quiet}})
}

// startComputerWith is startComputer with the link's options (gw's URL,
// office and key are filled in).
func startComputerWith(t testing.TB, g *gateway.Running, key, office, name string, urls map[string]string, gw computer.Gateway) func() {
	t.Helper()
	servers := map[string]*config.Server{}
	for n, u := range urls {
		s, err := config.NewServer(n, map[string]any{"url": u})
		if err != nil {
			t.Fatal(err)
		}
		servers[n] = s
	}
	pc, err := computer.New(computer.Options{Name: name, Config: &config.Config{Servers: servers},
		Confirm: tools.ConfirmAuto, Logger: quiet, KeepAlive: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	if err := pc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	gw.URL, gw.Office, gw.APIKey = g.URL, office, key
	link, err := pc.Connect(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			link.Close()
			pc.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// headers adds fixed headers to every request of an MCP client.
type headers struct {
	h    http.Header
	base http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

func endpoint(g *gateway.Running, office string) string { return g.URL + "/mcp/" + office }

// dial connects the go-sdk MCP client to office with the header pairs
// given (e.g. "x-api-key", keyA).
func dial(t testing.TB, g *gateway.Running, office string, opts *mcp.ClientOptions, kv ...string) (*mcp.ClientSession, error) {
	t.Helper()
	return dialVersion(t, g, office, "", opts, kv...)
}

// dialVersion is dial asking for an MCP protocol version ("" the client's
// latest, which the stateful endpoint answers by negotiating an older one).
func dialVersion(t testing.TB, g *gateway.Running, office, version string, opts *mcp.ClientOptions, kv ...string) (*mcp.ClientSession, error) {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpfront-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint(g, office), MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headers{h: h, base: http.DefaultTransport}}}
	cs, err := c.Connect(ctxT(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

func mustDial(t testing.TB, g *gateway.Running, office string, opts *mcp.ClientOptions, kv ...string) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(t, g, office, opts, kv...)
	if err != nil {
		t.Fatalf("connect to office %s: %v", office, err)
	}
	return cs
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func toolNames(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(ctxT(t), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = tool
	}
	return out
}

func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d contents: %+v", len(res.Content), res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	return tc.Text
}

func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

var errNone = errors.New("none")

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%T %v", err, err)
}

func mcpOpts(perSecond float64, burst int) mcpfront.Options {
	return mcpfront.Options{EventsPerSecond: perSecond, EventBurst: burst}
}
