package core

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestConnections lists what is attached to a node, for the operator:
// Socket.IO sessions in an office and in none, a lease that lapses (an MCP
// session, an RPC stream) and one held for a call, watchers; each with its
// principal and front end; and nothing once they are gone.
func TestConnections(t *testing.T) {
	h := New(Config{Node: "n1"})
	a, _ := attach(t, h, "a")
	join(t, a, smcp.RoleAgent, "alice", "o")
	c, _ := attach(t, h, "c")
	join(t, c, smcp.RoleComputer, "pc", "o")
	idle, _ := attach(t, h, "idle")
	mcp := &Principal{ID: "mcp-key"}
	lease, err := h.TakeSeat(context.Background(), mcp, "p", "bot", Seat{Front: FrontMCP, Lapses: true})
	if err != nil {
		t.Fatal(err)
	}
	call, err := h.TakeSeat(context.Background(), allowAll, "q", "rpc", Seat{Front: FrontRPC, Protocol: "grpc"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := h.Watch(mcp, "p")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range h.Connections() {
		if c.Since <= 0 || c.Node != "n1" {
			t.Errorf("%+v: no since or node", c)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s %s %t", c.Office, c.Kind, c.Name, c.Principal, c.Front, c.Protocol, c.Lapses))
	}
	want := []string{
		" session  test socket.io 0.2 false",
		"o agent alice test socket.io 0.2 false",
		"o computer pc test socket.io 0.2 false",
		"p seat bot mcp-key mcp  true",
		"p watch  mcp-key   false",
		"q seat rpc test rpc grpc false",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("connections:\n%q\nwant\n%q", got, want)
	}
	for _, end := range []func(){a.Close, c.Close, idle.Close, lease.Close, call.Close, w.Close} {
		end()
	}
	if cs := h.Connections(); len(cs) != 0 {
		t.Fatalf("after every close: %+v", cs)
	}
}
