package loadtest

import (
	"context"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// Both MCP modes drive tools/call through a real gateway's /mcp/{office_id}
// to the echo computer, with no errors, in turns with the Socket.IO mode.
func TestMCPModesCallThroughGateway(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var runs []Options
	for _, m := range []Mode{ModeSIO, ModeMCP, ModeMCPRaw} {
		runs = append(runs, Options{URL: r.URL, Mode: m, Offices: 2, InFlight: 2, Duration: 600 * time.Millisecond, ParamBytes: 64})
	}
	res, err := RunTurns(ctx, runs, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range res {
		if x.Calls == 0 || x.Errors != 0 {
			t.Errorf("%s: %d calls, %d errors (%s)", x.Mode, x.Calls, x.Errors, x.FirstError)
		}
	}
}
