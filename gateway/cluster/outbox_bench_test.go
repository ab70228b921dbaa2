package cluster_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
)

// BenchmarkOutboxSend publishes frames of 120 bytes to a real redis-server
// in round trips of 1 to 60 frames, as the outbox does; cpu-ns/op is the
// process's CPU (user and system) per frame, which wall time hides: most
// of a round trip's cost is the kernel's and the Go scheduler's.
func BenchmarkOutboxSend(b *testing.B) {
	o := cluster.NewOutbox(realRedis(b))
	ctx := context.Background()
	for _, n := range []int{1, 5, 15, 30, 60} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			c0 := processCPU()
			for i := 0; i < b.N; i += n {
				o.Send(ctx, "nobody", n, 120)
			}
			b.ReportMetric(float64(processCPU()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
