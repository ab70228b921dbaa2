package mcpfront_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// notes records the notifications one MCP client gets.
type notes struct {
	mu   sync.Mutex
	list []string
	ch   chan string
}

func (n *notes) add(s string) {
	n.mu.Lock()
	n.list = append(n.list, s)
	n.mu.Unlock()
	n.ch <- s
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.list...)
}

func recording(n *notes) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { n.add("tools") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { n.add("resources") },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			n.add("updated " + r.Params.URI)
		},
	}
}

// An MCP session of office A never sees office B's tools, resources or
// notifications, cannot read or subscribe to B's URIs, and its session id
// is worth nothing to a caller of office B or to another key.
func TestOfficeIsolation(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	fxA, fxB := newFixture(t, "pca"), newFixture(t, "pcb")
	docs := docsServer(t) // the same dpe:// host in both offices
	startComputer(t, g, keyA, "A", "pca", map[string]string{"fx": fxA.url, "docs": docs})
	startComputer(t, g, keyB, "B", "pcb", map[string]string{"fx": fxB.url, "docs": docs})
	notesA := &notes{ch: make(chan string, 64)}
	notesB := &notes{ch: make(chan string, 64)}
	a, err := dialVersion(t, g, "A", "2025-11-25", recording(notesA), "x-api-key", keyA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dialVersion(t, g, "B", "2025-11-25", recording(notesB), "x-api-key", keyB)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	for name := range toolNames(t, a) {
		if !strings.HasPrefix(name, "pca__") {
			t.Errorf("office A lists %s", name)
		}
	}
	for r, err := range a.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.URI, "pcb") || r.Meta["a2c_computer"] != "pca" {
			t.Errorf("office A lists %s of %v", r.URI, r.Meta["a2c_computer"])
		}
	}
	if _, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "pcb__echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("office A called a tool of office B")
	}
	if _, err := a.ReadResource(ctx, &mcp.ReadResourceParams{URI: fxB.window}); err == nil {
		t.Error("office A read a window of office B")
	}
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: fxB.window}); err == nil {
		t.Error("office A subscribed to a window of office B")
	}
	if err := b.Subscribe(ctx, &mcp.SubscribeParams{URI: fxB.window}); err != nil {
		t.Fatal(err)
	}

	// Office B's life: a computer joins and leaves, a tool is added, a
	// window changes. B's own session sees each of them.
	fxB2 := newFixture(t, "pcb2")
	leave := startComputer(t, g, keyB, "B", "pcb2", map[string]string{"fx": fxB2.url})
	waitNote(t, notesB, "tools")
	mcp.AddTool(fxB.Server, &mcp.Tool{Name: "more"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	waitNote(t, notesB, "tools")
	fxB.setWindow("changed")
	waitNote(t, notesB, "updated "+fxB.window)
	leave()
	waitNote(t, notesB, "tools")

	// Then office A's own change: the first and only thing A hears.
	fxA2 := newFixture(t, "pca2")
	startComputer(t, g, keyA, "A", "pca2", map[string]string{"fx": fxA2.url})
	waitNote(t, notesA, "tools")
	for _, n := range notesA.all() {
		if n != "tools" && n != "resources" {
			t.Errorf("office A heard %q", n)
		}
	}
	if got := strings.Join(notesA.all(), ","); strings.Count(got, "tools") != 1 {
		t.Errorf("office A heard %s, want one tools/list_changed (its own computer)", got)
	}

	// A's session id used on office B, or with another key on office A.
	for _, c := range []struct{ office, key string }{{"B", keyB}, {"A", keyAll}} {
		req, _ := http.NewRequest(http.MethodPost, endpoint(g, c.office),
			strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", a.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("x-api-key", c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "pca__") {
			t.Errorf("office A's session on /mcp/%s with another key: %d %s", c.office, resp.StatusCode, body)
		}
	}
}

// waitNote waits for the notification want, skipping others.
func waitNote(t *testing.T, n *notes, want string) {
	t.Helper()
	for {
		if got := recv(t, n.ch, want); got == want {
			return
		}
	}
}
