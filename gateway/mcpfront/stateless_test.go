package mcpfront_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const newProtocol = "2026-07-28"

// rawMCP sends MCP 2026-07-28 requests as bare HTTP POSTs, with the
// revision's per-request _meta and headers.
type rawMCP struct {
	t      testing.TB
	url    string
	header http.Header
	id     int
}

func newRaw(t testing.TB, g *gateway.Running, office string, kv ...string) *rawMCP {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &rawMCP{t: t, url: endpoint(g, office), header: h}
}

type rpcAnswer struct {
	status int
	header http.Header
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// request builds the POST of method with params (nil: none) and the
// revision's _meta; skip names headers to leave out.
func (c *rawMCP) request(ctx context.Context, method string, params map[string]any, skip ...string) *http.Request {
	c.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    newProtocol,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	c.id++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", newProtocol)
	req.Header.Set("Mcp-Method", method)
	switch method {
	case "tools/call":
		req.Header.Set("Mcp-Name", params["name"].(string))
	case "resources/read":
		req.Header.Set("Mcp-Name", params["uri"].(string))
	}
	for _, h := range skip {
		req.Header.Del(h)
	}
	return req
}

func (c *rawMCP) call(method string, params map[string]any, skip ...string) *rpcAnswer {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(c.request(ctxT(c.t), method, params, skip...))
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := &rpcAnswer{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, a); err != nil {
			c.t.Fatalf("%s: answer %q: %v", method, b, err)
		}
	} else if resp.StatusCode == http.StatusOK {
		c.t.Fatalf("%s: answered %s %q", method, resp.Header.Get("Content-Type"), b)
	}
	return a
}

// ok is call, failing the test on an error answer; it decodes the result.
func (c *rawMCP) ok(method string, params map[string]any, out any) json.RawMessage {
	c.t.Helper()
	a := c.call(method, params)
	if a.status != http.StatusOK || a.Error != nil || a.Result == nil {
		c.t.Fatalf("%s: status %d, error %+v", method, a.status, a.Error)
	}
	var rt struct {
		ResultType string `json:"resultType"`
	}
	if err := json.Unmarshal(a.Result, &rt); err != nil || rt.ResultType != "complete" {
		c.t.Errorf("%s: resultType %q, want complete: %s", method, rt.ResultType, a.Result)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, a.Result, err)
		}
	}
	return a.Result
}

type listedTools struct {
	Tools []struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	} `json:"tools"`
	TTLMs      *int   `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

func (l listedTools) names() []string {
	var out []string
	for _, t := range l.Tools {
		out = append(out, t.Name)
	}
	return out
}

func (c *rawMCP) toolNames() []string {
	var l listedTools
	c.ok("tools/list", nil, &l)
	return l.names()
}

// sseMessage is one JSON-RPC message of a listen stream.
type sseMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		URI  string         `json:"uri"`
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// listen opens subscriptions/listen with filter and returns its messages;
// the stream ends with the test.
func (c *rawMCP) listen(filter map[string]any) <-chan sseMessage {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(c.request(ctx, "subscriptions/listen", map[string]any{"notifications": filter}))
	if err != nil {
		c.t.Fatalf("subscriptions/listen: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("subscriptions/listen: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	ch := make(chan sseMessage, 64)
	done := make(chan struct{})
	c.t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m sseMessage
			if json.Unmarshal([]byte(data), &m) == nil {
				select {
				case ch <- m:
				default:
				}
			}
		}
	}()
	return ch
}

// awaitMethod reads ch until a message of method arrives.
func awaitMethod(t testing.TB, ch <-chan sseMessage, method string) sseMessage {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case m := <-ch:
			if m.Method == method {
				return m
			}
		case <-deadline:
			t.Fatalf("no %s on the listen stream", method)
		}
	}
}

// A client of MCP 2026-07-28 with no session: discover, tools/list in a
// fixed order, tools/call, resources/read, and a listen stream that hears
// of a window's change and of a new tool; a 2025-11-25 session of the same
// gateway works beside it, and the stateless requests made no session.
func TestStatelessSequence(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	c := newRaw(t, o.g, "A", "x-api-key", keyA)

	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
			Resources *struct {
				Subscribe bool `json:"subscribe"`
			} `json:"resources"`
		} `json:"capabilities"`
	}
	c.ok("server/discover", nil, &disc)
	if !slices.Contains(disc.SupportedVersions, newProtocol) || disc.Capabilities.Tools == nil ||
		!disc.Capabilities.Tools.ListChanged || disc.Capabilities.Resources == nil || !disc.Capabilities.Resources.Subscribe {
		t.Fatalf("server/discover: %+v", disc)
	}

	var l listedTools
	testwait.Until(t, "tools/list lists both computers' tools", func() bool {
		l = listedTools{}
		c.ok("tools/list", nil, &l)
		return slices.Contains(l.names(), "pc1__echo") && slices.Contains(l.names(), "pc2__echo")
	})
	if !slices.IsSorted(l.names()) {
		t.Errorf("tools/list not in name order: %v", l.names())
	}
	if again := c.toolNames(); !slices.Equal(again, l.names()) {
		t.Errorf("tools/list changed order: %v, then %v", l.names(), again)
	}
	if l.TTLMs == nil || *l.TTLMs != 0 || l.CacheScope != "private" {
		t.Errorf("tools/list cache fields: ttlMs %v, cacheScope %q; want 0, private", l.TTLMs, l.CacheScope)
	}
	for _, tool := range l.Tools {
		if tool.Name == "pc1__add" && len(tool.OutputSchema) == 0 {
			t.Errorf("pc1__add lost its output schema")
		}
	}

	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]any `json:"structuredContent"`
	}
	c.ok("tools/call", map[string]any{"name": "pc1__echo", "arguments": map[string]any{"text": "hi"}}, &res)
	if len(res.Content) != 1 || res.Content[0].Text != "pc1: hi" {
		t.Errorf("tools/call pc1__echo: %+v", res)
	}
	res.StructuredContent = nil
	c.ok("tools/call", map[string]any{"name": "pc2__add", "arguments": map[string]any{"a": 2, "b": 3}}, &res)
	if sum, _ := res.StructuredContent["sum"].(float64); sum != 5 {
		t.Errorf("tools/call pc2__add: structured content %v", res.StructuredContent)
	}

	var read struct {
		Contents []struct {
			URI, Text string
		} `json:"contents"`
	}
	c.ok("resources/read", map[string]any{"uri": o.pc1.window}, &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "status of pc1" {
		t.Errorf("resources/read %s: %+v", o.pc1.window, read)
	}

	// A listen stream: acknowledged first, then the changes it asked for.
	events := c.listen(map[string]any{"toolsListChanged": true, "resourceSubscriptions": []string{o.pc1.window}})
	ack := awaitMethod(t, events, "notifications/subscriptions/acknowledged")
	subID := ack.Params.Meta["io.modelcontextprotocol/subscriptionId"]
	if subID == nil {
		t.Errorf("acknowledgement without a subscription id: %+v", ack)
	}
	o.pc1.setWindow("changed")
	upd := awaitMethod(t, events, "notifications/resources/updated")
	if upd.Params.URI != o.pc1.window || upd.Params.Meta["io.modelcontextprotocol/subscriptionId"] != subID {
		t.Errorf("resources/updated %+v, want %s on subscription %v", upd.Params, o.pc1.window, subID)
	}
	c.ok("resources/read", map[string]any{"uri": o.pc1.window}, &read)
	if len(read.Contents) != 1 || read.Contents[0].Text != "changed" {
		t.Errorf("resources/read after the change: %+v", read)
	}
	o.pc2.AddEcho("echo2")
	awaitMethod(t, events, "notifications/tools/list_changed")
	if names := c.toolNames(); !slices.Contains(names, "pc2__echo2") {
		t.Errorf("tools/list after list_changed lacks pc2__echo2: %v", names)
	}

	// The revision's required headers are checked.
	if a := c.call("tools/list", nil, "Mcp-Method"); a.status != http.StatusBadRequest || a.Error == nil || a.Error.Code != -32020 {
		t.Errorf("tools/list without Mcp-Method: %d %+v, want 400 and -32020", a.status, a.Error)
	}
	if a := c.call("tools/call", map[string]any{"name": "pc1__echo", "arguments": map[string]any{"text": "x"}}, "Mcp-Name"); a.status != http.StatusBadRequest {
		t.Errorf("tools/call without Mcp-Name: %d %+v, want 400", a.status, a.Error)
	}
	// Methods the revision removed.
	if a := c.call("ping", nil); a.Error == nil {
		t.Errorf("ping answered under %s: %s", newProtocol, a.Result)
	}
	// Each request signs in.
	if a := newRaw(t, o.g, "A").call("tools/list", nil); a.status != http.StatusUnauthorized {
		t.Errorf("tools/list without a key: %d, want 401", a.status)
	}
	if a := newRaw(t, o.g, "A", "x-api-key", keyB).call("tools/list", nil); a.status != http.StatusForbidden {
		t.Errorf("tools/list with office B's key: %d, want 403", a.status)
	}

	// A 2025-11-25 session on the same endpoint, meanwhile.
	cs := mustDial(t, o.g, "A", nil, "x-api-key", keyA)
	if v := cs.InitializeResult().ProtocolVersion; v != sessionVersion {
		t.Errorf("session negotiated %s, want %s", v, sessionVersion)
	}
	got, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc2__echo", Arguments: map[string]any{"text": "old"}})
	if err != nil || text(t, got) != "pc2: old" {
		t.Fatalf("2025-11-25 session tools/call: %v %+v", err, got)
	}
	if n := o.g.MCP.Sessions(); n != 1 {
		t.Errorf("%d MCP sessions open, want 1 (the 2025-11-25 one)", n)
	}
	c.ok("tools/call", map[string]any{"name": "pc1__echo", "arguments": map[string]any{"text": "again"}}, &res)
	if len(res.Content) != 1 || res.Content[0].Text != "pc1: again" {
		t.Errorf("stateless tools/call beside a session: %+v", res)
	}
}

// The go-sdk client speaks 2026-07-28 when the endpoint does: it discovers,
// lists and calls without a session, and hears of a new tool.
func TestStatelessGoSDKClient(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	changed := make(chan struct{}, 8)
	cs, err := dialVersion(t, o.g, "A", "", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}, "x-api-key", keyA)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != newProtocol {
		t.Fatalf("the go-sdk client speaks %s, want %s", v, newProtocol)
	}
	if cs.ID() != "" || o.g.MCP.Sessions() != 0 {
		t.Errorf("a session exists: id %q, %d open", cs.ID(), o.g.MCP.Sessions())
	}
	testwait.Until(t, "pc1__echo listed", func() bool { return toolNames(t, cs)["pc1__echo"] != nil })
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__echo", Arguments: map[string]any{"text": "new"}})
	if err != nil || text(t, res) != "pc1: new" {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	o.pc1.AddEcho("echo3")
	recv(t, changed, "tools/list_changed")
	testwait.Until(t, "pc1__echo3 listed", func() bool { return toolNames(t, cs)["pc1__echo3"] != nil })
}

// silentComputer joins office as a computer that answers none of the
// gateway's requests until release is closed; asked receives each request's
// event name. Once released, it lists one tool, "late".
func silentComputer(t testing.TB, g *gateway.Running, office, name string) (asked <-chan string, release func()) {
	t.Helper()
	c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: g.URL, APIKey: keyAll, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ch := make(chan string, 64)
	rel := make(chan struct{})
	hold := func(event string, answer any) {
		c.Handle(event, func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case ch <- event:
			default:
			}
			select {
			case <-rel:
				return answer, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	}
	hold(smcp.EventGetTools, map[string]any{"tools": []any{map[string]any{"name": "late", "description": "late",
		"params_schema": map[string]any{"type": "object"}, "return_schema": nil, "meta": map[string]any{},
		"title": "Late tool", "icons": []any{map[string]any{"src": "https://example.com/late.png", "mimeType": "image/png"}}}}})
	hold(smcp.EventGetDesktop, map[string]any{"desktops": []any{}})
	hold(smcp.EventGetFinder, map[string]any{"documents": []any{}, "total_count": 0})
	if err := c.JoinOffice(ctxT(t), smcp.RoleComputer, name, office); err != nil {
		t.Fatal(err)
	}
	var once bool
	return ch, func() {
		if !once {
			once = true
			close(rel)
		}
	}
}

// A computer that never answers delays only itself: an MCP session opens
// (and a 2026-07-28 tools/list is answered) while its get_tools is still
// unanswered, the other computer's tools are listed, and its own tools
// arrive once it answers.
func TestSilentComputer(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	fx := newFixture(t, "pc1")
	startComputer(t, g, keyA, "A", "pc1", map[string]string{"fx": fx.url})
	asked, release := silentComputer(t, g, "A", "mute")
	t.Cleanup(release)

	start := time.Now()
	cs := mustDial(t, g, "A", nil, "x-api-key", keyA)
	took := time.Since(start)
	// The proof is the order, not the clock: get_tools was asked of the
	// silent computer and is still unanswered (release has not run).
	if ev := recv(t, asked, "a request to the silent computer"); ev == "" {
		t.Fatal("no request reached the silent computer")
	}
	t.Logf("initialize answered in %v with a computer that never answers", took)
	if took > 15*time.Second { // half the old 30 s wait: the budget is 1 s
		t.Errorf("initialize took %v", took)
	}
	testwait.Until(t, "pc1's tools listed beside the silent computer", func() bool {
		return toolNames(t, cs)["pc1__echo"] != nil
	})

	// The same from a 2026-07-28 client, from an office view made now.
	c := newRaw(t, g, "A", "x-api-key", keyA)
	start = time.Now()
	var names []string
	testwait.Until(t, "stateless tools/list lists pc1's tools", func() bool {
		names = c.toolNames()
		return slices.Contains(names, "pc1__echo")
	})
	t.Logf("stateless tools/list answered in %v with a computer that never answers", time.Since(start))
	if slices.Contains(names, "mute__late") {
		t.Fatalf("the silent computer's tool listed before it answered: %v", names)
	}

	release()
	testwait.Until(t, "the silent computer's tool listed in the session once it answers", func() bool {
		return toolNames(t, cs)["mute__late"] != nil
	})
	testwait.Until(t, "the silent computer's tool listed statelessly once it answers", func() bool {
		return slices.Contains(c.toolNames(), "mute__late")
	})
	// Its title and icons, which a computer may send beside the SMCPTool
	// fields, are carried over.
	late := toolNames(t, cs)["mute__late"]
	if late.Title != "Late tool" || len(late.Icons) != 1 || late.Icons[0].Source != "https://example.com/late.png" || late.Icons[0].MIMEType != "image/png" {
		t.Errorf("mute__late: title %q, icons %+v", late.Title, late.Icons)
	}
}

// A request with an Origin that is not allowed is refused with 403 before
// anything else; no Origin, the gateway's own host, loopback and the
// allow-list pass.
func TestForeignOriginRefused(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{AllowedOrigins: []string{"https://app.example.com"}}})
	c := newRaw(t, g, "A", "x-api-key", keyA)
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"https://app.example.com", http.StatusOK},
		{g.URL, http.StatusOK},
		{"http://localhost:3000", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
		{"https://app.example.com.evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
	} {
		c.header.Set("Origin", tc.origin)
		if tc.origin == "" {
			c.header.Del("Origin")
		}
		if a := c.call("tools/list", nil); a.status != tc.want {
			t.Errorf("Origin %q: %d, want %d", tc.origin, a.status, tc.want)
		}
	}
	// Before authentication: no key, a foreign origin, still 403.
	bare := newRaw(t, g, "A", "Origin", "https://evil.example")
	if a := bare.call("tools/list", nil); a.status != http.StatusForbidden {
		t.Errorf("a foreign origin without a key: %d, want 403", a.status)
	}
	// The sessions' path too.
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, endpoint(g, "A"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyA)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || g.MCP.Sessions() != 0 {
		t.Errorf("initialize from a foreign origin: %d, %d sessions; want 403, none", resp.StatusCode, g.MCP.Sessions())
	}
}

// A 2026-07-28 request holds the office's agent seat only while it runs:
// between requests another agent may act, and a listen stream holds the
// seat while it is open.
func TestStatelessSeat(t *testing.T) {
	o := newOffice(t, gateway.Config{})
	alice := newRaw(t, o.g, "A", "x-api-key", keyAll, mcpfront.AgentHeader, "alice")
	bob := newRaw(t, o.g, "A", "x-api-key", keyAll, mcpfront.AgentHeader, "bob")
	alice.toolNames()
	testwait.Until(t, "bob acts once alice's request is done", func() bool {
		return bob.call("tools/list", nil).status == http.StatusOK
	})
	ctx, cancel := context.WithCancel(ctxT(t))
	resp, err := http.DefaultClient.Do(alice.request(ctx, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's listen: %v %v", err, resp)
	}
	testwait.Until(t, "bob refused while alice listens", func() bool {
		return bob.call("tools/list", nil).status == http.StatusForbidden
	})
	if a := alice.call("tools/list", nil); a.status != http.StatusOK {
		t.Errorf("alice's own request while she listens: %d", a.status)
	}
	cancel()
	resp.Body.Close()
	testwait.Until(t, "bob acts once alice's listen is closed", func() bool {
		return bob.call("tools/list", nil).status == http.StatusOK
	})
}
