package mcpfront_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// In a cluster, an MCP session on one node uses the computers of another:
// listing, calling, and hearing a computer join there.
func TestClusterSessionUsesOtherNodesComputers(t *testing.T) {
	redis := "redis://" + miniredis.RunT(t).Addr()
	node := func(id string) *gateway.Running {
		return startGateway(t, gateway.Config{Redis: redis, NodeID: id, HeartbeatTTL: 600 * time.Millisecond})
	}
	n0, n1 := node("n0"), node("n1")
	fx1 := newFixture(t, "pc1")
	startComputer(t, n1, keyA, "A", "pc1", map[string]string{"fx": fx1.url})

	changed := make(chan struct{}, 8)
	cs := mustDial(t, n0, "A", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "x-api-key", keyA)
	if toolNames(t, cs)["pc1__echo"] == nil {
		t.Fatalf("node 0's session lists %v", keys(toolNames(t, cs)))
	}
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__echo", Arguments: map[string]any{"text": "across"}})
	if err != nil || text(t, res) != "pc1: across" {
		t.Fatalf("cross-node call: %v %+v", err, res)
	}
	startComputer(t, n1, keyA, "A", "pc2", map[string]string{"fx": newFixture(t, "pc2").url})
	recv(t, changed, "tools/list_changed on node 0 when pc2 joined node 1")
	testwait.Within(t, waitFor, "pc2's tools on node 0", func() bool { return toolNames(t, cs)["pc2__echo"] != nil })
}
