package computer_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// everythingServer returns the entry point of server-everything in
// test/npm-mcp.
func everythingServer(t *testing.T) string {
	t.Helper()
	return nodetest.EverythingServer(t, filepath.Join("..", "test", "npm-mcp"))
}

// TestNPMServerEverything runs the reference MCP server from npm over stdio,
// configured in the Claude Desktop mcpServers shape, and drives it through
// the computer's client: handlers.
func TestNPMServerEverything(t *testing.T) {
	entry := everythingServer(t)
	h := newComputer(t, map[string]map[string]any{
		"everything": {"command": "node", "args": []any{entry, "stdio"},
			"tool_meta": map[string]any{"get-sum": map[string]any{"alias": "sum"}}},
	})
	names := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	for _, want := range []string{"echo", "sum", "trigger-long-running-operation", "gzip-file-as-resource"} {
		if names[want] == nil {
			t.Fatalf("tool %s not listed: %v", want, slices.Sorted(func(yield func(string) bool) {
				for n := range names {
					if !yield(n) {
						return
					}
				}
			}))
		}
	}
	// The server registers more tools once initialized and says so with
	// notifications/tools/list_changed: the computer refreshes its catalog
	// and emits server:update_tool_list (a second one, after the one for the
	// connection itself).
	if !testwait.Poll(testwait.Timeout, func() bool { return h.upd.count(smcp.EventUpdateToolList) >= 2 }) {
		t.Fatalf("no update_tool_list for the server's tools/list_changed (%d)", h.upd.count(smcp.EventUpdateToolList))
	}
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"message": "hello npm"}, "timeout": 20})
	if res["isError"] != false || !strings.Contains(resultText(t, res), "hello npm") {
		t.Fatalf("echo: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "sum", "params": map[string]any{"a": 40, "b": 2}, "timeout": 20})
	if res["isError"] != false || !strings.Contains(resultText(t, res), "42") {
		t.Fatalf("sum: %v", res)
	}
	// Schema-invalid arguments come back as an isError result.
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "sum", "params": map[string]any{"a": "forty"}, "timeout": 20})
	if res["isError"] != true {
		t.Fatalf("invalid sum: %v", res)
	}

	// Cancellation reaches the third-party server as notifications/cancelled.
	done := make(chan map[string]any, 1)
	go func() {
		done <- roundTrip(t, h.c.Handle(context.Background(), smcp.EventToolCall, map[string]any{
			"agent": "bot", "req_id": "long-1", "computer": "pc", "tool_name": "trigger-long-running-operation",
			"params": map[string]any{"duration": 30, "steps": 3}, "timeout": 60}))
	}()
	// The call registers itself before it reaches the server; a cancel that
	// arrives before that is ignored, so keep asking until it lands.
	deadline := time.Now().Add(10 * time.Second)
	for res = nil; res == nil; {
		h.c.CancelToolCall("bot", "long-1")
		select {
		case res = <-done:
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the long-running call was not cancelled")
			}
		}
	}
	if meta, _ := res["meta"].(map[string]any); res["isError"] != true || meta[smcp.MetaCancelled] != true {
		t.Fatalf("cancelled call: %v", res)
	}

	// Its resources/list_changed is handled (the list is refreshed), and
	// since it only serves demo:// resources, neither Desktop nor Finder is
	// told about it (PROTOCOL.md §6: only window:// and dpe:// sets count).
	h.upd.drain()
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "gzip-file-as-resource", "timeout": 20,
		"params": map[string]any{"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8gbnBt", "outputType": "resourceLink"}})
	if res["isError"] != false {
		t.Fatalf("gzip: %v", res)
	}
	var snap servers.Snapshot
	if !testwait.Poll(testwait.Timeout, func() bool {
		snap, _ = h.c.Servers().Snapshot("everything")
		return slices.ContainsFunc(snap.Resources, func(r *mcp.Resource) bool { return strings.HasSuffix(r.URI, "/hello.txt.gz") })
	}) {
		t.Fatalf("resource list not refreshed after list_changed: %d resources", len(snap.Resources))
	}
	if n := h.upd.count(smcp.EventUpdateDesktop) + h.upd.count(smcp.EventUpdateFinder); n != 0 {
		t.Fatalf("%d desktop/finder updates for demo:// resources", n)
	}
	if got := h.call(smcp.EventReadResource, map[string]any{"uri": "demo://resource/static/document/architecture.md"}); got["code"] != 400.0 {
		t.Fatalf("demo:// read: %v", got)
	}
}

// TestNPMServerEnvironment asks a third-party server (server-everything's
// get-env tool prints its process.env) what environment it was started
// with: the default set, the opted-in names and the configuration's env;
// never the gateway API key or an input value, even when opted in by a
// case variant, nor any other variable of the computer.
func TestNPMServerEnvironment(t *testing.T) {
	entry := everythingServer(t)
	t.Setenv("SMCP_API_KEY", "gateway-secret-1")
	t.Setenv("A2C_SMCP_TOKEN", "input-secret-2")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "cloud-secret-3")
	t.Setenv("OPTED_IN", "shared-4")
	t.Setenv("LC_TIME", "C")
	t.Setenv("TZ", "UTC")
	h := newComputer(t, map[string]map[string]any{
		"everything": {"command": "node", "args": []any{entry, "stdio"},
			"env": map[string]any{"FROM_CONFIG": "five", "TZ": "Europe/Paris"}, "inherit_env": []any{"OPTED_IN"}},
	})
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "get-env", "params": map[string]any{}, "timeout": 20})
	if res["isError"] != false {
		t.Fatalf("get-env: %v", res)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(resultText(t, res)), &env); err != nil {
		t.Fatalf("get-env text: %v", err)
	}
	for k, v := range env {
		if strings.Contains(v, "secret") {
			t.Errorf("the MCP server sees %s=%s", k, v)
		}
	}
	want := map[string]string{"PATH": os.Getenv("PATH"), "OPTED_IN": "shared-4", "FROM_CONFIG": "five", "TZ": "Europe/Paris", "LC_TIME": "C"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if len(env) > 20 {
		t.Errorf("the MCP server sees %d variables: %v", len(env), slices.Sorted(maps.Keys(env)))
	}

	// Asking for the computer's own variables is refused at load, loudly.
	for _, name := range []string{"SMCP_API_KEY", "smcp_api_key", "A2C_SMCP_TOKEN"} {
		_, err := config.NewServer("x", map[string]any{"command": "node", "inherit_env": []any{name}})
		if err == nil || !strings.Contains(err.Error(), "never passed to MCP servers") {
			t.Errorf("inherit_env %s: %v", name, err)
		}
	}
}

// The same npm server under the 0.4 profile: exposed names by bundle id
// (by alias too), get_config keyed by bundle id, get_resources paging
// through its resource list with its own cursors.
func TestNPMServerEverything04(t *testing.T) {
	entry := everythingServer(t)
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"Everything (npm)": map[string]any{"command": "node", "args": []any{entry, "stdio"},
			"tool_meta": map[string]any{"get-sum": map[string]any{"alias": "sum", "auto_apply": true}}}}})
	h := newComputerFrom(t, "0.4", string(doc), []string{"Everything (npm)"})
	names := toolNames(t, h.call(smcp.EventGetTools, map[string]any{}))
	for _, want := range []string{"Everything_npm__echo", "Everything_npm__sum"} {
		if names[want] == nil || names[want]["bundle_id"] != "Everything_npm" {
			t.Fatalf("tool %s: %v", want, names[want])
		}
	}
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "Everything_npm__echo", "params": map[string]any{"message": "hello 0.4"}, "timeout": 20})
	if res["isError"] != false || !strings.Contains(resultText(t, res), "hello 0.4") {
		t.Fatalf("echo: %v", res)
	}
	res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "Everything_npm__sum", "params": map[string]any{"a": 40, "b": 2}, "timeout": 20})
	if res["isError"] != false || !strings.Contains(resultText(t, res), "42") {
		t.Fatalf("sum by alias: %v", res)
	}
	cfg := h.call(smcp.EventGetConfig, map[string]any{})
	if srvs, _ := cfg["servers"].(map[string]any); len(srvs) != 1 || srvs["Everything_npm"] == nil {
		t.Fatalf("get_config servers: %v", cfg["servers"])
	}
	var uris []string
	pages, cursor := 0, ""
	for ; pages < 50; pages++ {
		req := map[string]any{"mcp_server": "Everything_npm"}
		if cursor != "" {
			req["cursor"] = cursor
		}
		ret := h.call(smcp.EventGetResources, req)
		list, ok := ret["resources"].([]any)
		if !ok {
			t.Fatalf("get_resources: %v", ret)
		}
		for _, r := range list {
			uris = append(uris, r.(map[string]any)["uri"].(string))
		}
		if cursor, _ = ret["next_cursor"].(string); cursor == "" {
			break
		}
	}
	s, _ := h.c.Servers().Snapshot("Everything (npm)")
	if len(uris) != len(s.Resources) || len(uris) == 0 {
		t.Fatalf("%d resources over %d pages, the server lists %d", len(uris), pages+1, len(s.Resources))
	}
	t.Logf("%d resources in %d pages", len(uris), pages+1)
}
