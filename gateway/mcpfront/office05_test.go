package mcpfront_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// In a 0.5 office (one computer) the MCP tools are named as the computer
// lists them, without its name: when another computer takes the seat, the
// client is told (tools/list_changed) and the same names now call the new
// computer. A 0.4 office beside it keeps the {computer}__ prefix.
func TestOffice05ToolNamesSurviveARebind(t *testing.T) {
	g := startGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V04, smcp.V05}}})
	one, two := newFixture(t, "one"), newFixture(t, "two")
	leave := startComputerWith(t, g, keyA, "A", "pc1", map[string]string{"fx": one.url},
		computer.Gateway{Dial: sioclient.Options{Logger: quiet}}, computer.Protocol05)

	changed := make(chan struct{}, 16)
	cs := mustDial(t, g, "A", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}, "x-api-key", keyA)
	var names []string
	testwait.Within(t, waitFor, "pc1's tools listed", func() bool {
		names = keys(toolNames(t, cs))
		return slices.Contains(names, "fx__echo")
	})
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "pc1__") }) {
		t.Fatalf("0.5 tools named with the computer: %v", names)
	}
	call := func(want string) {
		t.Helper()
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || text(t, res) != want {
			t.Fatalf("fx__echo: %v %+v, want %q", err, res, want)
		}
	}
	call("one: hi")

	drain(changed)
	leave()
	startComputerWith(t, g, keyA, "A", "pc2", map[string]string{"fx": two.url},
		computer.Gateway{Dial: sioclient.Options{Logger: quiet}}, computer.Protocol05)
	recv(t, changed, "tools/list_changed after the rebind")
	testwait.Within(t, waitFor, "the call to reach pc2", func() bool {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
		return err == nil && !res.IsError && text(t, res) == "two: hi"
	})

	// A 0.4 office beside it: names keep the computer.
	startComputerWith(t, g, keyB, "B", "pc4", map[string]string{"fx": one.url},
		computer.Gateway{Dial: sioclient.Options{Logger: quiet}}, computer.Protocol04)
	cs4 := mustDial(t, g, "B", nil, "x-api-key", keyB)
	testwait.Within(t, waitFor, "pc4's tools listed", func() bool { return toolNames(t, cs4)["pc4__fx__echo"] != nil })
}
