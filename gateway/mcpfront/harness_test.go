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
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
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
	return systest.Gateway(t, cfg)
}

// fixture is the test MCP server (internal/testmcp: echo, add with an output
// schema, slow, which records its start and its cancellation, pid) with one
// window, over streamable HTTP on loopback.
type fixture struct {
	*testmcp.Fixture
	url       string
	window    string
	started   chan string
	cancelled chan string
}

func newFixture(t testing.TB, name string) *fixture {
	t.Helper()
	fx := testmcp.New(name, testmcp.Options{})
	f := &fixture{Fixture: fx, window: "window://" + name + "/status", started: fx.SlowStarted, cancelled: fx.SlowCancelled}
	fx.SetWindow(testmcp.Window{URI: f.window, Text: "status of " + name})
	srv := httptest.NewServer(fx.HTTPHandler())
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// setWindow sets the window's text and tells the subscribed computer
// (resources/updated), which then tells its office update_desktop.
func (f *fixture) setWindow(text string) {
	_ = f.SetWindowText(context.Background(), f.window, text)
}

// docsServer is the real document server over a folder with one two-page
// Markdown document, on loopback.
func docsServer(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "plan.md"), "---\ntitle: Launch plan\n---\n\n# Launch plan\n\nWe launch in March.\n\n## Risks\n\nNone known.\n")
	return systest.Docs(t, t.Context(), docserver.Options{Root: root, Host: docHost, Logger: quiet}, false)
}

// startComputer runs a real computer named name in office, hosting the MCP
// servers at urls (server name → URL), joined through the gateway with key.
// The returned function makes it leave.
func startComputer(t testing.TB, g *gateway.Running, key, office, name string, urls map[string]string) func() {
	t.Helper()
	return startComputerWith(t, g, key, office, name, urls, computer.Gateway{Dial: sioclient.Options{Logger: quiet}})
}

// startComputerWith is startComputer with the link's options (gw's URL,
// office and key are filled in) and, optionally, the computer's protocol
// (default 0.2).
func startComputerWith(t testing.TB, g *gateway.Running, key, office, name string, urls map[string]string, gw computer.Gateway, protocol ...string) func() {
	t.Helper()
	servers := map[string]*config.Server{}
	for n, u := range urls {
		s, err := config.NewServer(n, map[string]any{"url": u})
		if err != nil {
			t.Fatal(err)
		}
		servers[n] = s
	}
	opts := computer.Options{Name: name, Config: &config.Config{Servers: servers}, Confirm: tools.ConfirmAuto, Logger: quiet, KeepAlive: -1}
	if len(protocol) > 0 {
		opts.Protocol = protocol[0]
	}
	pc, err := computer.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	// Closed on every way out, a failed start included: a computer left
	// running holds its MCP servers' streams open, and their httptest
	// servers' Close would wait for them forever.
	var link *computer.Link
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if link != nil {
				link.Close()
			}
			pc.Close()
		}
	}
	t.Cleanup(stop)
	ctx := ctxT(t)
	if err := pc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	gw.URL, gw.Office, gw.APIKey = g.URL, office, key
	link, err = pc.Connect(ctx, gw)
	if err != nil {
		t.Fatalf("computer %s joins office %s: %v", name, office, err)
	}
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

// sessionVersion is the MCP revision of dial: the newest with sessions,
// which most tests are about (stateless_test.go tests 2026-07-28).
const sessionVersion = "2025-11-25"

// dial connects the go-sdk MCP client to office with the header pairs
// given (e.g. "x-api-key", keyA), in an MCP session (sessionVersion).
func dial(t testing.TB, g *gateway.Running, office string, opts *mcp.ClientOptions, kv ...string) (*mcp.ClientSession, error) {
	t.Helper()
	return dialVersion(t, g, office, sessionVersion, opts, kv...)
}

// dialVersion is dial asking for an MCP protocol version ("" the client's
// latest: 2026-07-28, served without a session).
func dialVersion(t testing.TB, g *gateway.Running, office, version string, opts *mcp.ClientOptions, kv ...string) (*mcp.ClientSession, error) {
	t.Helper()
	return dialVia(t, g, office, version, http.DefaultTransport, opts, kv...)
}

// dialVia is dialVersion over the HTTP transport base (e.g. one binding
// another local address).
func dialVia(t testing.TB, g *gateway.Running, office, version string, base http.RoundTripper, opts *mcp.ClientOptions, kv ...string) (*mcp.ClientSession, error) {
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
		HTTPClient: &http.Client{Transport: headers{h: h, base: base}}}
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
