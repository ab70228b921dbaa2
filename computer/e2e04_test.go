package computer_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A 0.4 office end to end: a real gateway on loopback, a 0.4 computer
// hosting a go-sdk MCP server over streamable HTTP and
// @modelcontextprotocol/server-everything from npm over stdio, and a 0.4
// Socket.IO agent. get_tools names, tool_call by exposed name and by
// alias, get_config keys and get_resources paging, all through the
// gateway.
func TestE2EOffice04(t *testing.T) {
	entry := everythingServer(t)
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	docs, _ := json.Marshal(map[string]any{"servers": map[string]any{
		"files": map[string]any{"type": "streamable", "server_parameters": map[string]any{"url": pagedServer(t, 5, 2)}},
		"go sdk": map[string]any{"type": "streamable", "server_parameters": map[string]any{"url": fixture(t, testmcp.New("a", testmcp.Options{}))},
			"tool_meta": map[string]any{"echo": map[string]any{"alias": "say"}}},
	}, "mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []any{entry, "stdio"}},
	}})
	h := newComputerFrom(t, computer.Protocol04, string(docs), []string{"files", "go sdk", "everything"})
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-04", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)

	ag, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Version: "0.4.0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.JoinOffice(ctxT(t), smcp.RoleAgent, "bot", "office-04"); err != nil {
		t.Fatal(err)
	}
	n := 0
	ask := func(event string, extra map[string]any) map[string]any {
		t.Helper()
		n++
		req := map[string]any{"agent": "bot", "req_id": fmt.Sprintf("r%d", n), "computer": "pc"}
		for k, v := range extra {
			req[k] = v
		}
		args, err := ag.RequestArgs(ctxT(t), event, req)
		if err != nil || len(args) == 0 {
			t.Fatalf("%s: %v %v", event, args, err)
		}
		var out map[string]any
		if err := json.Unmarshal(args[0], &out); err != nil {
			t.Fatalf("%s: answer %s", event, args[0])
		}
		return out
	}

	var names map[string]map[string]any
	if !testwait.Poll(20*time.Second, func() bool {
		names = toolNames(t, ask(smcp.EventGetTools, nil))
		return names["everything__echo"] != nil && names["go_sdk__say"] != nil
	}) {
		t.Fatalf("tools through the gateway: %v", names)
	}
	for name, tool := range names {
		id, _ := tool["bundle_id"].(string)
		if id == "" || !strings.HasPrefix(name, id+"__") {
			t.Errorf("tool %s has bundle_id %q", name, id)
		}
	}
	res := ask(smcp.EventToolCall, map[string]any{"tool_name": "go_sdk__say", "params": map[string]any{"text": "alias"}, "timeout": 20})
	if res["isError"] != false || resultText(t, res) != "a: alias" {
		t.Errorf("call by alias: %v", res)
	}
	res = ask(smcp.EventToolCall, map[string]any{"tool_name": "everything__echo", "params": map[string]any{"message": "via npm"}, "timeout": 20})
	if res["isError"] != false || !strings.Contains(resultText(t, res), "via npm") {
		t.Errorf("call of the npm server by exposed name: %v", res)
	}
	res = ask(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{}, "timeout": 20})
	if m, _ := res["meta"].(map[string]any); res["isError"] != true || m[smcp.MetaCode] != float64(smcp.CodeToolNotFound) {
		t.Errorf("a bare MCP name: %v", res)
	}

	cfg := ask(smcp.EventGetConfig, nil)
	srvs, _ := cfg["servers"].(map[string]any)
	keys := make([]string, 0, len(srvs))
	for k := range srvs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "everything,files,go_sdk" {
		t.Errorf("get_config keys %q", keys)
	}

	var uris []string
	cursor := ""
	for page := 0; page < 10; page++ {
		req := map[string]any{"mcp_server": "files"}
		if cursor != "" {
			req["cursor"] = cursor
		}
		ret := ask(smcp.EventGetResources, req)
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
	if len(uris) != 5 {
		t.Errorf("get_resources over the pages: %q", uris)
	}
	if ret := ask(smcp.EventGetResources, map[string]any{"mcp_server": "nope"}); ret["code"] != float64(smcp.CodeMCPServerNotFound) || ret["mcp_server"] != "nope" {
		t.Errorf("unknown bundle id through the gateway: %v", ret)
	}
}
