package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// Connections that come and go must not leave goroutines behind in the
// gateway (the upstream engine leaked one per connection closed by its peer:
// see internal/fork/socketio/PATCHED.md). The clients run in Node, so every
// goroutine counted here is the gateway's.
func TestConnectionChurnLeavesNoGoroutines(t *testing.T) {
	dir := nodetest.Require(t, ".")
	ring, err := core.NewKeyRing(core.Key{Key: "computer-secret"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Start(gateway.Config{Auth: ring}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop() }()
	base := runtime.NumGoroutine()

	// slack covers what does not scale with connections (idle HTTP
	// keep-alive connections, timers).
	const n, slack = 60, 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "churn.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SMCP_URL="+g.URL, "SMCP_COMPUTER_KEY=computer-secret", fmt.Sprint("SMCP_CHURN=", n))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node churn.mjs: %v\n%s", err, out)
	}
	// Closing connections finishes asynchronously: poll until it settles.
	var now int
	testwait.Poll(10*time.Second, func() bool { now = runtime.NumGoroutine(); return now <= base+slack })
	t.Logf("goroutines: %d before, %d after %d connections came and went", base, now, n)
	if now > base+slack {
		_ = pprof.Lookup("goroutine").WriteTo(os.Stdout, 2)
		t.Fatalf("%d goroutines left behind by %d closed connections", now-base, n)
	}
}
