package computer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func toolNames(t testing.TB, ans map[string]any) map[string]map[string]any {
	t.Helper()
	list, ok := ans["tools"].([]any)
	if !ok {
		t.Fatalf("get_tools answer: %v", ans)
	}
	out := map[string]map[string]any{}
	for _, e := range list {
		m := e.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func resultText(t testing.TB, res map[string]any) string {
	t.Helper()
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content: %v", res)
	}
	return content[0].(map[string]any)["text"].(string)
}

func TestToolsAliasForbiddenAndMeta(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "forbidden_tools": []any{"pid"},
			"default_tool_meta": map[string]any{"tags": []any{"demo"}},
			"tool_meta":         map[string]any{"echo": map[string]any{"alias": "a_echo", "auto_apply": true}}},
		"b": {"url": fixture(t, b), "forbidden_tools": []any{"pid", "add", "slow"}},
	})
	ans := h.call(smcp.EventGetTools, map[string]any{"req_id": "q1"})
	if ans["req_id"] != "q1" {
		t.Fatalf("req_id: %v", ans)
	}
	names := toolNames(t, ans)
	for _, want := range []string{"a_echo", "add", "slow", "echo"} {
		if names[want] == nil {
			t.Errorf("missing %s in %v", want, names)
		}
	}
	if names["pid"] != nil || len(names) != 4 {
		t.Fatalf("tools: %v", names)
	}
	meta := names["a_echo"]["meta"].(map[string]any)
	var tm map[string]any
	if err := json.Unmarshal([]byte(meta[smcp.MetaToolMeta].(string)), &tm); err != nil {
		t.Fatal(err)
	}
	if tm["alias"] != "a_echo" || tm["auto_apply"] != true || tm["tags"].([]any)[0] != "demo" {
		t.Fatalf("a2c_tool_meta: %v", tm)
	}
	if !strings.Contains(meta[smcp.MetaToolAnnotation].(string), `"readOnlyHint":true`) || meta["owner"] != "tests" {
		t.Fatalf("meta: %v", meta)
	}
	if labels, ok := meta["labels"].([]any); !ok || len(labels) != 2 {
		t.Fatalf("flat list meta: %v", meta["labels"])
	}
	if names["a_echo"]["params_schema"].(map[string]any)["type"] != "object" {
		t.Fatalf("params_schema: %v", names["a_echo"])
	}
	// b's echo has no ToolMeta at all: meta has no a2c_tool_meta.
	if _, ok := names["echo"]["meta"].(map[string]any)[smcp.MetaToolMeta]; ok {
		t.Fatalf("b echo meta: %v", names["echo"]["meta"])
	}

	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "a_echo", "params": map[string]any{"text": "hi"}, "timeout": 5})
	if res["isError"] != false || resultText(t, res) != "a: hi" {
		t.Fatalf("a_echo: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"text": "hi"}, "timeout": 5})
	if resultText(t, res) != "b: hi" {
		t.Fatalf("echo: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "add", "params": map[string]any{"a": 2, "b": 3}})
	if sc := res["structuredContent"].(map[string]any); sc["sum"] != 5.0 {
		t.Fatalf("add: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "pid"})
	if res["isError"] != true || res["meta"].(map[string]any)[smcp.MetaErrorCode] != 404.0 {
		t.Fatalf("forbidden pid: %v", res)
	}
	// Schema-invalid arguments: the MCP server says isError; passed on.
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "add", "params": map[string]any{"a": "x"}})
	if res["isError"] != true {
		t.Fatalf("invalid params: %v", res)
	}
	if hist := h.c.History(); len(hist) != 4 || hist[0] != "a" || hist[1] != "b" {
		t.Fatalf("history: %v", hist)
	}
}

func TestToolNameClash(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	bURL := fixture(t, b)
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}, "b": {"url": bURL}})
	names := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	if len(names) != 0 {
		t.Fatalf("clashing tools listed: %v", names)
	}
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"text": "x"}})
	msg := resultText(t, res)
	if res["isError"] != true || !strings.Contains(msg, "a/echo and b/echo") || !strings.Contains(msg, "alias") {
		t.Fatalf("clash: %v", res)
	}
	// Setting an alias on one side fixes it at runtime.
	s, err := config.NewServer("b", map[string]any{"url": "", "tool_meta": map[string]any{}})
	if err == nil {
		t.Fatalf("empty url accepted: %v", s)
	}
	fixed, err := config.NewServer("b", map[string]any{"url": bURL, "tool_meta": map[string]any{
		"echo": map[string]any{"alias": "b_echo"}, "add": map[string]any{"alias": "b_add"},
		"slow": map[string]any{"alias": "b_slow"}, "pid": map[string]any{"alias": "b_pid"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.upd.drain()
	if err := h.c.SetServer(fixed); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateConfig)
	h.upd.wait(t, smcp.EventUpdateToolList)
	h.waitConnected("b")
	if !testwait.Poll(testwait.Timeout, func() bool {
		names = toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
		return len(names) == 8
	}) {
		t.Fatalf("tools after alias: %v", names)
	}
	if got := resultText(t, h.call(smcp.EventToolCall, map[string]any{"tool_name": "b_echo", "params": map[string]any{"text": "x"}})); got != "b: x" {
		t.Fatal(got)
	}
}

func TestToolCallTimeoutAndCancel(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})

	res := h.call(smcp.EventToolCall, map[string]any{"req_id": "t1", "tool_name": "slow", "params": map[string]any{"tag": "t1", "seconds": 30}, "timeout": 1})
	meta, _ := res["meta"].(map[string]any)
	if res["isError"] != true || meta[smcp.MetaTimeout] != true || resultText(t, res) != "Tool call timeout" {
		t.Fatalf("timeout: %v", res)
	}
	<-f.SlowStarted
	if tag := <-f.SlowCancelled; tag != "t1" {
		t.Fatalf("cancelled %q", tag)
	}

	done := make(chan map[string]any)
	go func() {
		done <- roundTrip(t, h.c.Handle(context.Background(), smcp.EventToolCall, map[string]any{
			"agent": "bot", "req_id": "c1", "computer": "pc", "tool_name": "slow",
			"params": map[string]any{"tag": "c1", "seconds": 30}, "timeout": 60}))
	}()
	if tag := <-f.SlowStarted; tag != "c1" {
		t.Fatalf("started %q", tag)
	}
	// A slow tool blocks no other call of the same computer, not even one
	// to the same MCP server: echo is answered while c1 is still running.
	echo := h.call(smcp.EventToolCall, map[string]any{"req_id": "e1", "tool_name": "echo", "params": map[string]any{"text": "hi"}, "timeout": 5})
	if echo["isError"] == true || resultText(t, echo) != "s: hi" {
		t.Fatalf("echo beside a slow call: %v", echo)
	}
	h.c.CancelToolCall("bot", "unknown-req") // ignored
	h.c.CancelToolCall("other-agent", "c1")  // not this agent's call: ignored
	select {
	case res := <-done:
		t.Fatalf("finished early: %v", res)
	default:
	}
	h.c.CancelToolCall("bot", "c1")
	res = <-done
	meta, _ = res["meta"].(map[string]any)
	if res["isError"] != true || meta[smcp.MetaCancelled] != true || meta[smcp.MetaCancelReason] != smcp.CancelReasonAgent {
		t.Fatalf("cancel: %v", res)
	}
	// The MCP server saw notifications/cancelled: its handler's context ended.
	if tag := <-f.SlowCancelled; tag != "c1" {
		t.Fatalf("server cancelled %q", tag)
	}
}

type refuser struct{ asked chan string }

func (r refuser) ConfirmToolCall(_ context.Context, c tools.Call, _ *tools.Entry) (bool, error) {
	r.asked <- c.Name
	return false, nil
}

func TestConfirmationPolicy(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	url := fixture(t, f)
	cfg := map[string]map[string]any{"s": {"url": url, "tool_meta": map[string]any{"add": map[string]any{"auto_apply": true}}}}

	deny := newComputer(t, cfg, func(o *computer.Options) { o.Confirm = tools.ConfirmDeny })
	res := deny.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"text": "x"}})
	if msg := resultText(t, res); res["isError"] != true || !strings.Contains(msg, "--confirm=deny") || !strings.Contains(msg, "auto_apply") {
		t.Fatalf("deny: %v", res)
	}
	if res := deny.call(smcp.EventToolCall, map[string]any{"tool_name": "add", "params": map[string]any{"a": 1, "b": 1}}); res["isError"] != false {
		t.Fatalf("auto_apply tool refused: %v", res)
	}

	r := refuser{asked: make(chan string, 1)}
	asked := newComputer(t, cfg, func(o *computer.Options) { o.ConfirmAsker = r })
	res = asked.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"text": "x"}})
	if res["isError"] != true || !strings.Contains(resultText(t, res), "refused by the user") || <-r.asked != "echo" {
		t.Fatalf("asker: %v", res)
	}
}

func TestRequestValidation(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})
	for _, tc := range []struct {
		event   string
		payload map[string]any
		code    float64
	}{
		{smcp.EventGetTools, map[string]any{"computer": "someone-else"}, 404},
		{smcp.EventToolCall, map[string]any{"tool_name": "echo", "timeout": 0}, 400},
		{smcp.EventToolCall, map[string]any{"tool_name": "echo", "timeout": 1.5}, 400},
		{smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": "x"}, 400},
		{smcp.EventToolCall, map[string]any{}, 400},
		{smcp.EventGetFinder, map[string]any{"limit": 0}, 400},
		{smcp.EventGetFinder, map[string]any{"limit": 101}, 400},
		{smcp.EventGetFinder, map[string]any{"offset": -1}, 400},
		{smcp.EventGetFinder, map[string]any{"keywords": "x"}, 400},
		{smcp.EventReadResource, map[string]any{"uri": "http://x"}, 400},
		{"client:unknown", map[string]any{}, 400},
	} {
		ans := h.call(tc.event, tc.payload)
		if ans["code"] != tc.code || ans["message"] == "" {
			t.Errorf("%s %v: %v", tc.event, tc.payload, ans)
		}
	}
	if ans := roundTrip(t, h.c.Handle(context.Background(), smcp.EventGetTools, []any{1})); ans["code"] != 400.0 {
		t.Fatalf("non-object payload: %v", ans)
	}
}

func TestGetConfigRedactsSecrets(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{
		"s": {"url": fixture(t, f), "headers": map[string]any{"Authorization": "Bearer secret"}},
		// Never started: shown in get_config only.
		"cli": {"command": "npx", "disabled": true, "args": []any{"mcp-remote", "-k", "secret-k", "--header", "Authorization: Bearer secret-h",
			"-e", "API_KEY=secret-e", "Bearer", "secret-b", "--port", "8080"}},
	})
	ans := h.call(smcp.EventGetConfig, map[string]any{})
	s := ans["servers"].(map[string]any)["s"].(map[string]any)
	if s["type"] != "streamable" || s["server_parameters"].(map[string]any)["headers"].(map[string]any)["Authorization"] != config.Redacted {
		t.Fatalf("config: %v", ans)
	}
	b, _ := json.Marshal(ans)
	if strings.Contains(string(b), "secret") {
		t.Fatalf("secret leaked: %s", b)
	}
	if !strings.Contains(string(b), `"mcp-remote","-k","***","--header","Authorization: ***","-e","API_KEY=***","Bearer","***","--port","8080"`) {
		t.Fatalf("stdio args: %s", b)
	}
}

func TestToolListChangedNotifies(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})
	h.upd.drain()
	f.AddEcho("shout")
	h.upd.wait(t, smcp.EventUpdateToolList)
	// The catalog was refreshed before the notification.
	if toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))["shout"] == nil {
		t.Fatal("new tool not listed after update_tool_list")
	}
}

func TestRuntimeConfigChanges(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}})
	bURL := fixture(t, b)
	sb, err := config.NewServer("b", map[string]any{"url": bURL, "tool_meta": map[string]any{"echo": map[string]any{"alias": "b_echo"}},
		"forbidden_tools": []any{"add", "slow", "pid"}})
	if err != nil {
		t.Fatal(err)
	}
	h.upd.drain()
	if err := h.c.SetServer(sb); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateConfig)
	h.upd.wait(t, smcp.EventUpdateToolList)
	if toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))["b_echo"] == nil {
		t.Fatal("b_echo missing after add")
	}
	if err := h.c.DisableServer("b"); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateToolList)
	if toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))["b_echo"] != nil {
		t.Fatal("b_echo listed while disabled")
	}
	if err := h.c.EnableServer("b"); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateToolList)
	if err := h.c.RemoveServer("b"); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateToolList)
	names := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	if names["b_echo"] != nil || names["echo"] == nil {
		t.Fatalf("after remove: %v", names)
	}
	if err := h.c.RemoveServer("b"); err == nil {
		t.Fatal("removing an unknown server succeeded")
	}
	if _, ok := h.call(smcp.EventGetConfig, map[string]any{})["servers"].(map[string]any)["b"]; ok {
		t.Fatal("removed server still in get_config")
	}
}

func TestApplyConfig(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	aURL, bURL := fixture(t, a), fixture(t, b)
	h := newComputer(t, map[string]map[string]any{"a": {"url": aURL}})
	cfg, err := config.Parse([]byte(`{"mcpServers": {
		"a": {"url": "`+aURL+`"},
		"b": {"url": "`+bURL+`", "type": "http"}}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	// The servers map to their SDK shape in both files: "a" is unchanged.
	h.upd.drain()
	if err := h.c.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateConfig)
	h.waitConnected("b")
	if s, _ := h.c.Servers().Snapshot("a"); s.Restarts != 0 || s.State != "connected" {
		t.Fatalf("unchanged server a was touched: %+v", s)
	}
	if h.upd.count(smcp.EventUpdateConfig) != 1 {
		t.Fatalf("update_config sent %d times for one added server", h.upd.count(smcp.EventUpdateConfig))
	}
	only, _ := config.Parse([]byte(`{"mcpServers": {"b": {"url": "`+bURL+`", "type": "http"}}}`), false)
	if err := h.c.ApplyConfig(only); err != nil {
		t.Fatal(err)
	}
	if names := h.c.Servers().Names(); len(names) != 1 || names[0] != "b" {
		t.Fatalf("servers after apply: %v", names)
	}
}

// TestResultJQ: a server's result_jq rewrites each result of its tools,
// marks it with meta.a2c_jq_transformed, and a program that fails gives an
// isError result naming result_jq; vrl is refused at load.
func TestResultJQ(t *testing.T) {
	f := testmcp.New("a", testmcp.Options{})
	g := testmcp.New("g", testmcp.Options{})
	url := fixture(t, f)
	h := newComputer(t, map[string]map[string]any{
		// A value: shown as text (and as structuredContent when an object).
		"calc": {"url": url, "forbidden_tools": []any{"echo", "slow", "pid"},
			"result_jq": `{doubled: (.structuredContent.sum * 2), was_error: .isError}`},
		// A CallToolResult: taken as the result; $server and $tool are set.
		"talk": {"url": url, "forbidden_tools": []any{"add", "slow", "pid"},
			"tool_meta": map[string]any{"echo": map[string]any{"alias": "talk_echo"}},
			"result_jq": `{content: [{type: "text", text: ("[" + $server + "/" + $tool + "] " + .content[0].text)}]}`},
		// A failing program.
		"bad": {"url": fixture(t, g), "forbidden_tools": []any{"add", "slow", "pid"},
			"tool_meta": map[string]any{"echo": map[string]any{"alias": "bad_echo"}},
			"result_jq": `.content[0].text | error("no " + .)`},
	})
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "add", "params": map[string]any{"a": 20, "b": 1}})
	meta, _ := res["meta"].(map[string]any)
	if res["isError"] != false || resultText(t, res) != `{"doubled":42,"was_error":false}` || meta[smcp.MetaJQTransformed] != true {
		t.Fatalf("add through result_jq: %v", res)
	}
	if sc, _ := res["structuredContent"].(map[string]any); sc["doubled"] != 42.0 {
		t.Fatalf("structuredContent: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "talk_echo", "params": map[string]any{"text": "hi"}})
	if res["isError"] != false || resultText(t, res) != "[talk/echo] a: hi" {
		t.Fatalf("echo through result_jq: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "bad_echo", "params": map[string]any{"text": "way"}})
	meta, _ = res["meta"].(map[string]any)
	if text := resultText(t, res); res["isError"] != true || !strings.Contains(text, "result_jq") || !strings.Contains(text, "no g: way") || meta[smcp.MetaJQTransformed] != nil {
		t.Fatalf("failing result_jq: %v", res)
	}

	for obj, want := range map[string]string{
		`{"url": "http://x", "vrl": ".x = 1"}`:   "vrl is not supported",
		`{"url": "http://x", "result_jq": ".["}`: "result_jq",
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(obj), &m)
		if _, err := config.NewServer("s", m); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", obj, err, want)
		}
	}
	if _, err := config.NewServer("s", map[string]any{"url": "http://x", "vrl": nil}); err != nil {
		t.Errorf("vrl: null: %v", err)
	}
}

// TestApplyConfigAnnouncesWhenServing: a reload that adds a slow server
// tells agents (update_config, then update_tool_list) only once that server
// is up, so that an agent refetching its tools on update_config (SDK 0.1.x)
// sees them all.
func TestApplyConfigAnnouncesWhenServing(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	bh := b.HTTPHandler()
	slowB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(300 * time.Millisecond) // a server that takes its time to start
		}
		bh.ServeHTTP(w, r)
	}))
	t.Cleanup(slowB.Close)
	aMoved := fixture(t, a) // before the computer: cleanups run last first
	var self atomic.Pointer[computer.Computer]
	toolsAtConfig := make(chan map[string]map[string]any, 4)
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}}, func(o *computer.Options) {
		record := o.OnUpdate
		o.OnUpdate = func(ev string) {
			if c := self.Load(); c != nil && ev == smcp.EventUpdateConfig {
				ans := roundTrip(t, c.Handle(context.Background(), smcp.EventGetTools, map[string]any{"computer": "pc", "req_id": "r"}))
				toolsAtConfig <- toolNames(t, ans)
			}
			record(ev)
		}
	})
	self.Store(h.c)
	h.upd.drain()
	cfg, err := config.Parse([]byte(`{"mcpServers": {"a": {"url": "`+aMoved+`"},
		"b": {"url": "`+slowB.URL+`", "tool_meta": {"echo": {"alias": "b_echo"}}, "forbidden_tools": ["add", "slow", "pid"]}}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	// "a" changes too (its URL): it restarts under the reload.
	if err := h.c.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case names := <-toolsAtConfig:
		if names["b_echo"] == nil || names["echo"] == nil {
			t.Fatalf("update_config announced a configuration that is not serving yet: tools %v", names)
		}
	default:
		t.Fatal("no update_config when ApplyConfig returned")
	}
	var order []string
	for len(h.upd.ch) > 0 {
		order = append(order, <-h.upd.ch)
	}
	first := slices.IndexFunc(order, func(ev string) bool { return ev == smcp.EventUpdateConfig || ev == smcp.EventUpdateToolList })
	if first < 0 || order[first] != smcp.EventUpdateConfig || !slices.Contains(order, smcp.EventUpdateToolList) {
		t.Fatalf("events of the reload: %v (want update_config first, then update_tool_list)", order)
	}
	if n := h.upd.count(smcp.EventUpdateToolList); n != 1 {
		t.Fatalf("update_tool_list sent %d times in one reload: %v", n, order)
	}
}
