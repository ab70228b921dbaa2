package computer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// newComputerFrom builds and starts a computer of protocol from a
// configuration document (so that the order servers are written in counts)
// and waits until each of wait is connected.
func newComputerFrom(t testing.TB, protocol, doc string, wait []string, mutate ...func(*computer.Options)) *harness {
	t.Helper()
	cfg, err := config.Parse([]byte(doc), false)
	if err != nil {
		t.Fatal(err)
	}
	upd := newUpdates()
	opts := computer.Options{
		Name: "pc", Config: cfg, Logger: quietLogger(), Confirm: tools.ConfirmAuto, Protocol: protocol,
		LookupEnv:  func(string) (string, bool) { return "", false },
		BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		OnUpdate: upd.record,
	}
	for _, m := range mutate {
		m(&opts)
	}
	c, err := computer.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, c: c, upd: upd}
	for _, n := range wait {
		h.waitConnected(n)
	}
	return h
}

// The 0.4 tool mapping (PROTOCOL-0.4.md §5.1-§5.4): exposed names are
// bundle_id + "__" + (alias ?? tool), the same table answers get_tools and
// tool_call, a name outside it is 4001, forbidden_tools matches the MCP
// name or the exposed one, and a2c_tool_meta is the canonical string.
func TestBundledToolMapping(t *testing.T) {
	a := fixture(t, testmcp.New("a", testmcp.Options{}))
	b := fixture(t, testmcp.New("b", testmcp.Options{}))
	doc := fmt.Sprintf(`{"servers": {
		"My Server!": {"type": "streamable", "server_parameters": {"url": %q},
			"default_tool_meta": {"auto_apply": true, "tags": ["from-default"], "alias": "never"},
			"tool_meta": {"echo": {"alias": "say", "tags": ["own"]}},
			"forbidden_tools": ["My_Server__pid"]},
		"b": {"type": "streamable", "server_parameters": {"url": %q}, "forbidden_tools": ["slow"]}}}`, a, b)
	h := newComputerFrom(t, computer.Protocol04, doc, []string{"My Server!", "b"})

	got := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	names := make([]string, 0, len(got))
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"My_Server__add", "My_Server__say", "My_Server__slow", "b__add", "b__echo", "b__pid"}
	if !slices.Equal(names, want) {
		t.Fatalf("exposed names %q, want %q", names, want)
	}
	say := got["My_Server__say"]
	if say["bundle_id"] != "My_Server" || got["b__echo"]["bundle_id"] != "b" {
		t.Errorf("bundle ids: %v / %v", say["bundle_id"], got["b__echo"]["bundle_id"])
	}
	meta, _ := say["meta"].(map[string]any)
	if s := meta[smcp.MetaToolMeta]; s != `{"auto_apply":true,"alias":"say","tags":["own"],"ret_object_mapper":null}` {
		t.Errorf("a2c_tool_meta of say = %v", s)
	}
	if meta["owner"] != "tests" || meta[smcp.MetaToolAnnotation] == nil {
		t.Errorf("the tool's own _meta and annotations must pass: %v", meta)
	}
	addMeta, _ := got["My_Server__add"]["meta"].(map[string]any)
	if s := addMeta[smcp.MetaToolMeta]; s != `{"auto_apply":true,"alias":null,"tags":["from-default"],"ret_object_mapper":null}` {
		t.Errorf("a2c_tool_meta of add (default only, no alias inherited) = %v", s)
	}
	if bm, _ := got["b__echo"]["meta"].(map[string]any); bm[smcp.MetaToolMeta] != nil {
		t.Errorf("a tool without any ToolMeta layer carries a2c_tool_meta: %v", bm)
	}

	// tool_call by the alias's exposed name and by a plain exposed name.
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "My_Server__say", "params": map[string]any{"text": "hi"}, "timeout": 10})
	if res["isError"] != false || resultText(t, res) != "a: hi" {
		t.Errorf("call by alias: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "b__echo", "params": map[string]any{"text": "yo"}, "timeout": 10})
	if res["isError"] != false || resultText(t, res) != "b: yo" {
		t.Errorf("call by exposed name: %v", res)
	}
	// Misses: the aliased tool's own exposed name, a bare MCP name, a
	// forbidden tool (by MCP name and by exposed name).
	for _, name := range []string{"My_Server__echo", "echo", "b__slow", "My_Server__pid", "nope"} {
		res := h.call(smcp.EventToolCall, map[string]any{"tool_name": name, "params": map[string]any{}, "timeout": 10})
		m, _ := res["meta"].(map[string]any)
		if res["isError"] != true || m[smcp.MetaCode] != float64(smcp.CodeToolNotFound) {
			t.Errorf("%s: %v, want isError with meta.error_code 4001", name, res)
		}
	}
}

// The same servers under the 0.2 profile: names as always, no bundle_id.
func TestProtocol02ToolNamesUnchanged(t *testing.T) {
	a := fixture(t, testmcp.New("a", testmcp.Options{}))
	doc := fmt.Sprintf(`{"servers": {"My Server!": {"type": "streamable", "server_parameters": {"url": %q},
		"tool_meta": {"echo": {"alias": "say"}}}}}`, a)
	h := newComputerFrom(t, computer.Protocol02, doc, []string{"My Server!"})
	got := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	if _, ok := got["say"]; !ok || got["say"]["bundle_id"] != nil {
		t.Errorf("0.2 tools: %v", got)
	}
	if ans := h.call(smcp.EventGetResources, map[string]any{"mcp_server": "My_Server"}); ans["code"] != float64(smcp.CodeBadRequest) {
		t.Errorf("get_resources in 0.2: %v", ans)
	}
}

// A server's declared tags (Tool._meta.a2c_tool_meta) are the lowest layer;
// its auto_apply is never taken (a server must not approve itself), and a
// malformed declaration is dropped without hiding the tool.
func TestDeclaredToolMeta(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "decl", Version: "1"}, nil)
	add := func(name string, meta mcp.Meta) {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Meta: meta}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil, nil
		})
	}
	add("tagged", mcp.Meta{"a2c_tool_meta": map[string]any{"tags": []any{"fs", "read"}, "auto_apply": true}, "x": "y"})
	add("bad", mcp.Meta{"a2c_tool_meta": map[string]any{"tags": "fs"}})
	add("configured", mcp.Meta{"a2c_tool_meta": map[string]any{"tags": []any{"server"}}})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	doc := fmt.Sprintf(`{"servers": {"decl": {"type": "streamable", "server_parameters": {"url": %q},
		"tool_meta": {"configured": {"auto_apply": true}}}}}`, hs.URL)
	h := newComputerFrom(t, computer.Protocol04, doc, []string{"decl"}, func(o *computer.Options) { o.Confirm = tools.ConfirmDeny })

	got := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	metaOf := func(n string) map[string]any { m, _ := got[n]["meta"].(map[string]any); return m }
	if s := metaOf("decl__tagged")[smcp.MetaToolMeta]; s != `{"auto_apply":null,"alias":null,"tags":["fs","read"],"ret_object_mapper":null}` || metaOf("decl__tagged")["x"] != "y" {
		t.Errorf("tagged: %v", metaOf("decl__tagged"))
	}
	if m, ok := got["decl__bad"]; !ok || metaOf("decl__bad")[smcp.MetaToolMeta] != nil {
		t.Errorf("bad declaration: listed %v, meta %v (want listed, no a2c_tool_meta)", ok, m)
	}
	if s := metaOf("decl__configured")[smcp.MetaToolMeta]; s != `{"auto_apply":true,"alias":null,"tags":["server"],"ret_object_mapper":null}` {
		t.Errorf("configured: %v", s)
	}
	// The declaration's auto_apply approved nothing: with --confirm=deny
	// the call is refused; the configured auto_apply runs.
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "decl__tagged", "params": map[string]any{}, "timeout": 10})
	if res["isError"] != true || !strings.Contains(resultText(t, res), "needs confirmation") {
		t.Errorf("declared auto_apply was honoured: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "decl__configured", "params": map[string]any{}, "timeout": 10})
	if res["isError"] != false {
		t.Errorf("configured auto_apply: %v", res)
	}
}

// No double-open (C2): of servers sharing a bundle id only the first in
// configuration order starts, the others are diagnostics; get_config is
// keyed by bundle id; an invalid explicit id keeps its server from
// starting.
func TestBundleNoDoubleOpen(t *testing.T) {
	a := fixture(t, testmcp.New("a", testmcp.Options{}))
	b := fixture(t, testmcp.New("b", testmcp.Options{}))
	doc := fmt.Sprintf(`{"servers": {
		"z first": {"type": "streamable", "server_parameters": {"url": %q}, "bundle_id": "shared"},
		"a second": {"type": "streamable", "server_parameters": {"url": %q}, "bundle_id": "shared"},
		"same.name": {"type": "streamable", "server_parameters": {"url": %q}},
		"same name": {"type": "streamable", "server_parameters": {"url": %q}},
		"bad": {"type": "streamable", "server_parameters": {"url": %q}, "bundle_id": "a__b"}}}`, a, b, b, a, b)
	h := newComputerFrom(t, computer.Protocol04, doc, []string{"z first", "same.name"})
	if got := h.c.Servers().Names(); !slices.Equal(got, []string{"same.name", "z first"}) {
		t.Errorf("running servers %q", got)
	}
	diags := strings.Join(h.c.Diagnostics(), "\n")
	for _, want := range []string{`"a second"`, `"same name"`, `"bad"`, "a__b"} {
		if !strings.Contains(diags, want) {
			t.Errorf("diagnostics do not name %s:\n%s", want, diags)
		}
	}
	cfg := h.call(smcp.EventGetConfig, map[string]any{})
	srvs, _ := cfg["servers"].(map[string]any)
	keys := make([]string, 0, len(srvs))
	for k := range srvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"same_name", "shared"}) {
		t.Errorf("get_config keys %q", keys)
	}
	if sc, _ := srvs["shared"].(map[string]any); sc["name"] != "z first" {
		t.Errorf("shared is %v, want the first written", sc["name"])
	}
	// The tools are the first server's: a's echo.
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "shared__echo", "params": map[string]any{"text": "x"}, "timeout": 10})
	if resultText(t, res) != "a: x" {
		t.Errorf("shared__echo answered %v", res)
	}

	// At runtime a server with an existing bundle id replaces it in place.
	s, err := config.NewServer("renamed", map[string]any{"type": "streamable", "bundle_id": "shared", "server_parameters": map[string]any{"url": b}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.SetServer(s); err != nil {
		t.Fatal(err)
	}
	h.waitConnected("renamed")
	if _, still := h.c.Servers().Snapshot("z first"); still {
		t.Error("the replaced server still runs")
	}
	if !testwait.Poll(testwait.Timeout, func() bool {
		res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "shared__echo", "params": map[string]any{"text": "x"}, "timeout": 10})
		return resultText(t, res) == "b: x"
	}) {
		t.Error("shared__echo is not the replacing server's")
	}
}

// pagedServer serves n resources, size to a page, and no resources at all
// when n < 0 (then it has no resources capability).
func pagedServer(t testing.TB, n, size int) string {
	opts := &mcp.ServerOptions{PageSize: size}
	srv := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, opts)
	for i := range n {
		srv.AddResource(&mcp.Resource{URI: fmt.Sprintf("file:///r/%02d", i), Name: fmt.Sprintf("r%02d", i)},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// client:get_resources (C3): by bundle id, MCP's cursor paging forwarded,
// 4014 for an unknown or disabled bundle id, 4015 without the resources
// capability; both flat, with mcp_server (and capability) beside the code.
func TestGetResourcesPaging(t *testing.T) {
	doc := fmt.Sprintf(`{"servers": {
		"files": {"type": "streamable", "server_parameters": {"url": %q}},
		"bare": {"type": "streamable", "server_parameters": {"url": %q}},
		"off": {"type": "streamable", "server_parameters": {"url": %q}, "disabled": true}}}`,
		pagedServer(t, 7, 3), pagedServer(t, 0, 3), pagedServer(t, 1, 3))
	h := newComputerFrom(t, computer.Protocol04, doc, []string{"files", "bare"})

	var uris []string
	cursor := ""
	for page := 0; ; page++ {
		req := map[string]any{"mcp_server": "files"}
		if cursor != "" {
			req["cursor"] = cursor
		}
		ret := h.call(smcp.EventGetResources, req)
		if ret["req_id"] != "r-"+smcp.EventGetResources {
			t.Fatalf("answer %v", ret)
		}
		list, _ := ret["resources"].([]any)
		if len(list) > 3 {
			t.Fatalf("page %d has %d resources", page, len(list))
		}
		for _, r := range list {
			m, _ := r.(map[string]any)
			uris = append(uris, m["uri"].(string))
		}
		next, _ := ret["next_cursor"].(string)
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	if len(uris) != 7 || uris[0] != "file:///r/00" || uris[6] != "file:///r/06" {
		t.Errorf("resources over the pages: %q", uris)
	}

	for _, tc := range []struct {
		id     string
		code   int
		fields map[string]any
	}{
		{"nope", smcp.CodeMCPServerNotFound, map[string]any{"mcp_server": "nope"}},
		{"off", smcp.CodeMCPServerNotFound, map[string]any{"mcp_server": "off"}},
		{"bare", smcp.CodeMCPCapabilityNotSupported, map[string]any{"mcp_server": "bare", "capability": "resources"}},
	} {
		ret := h.call(smcp.EventGetResources, map[string]any{"mcp_server": tc.id})
		if ret["code"] != float64(tc.code) || ret["content"] != nil {
			t.Errorf("%s: %v, want flat %d", tc.id, ret, tc.code)
			continue
		}
		for k, v := range tc.fields {
			if ret[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.id, k, ret[k], v)
			}
		}
	}
}

// The desktop is grouped and ordered by bundle id (C4), and the 0.1-era
// ?priority= query is not read from 0.3 on.
func TestDesktopByBundleID(t *testing.T) {
	fa := testmcp.New("a", testmcp.Options{})
	fb := testmcp.New("b", testmcp.Options{})
	fa.SetWindow(testmcp.Window{URI: "window://ha/w?priority=90", Text: "from a"})
	fb.SetWindow(testmcp.Window{URI: "window://hb/w", Text: "from b"})
	a, b := fixture(t, fa), fixture(t, fb)
	// By name a comes first; by bundle id b ("yy") does.
	doc := fmt.Sprintf(`{"servers": {"a": {"type": "streamable", "server_parameters": {"url": %q}, "bundle_id": "zz"},
		"b": {"type": "streamable", "server_parameters": {"url": %q}, "bundle_id": "yy"}}}`, a, b)
	for _, tc := range []struct {
		protocol string
		first    string
	}{{computer.Protocol04, "window://hb/w"}, {computer.Protocol02, "window://ha/w"}} {
		h := newComputerFrom(t, tc.protocol, doc, []string{"a", "b"})
		ret := h.call(smcp.EventGetDesktop, map[string]any{})
		desks, _ := ret["desktops"].([]any)
		if len(desks) != 2 {
			t.Fatalf("%s: desktops %v", tc.protocol, desks)
		}
		if first, _ := desks[0].(string); !strings.HasPrefix(first, tc.first) {
			t.Errorf("%s: first window %q, want %s", tc.protocol, first, tc.first)
		}
		h.c.Close()
	}
}

// A 0.3 or 0.4 computer refuses a configuration with 0.2 pickString options.
func TestProtocolRefusesOldPickString(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"servers": {}, "inputs": [{"type": "pickString", "id": "p", "description": "d", "options": ["a"]}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := computer.New(computer.Options{Name: "pc", Config: cfg, Protocol: computer.Protocol04}); err == nil || !strings.Contains(err.Error(), "label") {
		t.Errorf("0.4 with string options: %v", err)
	}
	if _, err := computer.New(computer.Options{Name: "pc", Config: cfg}); err != nil {
		t.Errorf("0.2 with string options: %v", err)
	}
	if _, err := computer.New(computer.Options{Name: "pc", Config: cfg, Protocol: "0.6"}); err == nil {
		t.Error("protocol 0.5 accepted")
	}
}
