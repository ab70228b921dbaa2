package computer_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGetFinder10k answers client:get_finder over 10,000 documents
// from 10 MCP servers. The documents are read once when the servers
// connect; each call is a filter, a sort and a page over the cache.
func BenchmarkGetFinder10k(b *testing.B) {
	const nServers, perServer = 10, 1000
	cfg := map[string]map[string]any{}
	for i := range nServers {
		name := fmt.Sprintf("docs%02d", i)
		f := testmcp.New(name, testmcp.Options{})
		f.SetDocs(name+".host", docs(name, perServer)...)
		srv := fixture(b, f)
		cfg[name] = map[string]any{"url": srv, "forbidden_tools": []any{"echo", "add", "slow", "pid"}}
	}
	start := time.Now()
	h := newComputer(b, cfg)
	if page, total := finderDocs(b, h.call(smcp.EventGetFinder, map[string]any{})); total != nServers*perServer || len(page) != 20 {
		b.Fatalf("total %d page %d", total, len(page))
	}
	b.Logf("cache filled from %d servers in %s", nServers, time.Since(start))
	for _, bc := range []struct {
		name string
		req  map[string]any
	}{
		{"all", map[string]any{"offset": 40, "limit": 20}},
		{"keywords", map[string]any{"keywords": []any{"REPORT 99", "k3"}, "limit": 100}},
		{"file_type", map[string]any{"file_type": "xlsx", "offset": 4000, "limit": 50}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := map[string]any{"agent": "bot", "req_id": "bench", "computer": "pc"}
			for k, v := range bc.req {
				req[k] = v
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for b.Loop() {
				ans := h.c.Handle(context.Background(), smcp.EventGetFinder, req).(map[string]any)
				if ans["total_count"].(int) == 0 {
					b.Fatal("nothing found")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/call")
			// CPU time of the whole process: on a shared machine wall time
			// also counts waiting for a core.
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/call")
		})
	}
}
