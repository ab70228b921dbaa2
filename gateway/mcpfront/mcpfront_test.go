package mcpfront_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// office is an office A with two computers: pc1 hosting a fixture and the
// document server, pc2 hosting another fixture.
type office struct {
	g        *gateway.Running
	pc1, pc2 *fixture
}

func newOffice(t *testing.T, cfg gateway.Config) *office {
	t.Helper()
	o := &office{g: startGateway(t, cfg), pc1: newFixture(t, "pc1"), pc2: newFixture(t, "pc2")}
	startComputer(t, o.g, keyA, "A", "pc1", map[string]string{"fx": o.pc1.url, "docs": docsServer(t)})
	startComputer(t, o.g, keyA, "A", "pc2", map[string]string{"fx": o.pc2.url})
	return o
}

// The union of the office's tools, named {computer}__{tool}, with their
// descriptions, schemas and annotations; a call reaches the right computer.
func TestToolsOfEveryComputer(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	cs := mustDial(t, o.g, "A", nil, "Authorization", "Bearer "+keyA)
	tools := toolNames(t, cs)
	for _, want := range []string{"pc1__echo", "pc1__add", "pc1__slow", "pc2__echo", "pc2__slow",
		"pc1__search_documents", "pc1__list_documents"} {
		if tools[want] == nil {
			t.Errorf("tools/list lacks %s; has %v", want, keys(tools))
		}
	}
	echo := tools["pc1__echo"]
	if echo.Description != "Echo the text back, prefixed with the server name." {
		t.Errorf("description %q", echo.Description)
	}
	if echo.Annotations == nil || !echo.Annotations.ReadOnlyHint || echo.Annotations.Title != "Echo" {
		t.Errorf("annotations not carried over: %+v", echo.Annotations)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	if !strings.Contains(string(schema), `"text"`) || !strings.Contains(string(schema), `"object"`) {
		t.Errorf("input schema %s", schema)
	}
	out, _ := json.Marshal(tools["pc1__add"].OutputSchema)
	if !strings.Contains(string(out), `"sum"`) {
		t.Errorf("output schema not carried over: %s", out)
	}
	for _, pc := range []string{"pc1", "pc2"} {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: pc + "__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call %s__echo: %v %+v", pc, err, res)
		}
		if got := text(t, res); got != pc+": hi" {
			t.Errorf("%s__echo answered %q", pc, got)
		}
	}
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc2__add", Arguments: map[string]any{"a": 2, "b": 3.5}})
	if err != nil || res.IsError {
		t.Fatalf("call pc2__add: %v %+v", err, res)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"sum":5.5}` {
		t.Errorf("structured content %s", sc)
	}
	// An unknown tool is a JSON-RPC error; arguments outside the schema are
	// the computer's tool error.
	if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc3__echo"}); err == nil {
		t.Error("a tool of no computer was called")
	}
}

// Cancelling a tools/call (notifications/cancelled) reaches the MCP server
// under the computer: its handler's context ends.
func TestCancelReachesTheComputersServer(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	cs := mustDial(t, o.g, "A", nil, "x-api-key", keyA)
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc2__slow", Arguments: map[string]any{"tag": "t1", "seconds": 20}})
		errc <- err
	}()
	if tag := recv(t, o.pc2.started, "the slow call to start"); tag != "t1" {
		t.Fatalf("started %q", tag)
	}
	start := time.Now()
	cancel()
	if tag := recv(t, o.pc2.cancelled, "the computer's MCP server to see the cancellation"); tag != "t1" {
		t.Fatalf("cancelled %q", tag)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancellation took %s", d)
	}
	if err := recv(t, errc, "the call to return"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call returned %v", err)
	}
	// The session goes on.
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__echo", Arguments: map[string]any{"text": "after"}})
	if err != nil || text(t, res) != "pc1: after" {
		t.Fatalf("call after cancel: %v %+v", err, res)
	}
}

// Windows and documents are resources; the dpe:// templates are resource
// templates; reads go through the computer at every level, and errors keep
// their SMCP code in data.
func TestResources(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	cs := mustDial(t, o.g, "A", nil, "x-api-key", keyA)
	ctx := ctxT(t)
	byURI := map[string]*mcp.Resource{}
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		byURI[r.URI] = r
	}
	var doc *mcp.Resource
	for uri, r := range byURI {
		if strings.HasPrefix(uri, "dpe://"+docHost+"/") {
			doc = r
		}
	}
	if doc == nil || doc.Title != "Launch plan" || byURI[o.pc1.window] == nil || byURI[o.pc2.window] == nil ||
		byURI["dpe://"+docHost] == nil {
		t.Fatalf("resources/list: %v", keys(byURI))
	}
	var templates []string
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if want := "dpe://" + docHost + "/{doc_ref}/pages/{page_index}{?format,categories}"; !contains(templates, want) {
		t.Errorf("templates %v lack %s", templates, want)
	}

	read := func(uri string) (string, error) {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		if len(res.Contents) != 1 {
			t.Fatalf("read %s: %d contents", uri, len(res.Contents))
		}
		return res.Contents[0].Text, nil
	}
	// Level 0 (a query, not listed), level 1 with pages, level 2, a window.
	for uri, want := range map[string]string{
		"dpe://" + docHost + "?format=markdown":         "Launch plan",
		doc.URI + "?depth=pages":                        `"pages"`,
		doc.URI + "/pages/0?format=markdown":            "None known.",
		o.pc2.window:                                    "status of pc2",
		strings.Replace(o.pc1.window, "status", "x", 1): "",
	} {
		got, err := read(uri)
		if want == "" {
			if err == nil {
				t.Errorf("read %s: no error", uri)
			}
			continue
		}
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("read %s = %q, %v; want %q", uri, got, err, want)
		}
	}
	// Page out of range: the SMCP code 4202 is in the error's data.
	_, err := read(doc.URI + "/pages/9")
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("page 9: %v", fmtErr(err))
	}
	var data struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(we.Data, &data) != nil || data.Code != 4202 || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("page 9: code %d data %s", we.Code, we.Data)
	}

	// Completion of the template's doc_ref from the finder.
	docRef := doc.Name
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "dpe://" + docHost + "/{doc_ref}/pages/{page_index}{?format,categories}"},
		Argument: mcp.CompleteParamsArgument{Name: "doc_ref", Value: docRef[:3]},
	})
	if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != docRef {
		t.Errorf("complete doc_ref: %v %+v", err, comp)
	}
	comp, err = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "dpe://" + docHost + "/{doc_ref}/pages/{page_index}{?format,categories}"},
		Argument: mcp.CompleteParamsArgument{Name: "page_index", Value: ""},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"doc_ref": docRef}},
	})
	if err != nil || strings.Join(comp.Completion.Values, ",") != "0" {
		t.Errorf("complete page_index: %v %+v", err, comp)
	}
}

// A computer joining, changing its tools and leaving becomes
// tools/list_changed; a window change becomes resources/list_changed and,
// for a subscriber, resources/updated.
func TestNotifications(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	toolsChanged := make(chan struct{}, 16)
	resChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	// 2025-11-25: under the client's newest protocol, Subscribe does not
	// say whether the server refused (DESIGN.md).
	cs, err := dialVersion(t, o.g, "A", "2025-11-25", &mcp.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		},
	}, "x-api-key", keyA)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: o.pc2.window}); err != nil {
		t.Fatal(err)
	}

	pc3 := newFixture(t, "pc3")
	leave := startComputer(t, o.g, keyA, "A", "pc3", map[string]string{"fx": pc3.url})
	recv(t, toolsChanged, "tools/list_changed after pc3 joined")
	testwait.Within(t, waitFor, "pc3's tools listed", func() bool { return toolNames(t, cs)["pc3__echo"] != nil })
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc3__echo", Arguments: map[string]any{"text": "new"}})
	if err != nil || text(t, res) != "pc3: new" {
		t.Fatalf("call pc3: %v %+v", err, res)
	}

	// A tool added on pc3's MCP server: the computer sends update_tool_list.
	drain(toolsChanged)
	mcp.AddTool(pc3.Server, &mcp.Tool{Name: "later"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "later"}}}, nil, nil
	})
	recv(t, toolsChanged, "tools/list_changed after update_tool_list")
	testwait.Within(t, waitFor, "pc3__later listed", func() bool { return toolNames(t, cs)["pc3__later"] != nil })

	// pc2's window text changes: resources/updated for the subscriber.
	drain(updated)
	o.pc2.setWindow("pc2 is busy")
	if uri := recv(t, updated, "resources/updated of pc2's window"); uri != o.pc2.window {
		t.Errorf("updated %s", uri)
	}
	res2, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: o.pc2.window})
	if err != nil || res2.Contents[0].Text != "pc2 is busy" {
		t.Errorf("read after update: %v %+v", err, res2)
	}
	// A new window: resources/list_changed.
	drain(resChanged)
	pc3.Server.AddResource(&mcp.Resource{URI: "window://pc3/extra", Name: "extra"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "window://pc3/extra", Text: "x"}}}, nil
		})
	recv(t, resChanged, "resources/list_changed after a new window")

	drain(toolsChanged)
	leave()
	recv(t, toolsChanged, "tools/list_changed after pc3 left")
	testwait.Within(t, waitFor, "pc3's tools gone", func() bool { return toolNames(t, cs)["pc3__echo"] == nil })
}

// The endpoint takes the gateway's keys: none is 401, a wrong one 401, a
// key of another office 403.
func TestAuth(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(office string, kv ...string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, endpoint(g, office), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(kv); i += 2 {
			req.Header.Set(kv[i], kv[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	for _, c := range []struct {
		name   string
		office string
		kv     []string
		status int
	}{
		{"no key", "A", nil, 401},
		{"wrong key", "A", []string{"x-api-key", "nope"}, 401},
		{"malformed Authorization", "A", []string{"Authorization", "Basic abc"}, 401},
		{"two different keys", "A", []string{"x-api-key", keyA, "Authorization", "Bearer " + keyB}, 401},
		{"key of office B", "A", []string{"x-api-key", keyB}, 403},
		{"bearer of office B", "A", []string{"Authorization", "Bearer " + keyB}, 403},
		{"key of office A", "A", []string{"x-api-key", keyA}, 200},
		{"bearer of office A", "A", []string{"Authorization", "Bearer " + keyA}, 200},
	} {
		status, b, h := post(c.office, c.kv...)
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, status, c.status, b)
		}
		if status == 401 && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: 401 without a Bearer challenge", c.name)
		}
		if status >= 400 && (strings.Contains(b, keyA) || strings.Contains(b, keyB)) {
			t.Errorf("%s: the answer shows a key: %s", c.name, b)
		}
	}
	// Every initialize that succeeded opened a session; none was left open
	// by a refusal.
	if n := g.MCP.Sessions(); n != 2 {
		t.Errorf("%d sessions open, want 2", n)
	}
}

// An MCP session is an agent of its office for its whole length: another
// agent is refused meanwhile, and the office is free once the session ends.
func TestSessionHoldsTheOffice(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	cs := mustDial(t, g, "A", nil, "x-api-key", keyA, "x-smcp-agent", "claude")
	ctx := ctxT(t)
	other, err := agent.Dial(ctx, sioclient.Options{Version: "0.2.0", URL: g.URL, APIKey: keyA, Logger: quiet}, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Join(ctx, "A"); err == nil {
		t.Fatal("a Socket.IO agent joined an office an MCP session holds")
	}
	// The same agent name may share the office (as RPC callers do).
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA, "x-smcp-agent", "claude"); err != nil {
		t.Errorf("a second session of the same agent: %v", err)
	}
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA, "x-smcp-agent", "cursor"); err == nil {
		t.Error("a second agent got the office")
	}
	_ = cs.Close()
	testwait.Within(t, waitFor, "the office freed", func() bool { return g.MCP.Sessions() == 1 })
}

// A key without a fixed name may not act as a name fixed to another key:
// with "alice" (whose key is fixed to that name) in the office over
// Socket.IO, a free key's MCP session as "alice" is refused 403 (it used to
// share alice's office slot), as it is with alice absent; alice's own key
// still opens one.
func TestNameOfAnotherKeyRefused(t *testing.T) {
	const keyAlice, keyFree = "mcp-key-alice-7c2d", "mcp-key-free-19ab"
	ring, err := core.NewKeyRing(core.Key{Key: keyAlice, ID: "alice", Name: "alice"}, core.Key{Key: keyFree, ID: "free"})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring})
	ctx := ctxT(t)
	alice, err := agent.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: keyAlice, Logger: quiet}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	if err := alice.Join(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, office := range []string{"A", "B"} {
		req, _ := http.NewRequest(http.MethodPost, endpoint(g, office), strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("x-api-key", keyFree)
		req.Header.Set("x-smcp-agent", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "belongs to another key") {
			t.Errorf("office %s: a free key as alice: %s %s, want 403", office, resp.Status, b)
		}
	}
	if n := g.MCP.Sessions(); n != 0 {
		t.Errorf("%d sessions open after the refusals", n)
	}
	if _, err := dial(t, g, "B", nil, "x-api-key", keyAlice); err != nil {
		t.Errorf("alice's own key: %v", err)
	}
	if _, err := dial(t, g, "B", nil, "x-api-key", keyFree, "x-smcp-agent", "bob"); err == nil {
		t.Error("bob got office B while alice's MCP session holds it")
	}
}

// A session closed by the gateway's shutdown frees its office, and the
// shutdown is not held up by the session's open event stream, nor by a
// connection the client dialed and never used (Go's HTTP client leaves one
// when a request waiting for its dial is handed a connection that became
// idle meanwhile; net/http's Shutdown counts it busy for 5 s).
func TestShutdownEndsSessions(t *testing.T) {
	g := startGateway(t, gateway.Config{ShutdownGrace: 5 * time.Second})
	cs := mustDial(t, g, "A", nil, "x-api-key", keyA)
	spare, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	if err := cs.Ping(ctxT(t), nil); err != nil { // the spare is accepted by now
		t.Fatal(err)
	}
	start := time.Now()
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("shutdown took %s with an MCP session open", d)
	}
	if n := g.MCP.Sessions(); n != 0 {
		t.Errorf("%d sessions after shutdown", n)
	}
}

// The per-session rate limit answers an error with SMCP code 429.
func TestRateLimit(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpOpts(1, 3)})
	cs := mustDial(t, g, "A", nil, "x-api-key", keyA)
	var limited error
	for range 20 {
		if _, err := cs.ListTools(ctxT(t), nil); err != nil {
			limited = err
			break
		}
	}
	var we *jsonrpc.Error
	if !errors.As(limited, &we) || !strings.Contains(string(we.Data), `"code":429`) {
		t.Fatalf("20 requests at once with a rate of 1/s: %v", fmtErr(limited))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// A page of another site that resolves its own name to the loopback
// gateway (DNS rebinding) is refused, even on an --insecure gateway.
func TestDNSRebindingRefused(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	req, _ := http.NewRequest(http.MethodPost, endpoint(g, "A"), strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Host = "attacker.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("status %d for Host attacker.example", resp.StatusCode)
	}
	if n := g.MCP.Sessions(); n != 0 {
		t.Errorf("%d sessions opened for a refused request", n)
	}
}

// The office's in-flight bound and the request size bound hold for MCP
// sessions: a call beyond the bound is an error with SMCP code 429, a body
// beyond the size 413.
func TestInFlightAndSizeLimits(t *testing.T) {
	cfg := gateway.Config{Core: core.Config{MaxAgentInFlight: 1}, MCP: mcpfront.Options{MaxRequestBytes: 4096}}
	o := newOffice(t, cfg)
	cs := mustDial(t, o.g, "A", nil, "x-api-key", keyA)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	// The session's own refreshes (the computers' first update_* events)
	// take the slot too: retry until the slow call holds it.
	var done chan error
	for started := false; !started; {
		done = make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc1__slow", Arguments: map[string]any{"tag": "hold", "seconds": 20}})
			done <- err
		}()
		select {
		case <-o.pc1.started:
			started = true
		case err := <-done:
			t.Logf("slow call refused (%v); again", err)
			time.Sleep(50 * time.Millisecond)
		case <-time.After(waitFor):
			t.Fatal("the slow call never started")
		}
	}
	_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc2__echo", Arguments: map[string]any{"text": "x"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(string(we.Data), `"code":429`) {
		t.Errorf("a second call in flight: %v", fmtErr(err))
	}
	cancel()
	<-done

	_, err = cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc2__echo", Arguments: map[string]any{"text": strings.Repeat("x", 8192)}})
	if err == nil || !strings.Contains(err.Error(), "413") && !strings.Contains(strings.ToLower(err.Error()), "too large") {
		t.Errorf("an 8 KiB call with a 4 KiB limit: %v", fmtErr(err))
	}
}

// A session whose client goes silent ends after SessionTimeout, and its
// office is free for another agent.
func TestIdleSessionFreesTheOffice(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{SessionTimeout: 300 * time.Millisecond}})
	_ = mustDial(t, g, "A", &mcp.ClientOptions{}, "x-api-key", keyA, "x-smcp-agent", "quiet-one")
	other, err := agent.Dial(ctxT(t), sioclient.Options{Version: "0.2.0", URL: g.URL, APIKey: keyA, Logger: quiet}, "next-one")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Join(ctxT(t), "A"); err == nil {
		t.Fatal("joined while the MCP session held the office")
	}
	testwait.Within(t, waitFor, "the idle session to end", func() bool { return g.MCP.Sessions() == 0 })
	if err := other.Join(ctxT(t), "A"); err != nil {
		t.Errorf("the office is still held after the idle session ended: %v", err)
	}
}

// /metrics counts the open MCP sessions.
func TestSessionsMetric(t *testing.T) {
	g := startGateway(t, gateway.Config{Metrics: true})
	_ = mustDial(t, g, "A", nil, "x-api-key", keyA)
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/metrics", nil)
	req.Header.Set("x-api-key", keyAll) // an operator key: the public port's metrics are theirs
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "\nsmcp_mcp_sessions 1\n") {
		t.Errorf("metrics lack smcp_mcp_sessions 1")
	}
}

// A relay relays: a computer's tool result in MCP's shape reaches the MCP
// client as the computer wrote it (member order, an unknown member, number
// spelling, escapes, annotations), and SMCP's "meta" alone is renamed
// "_meta" in place. (No HTML characters: this computer's Socket.IO library
// escapes them; the gateway does not, TestSocketIOBytesBothWays.)
func TestToolResultBytesRelayed(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	for _, c := range []struct{ answer, want string }{
		{`{"isError":false,"x-vendor":{"n":[1,2.50,1e3]},"content":[{"text":"caf\u00e9 \"q\" \/","type":"text","annotations":{"audience":["user"],"priority":0.5}}]}`, ""},
		{`{"content":[{"type":"text","text":"t"}],"meta":{"a2c_tool_meta":"{\"k\":1}"},"isError":true}`,
			`{"content":[{"type":"text","text":"t"}],"_meta":{"a2c_tool_meta":"{\"k\":1}"},"isError":true}`},
	} {
		office := "R" + time.Now().Format("150405.000000")
		memComputer(t, g, office, "pc", func(json.RawMessage) any { return json.RawMessage(c.answer) })
		s := newRawSession(t, endpoint(g, office), keyAll)
		got, err := s.post(ctxT(t), []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pc__echo","arguments":{}}}`))
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == "" {
			want = c.answer
		}
		if want = `{"jsonrpc":"2.0","id":7,"result":` + want + `}`; string(got) != want {
			t.Errorf("answer\n got  %s\n want %s", got, want)
		}
	}
}

// A gateway stopping past its grace with an MCP tools/call in flight keeps
// its bound (the session's end does not wait for the call), and the
// computer, its connection gone, cancels the call at its MCP server rather
// than run it to its end for nobody.
func TestShutdownPastGraceCancelsCalls(t *testing.T) {
	o := newOffice(t, gateway.Config{ShutdownGrace: 300 * time.Millisecond})
	cs := mustDial(t, o.g, "A", nil, "x-api-key", keyA)
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "pc1__slow", Arguments: map[string]any{"tag": "stuck", "seconds": 30}})
	}()
	recv(t, o.pc1.started, "the slow call at its MCP server")
	start := time.Now()
	if err := o.g.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %s with a 300ms grace", d)
	}
	if tag := recv(t, o.pc1.cancelled, "the slow call cancelled"); tag != "stuck" {
		t.Errorf("cancelled %q", tag)
	}
}

// A session ended by its client (DELETE) with a tools/call in flight ends at
// once, and the call is cancelled at the MCP server under the computer: the
// go-sdk ends a session only when its calls are done, which held the DELETE
// for as long as the tool ran.
func TestDeleteCancelsCallsInFlight(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	s := newRawSession(t, endpoint(o.g, "A"), keyA)
	answered := make(chan error, 1)
	go func() {
		_, err := s.post(context.Background(), []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"pc1__slow","arguments":{"tag":"deleted","seconds":30}}}`))
		answered <- err
	}()
	recv(t, o.pc1.started, "the slow call at its MCP server")
	req, _ := http.NewRequest(http.MethodDelete, endpoint(o.g, "A"), nil)
	req.Header.Set("x-api-key", keyA)
	req.Header.Set("Mcp-Session-Id", s.id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := time.Since(start); resp.StatusCode >= 300 || d > 10*time.Second {
		t.Errorf("DELETE answered %d after %s", resp.StatusCode, d)
	}
	if tag := recv(t, o.pc1.cancelled, "the slow call cancelled"); tag != "deleted" {
		t.Errorf("cancelled %q", tag)
	}
	recv(t, answered, "the call's POST to end")
	// The session is counted out once its last handler returns, just after
	// the POST's answer.
	testwait.Within(t, waitFor, "no session after DELETE", func() bool { return o.g.MCP.Sessions() == 0 })
}
