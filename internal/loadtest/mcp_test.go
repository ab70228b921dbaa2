package loadtest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
)

// Both MCP modes drive tools/call through a real gateway's /mcp/{office_id}
// to the echo computer, with no errors, in turns with the Socket.IO mode.
func TestMCPModesCallThroughGateway(t *testing.T) {
	// One agent socket carries more than the default 2,000 events/s here
	// on a quiet machine: the limit is raised as the bench's gateway
	// raises it (Serve), or the Socket.IO turn is refused with 429s.
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, SIO: sio.Config{EventsPerSecond: 1e7},
		MCP: mcpfront.Options{EventsPerSecond: 1e7}}, "127.0.0.1:0")
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

// The floor relay answers both MCP modes in place (its MCP floor), with no
// errors: the bench's gateway/MCP floor ratio compares two working paths.
func TestMCPModesOnFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	base := serveKind(ctx, t, KindFloor)
	var runs []Options
	for _, m := range []Mode{ModeMCP, ModeMCPRaw} {
		runs = append(runs, Options{URL: base, Mode: m, Offices: 2, InFlight: 2, Duration: 600 * time.Millisecond, ParamBytes: 64})
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

// serveKind serves a server of kind (Serve) on a loopback port until ctx
// ends, and returns its base URL; the test fails if it ends with an error.
func serveKind(ctx context.Context, t *testing.T, kind string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, kind, Node{}, ln, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("%s: %v", kind, err)
		}
	})
	return "http://" + ln.Addr().String()
}
