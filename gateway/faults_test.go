package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// A computer that does not answer holds only its own calls: other computers
// of the same office, other offices, and the slow computer's other
// (non-tool) requests are all answered while its tool calls hang.
func TestSlowComputerDelaysNoOneElse(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	ctx := ctxT(t)
	slow := dialComputer(t, g.URL, "slow", "o")
	slow.block = make(chan struct{})
	defer close(slow.block)
	dialComputer(t, g.URL, "fast", "o")
	dialComputer(t, g.URL, "pc", "other")
	a := dialAgent(t, g.URL, "alice", "o")
	b := dialAgent(t, g.URL, "bob", "other")

	const hung = 8
	for range hung {
		go func() {
			_, _ = a.CallTool(context.Background(), &smcpv1.ToolCallReq{Computer: "slow", ToolName: "echo", Timeout: 60})
		}()
	}
	for range hung {
		select {
		case <-slow.arrived:
		case <-ctx.Done():
			t.Fatal("tool calls did not reach the slow computer")
		}
	}
	// Everything else still flows while the eight calls hang.
	for range 20 {
		if _, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "fast", ToolName: "echo", Timeout: 5}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Timeout: 5}); err != nil {
			t.Fatal(err)
		}
		// The slow computer's own connection is not blocked either: a
		// request that its handler answers at once comes back.
		if _, err := a.GetTools(ctx, "slow"); err != nil {
			t.Fatal(err)
		}
	}
}

// When the gateway restarts, Connect callers see Unavailable while it is
// down and succeed again once it is back and the computer has re-joined.
func TestRPCUnavailableThenRecovers(t *testing.T) {
	g1, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(g1.URL, "http://")
	dialComputer(t, g1.URL, "pc", "o")
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, g1.URL)
	// A deadline per call: the computer's re-join after the restart can take
	// its reconnect backoff (up to 5 s), and one context for the whole test
	// would end before eventually's wait does.
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cl.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "o", Computer: "pc"})
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	if err := g1.Stop(); err != nil {
		t.Fatal(err)
	}
	if code := connect.CodeOf(get()); code != connect.CodeUnavailable {
		t.Fatalf("gateway down: code %v, want Unavailable", code)
	}
	startGatewayAt(t, addr)
	testwait.Until(t, "RPC answered again after the restart", func() bool { return get() == nil })
}
