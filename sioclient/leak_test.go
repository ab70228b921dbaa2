package sioclient_test

import (
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/sioclient"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// A closed client leaves nothing behind: no goroutine, and no memory once
// collected. Upstream, each client kept ~32 KiB forever (task queues with a
// finalizer in a reference cycle, never collected; see
// internal/fork/socketio/PATCHED.md): 200 clients would leave 6 MiB.
func TestClosedClientsAreReleased(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()
	settle := func() (int, uint64) {
		time.Sleep(200 * time.Millisecond)
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapInuse
	}
	dialClose := func(n int) {
		for range n {
			c, err := sioclient.Dial(t.Context(), sioclient.Options{URL: gw.URL, NoReconnect: true, Transports: sioclient.TransportsPollingFirst})
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
	}
	dialClose(20) // warm pools and the gateway's maps
	g0, h0 := settle()
	const n = 200
	dialClose(n)
	var g1 int
	var h1 uint64
	testwait.Poll(5*time.Second, func() bool { g1, h1 = settle(); return g1 <= g0 })
	perClient := (int64(h1) - int64(h0)) / n
	t.Logf("goroutines %d → %d; heap %+d B per closed client", g0, g1, perClient)
	if g1 > g0 {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("%d goroutines left by %d closed clients:\n%s", g1-g0, n, stacks.String())
	}
	if perClient > 4<<10 {
		t.Errorf("each closed client keeps %d B of heap", perClient)
	}
}
