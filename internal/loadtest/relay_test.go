package loadtest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestRelayFloorForwards: the relay floor's CallTool and MCP tools/call are
// refused while the office has no computer, and answer with what the echo
// computer answers once it has joined (the in-place floors answer without
// one): the relay rows measure a leg to a real computer.
func TestRelayFloorForwards(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	base := serveKind(ctx, t, KindRelay)

	rpc := smcpv1connect.NewAgentServiceClient(http.DefaultClient, base)
	params, err := structpb.NewStruct(map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	callTool := func() (*smcpv1.CallToolResponse, error) {
		return rpc.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo", ReqId: "r1", Params: params, Timeout: 5})
	}
	mcpClient := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := mcpClient.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp/o"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	mcpCall := func() (*mcp.CallToolResult, error) {
		return session.CallTool(ctx, &mcp.CallToolParams{Name: "pc__echo", Arguments: map[string]any{"text": "hi"}})
	}

	if _, err := callTool(); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("CallTool without a computer: %v, want unavailable", err)
	}
	if res, err := mcpCall(); err == nil && !res.IsError {
		t.Fatalf("tools/call without a computer answered %+v", res)
	}

	o := Options{URL: base, Path: "/socket.io/"}
	comp := new(*Conn)
	c, err := o.dial(ctx, base, echoComputer(comp))
	if err != nil {
		t.Fatal(err)
	}
	*comp = c
	defer c.Close()
	if err := join(ctx, c, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}

	const echoed = `{"text":"hi"}`
	res, err := callTool()
	if err != nil {
		t.Fatal(err)
	}
	content := res.GetResult().GetContent()
	if res.GetReqId() != "r1" || len(content) != 1 || content[0].GetFields()["text"].GetStringValue() != echoed || res.GetResult().GetIsError() {
		t.Errorf("CallTool answered %v, want the echo of %s", res, echoed)
	}
	mres, err := mcpCall()
	if err != nil {
		t.Fatal(err)
	}
	if text, ok := mres.Content[0].(*mcp.TextContent); !ok || text.Text != echoed || mres.IsError {
		t.Errorf("tools/call answered %+v, want the echo of %s", mres, echoed)
	}
}
