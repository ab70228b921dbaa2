package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	smcpcomputer "github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// hostedConfig writes the MCP configuration of a hosted computer:
// @modelcontextprotocol/server-everything over stdio, and the go-sdk
// fixture over streamable HTTP with its add tool listed as sum.
func hostedConfig(t *testing.T) string {
	t.Helper()
	dir := nodetest.Require(t, filepath.Join("..", "test", "npm-mcp"))
	entry := filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("server-everything not installed: %v", err)
	}
	web := httptest.NewServer(testmcp.New("web", testmcp.Options{}).HTTPHandler())
	t.Cleanup(web.Close)
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []any{entry, "stdio"}},
		"web":        map[string]any{"url": web.URL, "tool_meta": map[string]any{"add": map[string]any{"alias": "sum"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A computer the gateway hosts (no Socket.IO connection of its own), with
// a stdio server from npm and a streamable HTTP one, is called by agents
// on Socket.IO, Connect, gRPC and MCP as an external computer is, and is
// listed as a hosted connection.
func TestHostedComputerOnEveryFrontEnd(t *testing.T) {
	r := startGateway(t, gateway.Config{Logger: testLogger, Computers: []hosted.Spec{{
		Name: govPC, Office: govOffice, Config: hostedConfig(t), Protocol: smcpcomputer.Protocol04, Confirm: tools.ConfirmAuto,
	}}})
	e := &govEnv{g: r, version: smcpcomputer.Protocol04, prefix: "everything__"}
	echo, sum := e.prefix+"echo", "web__sum"
	full := rpcClient(t, r.URL, false, connecttest.Headers(rpc.AgentHeader, "bot"))
	testwait.Until(t, "the hosted computer's tools", func() bool {
		res, err := full.GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: govOffice, Computer: govPC})
		if err != nil {
			return false
		}
		var names []string
		for _, tool := range res.GetTools() {
			names = append(names, tool.GetName())
		}
		return slices.Contains(names, echo) && slices.Contains(names, sum) && slices.Contains(names, e.prefix+"get-sum")
	})
	hostedConn := slices.IndexFunc(r.Hub.Connections(), func(c core.Connection) bool {
		return c.Kind == core.ConnComputer && c.Front == core.FrontHosted && c.Name == govPC && c.Office == govOffice
	})
	if hostedConn < 0 {
		t.Fatalf("no hosted computer among the connections: %+v", r.Hub.Connections())
	}
	check := func(t *testing.T, fe frontEnd, prefix string) {
		t.Helper()
		listed := fe.list(t)
		for _, tool := range []string{prefix + echo, prefix + sum} {
			if !slices.Contains(listed, tool) {
				t.Fatalf("%s not listed: %v", tool, listed)
			}
			if refused := fe.call(t, tool); refused != "" {
				t.Fatalf("%s refused: %s", tool, refused)
			}
		}
	}
	// One agent seat per office: each front end in turn.
	t.Run("socket.io", func(t *testing.T) { check(t, e.sioFront(t, ""), "") })
	t.Run("connect", func(t *testing.T) { check(t, e.rpcFront(t, false, rpc.DefaultAPIKeyHeader, ""), "") })
	t.Run("grpc", func(t *testing.T) { check(t, e.rpcFront(t, true, rpc.DefaultAPIKeyHeader, ""), "") })
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("mcp "+version, func(t *testing.T) { check(t, e.mcpFront(t, version, "x-api-key", ""), govPC+"__") })
	}
}
