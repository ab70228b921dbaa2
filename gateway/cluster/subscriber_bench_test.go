package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
)

// BenchmarkInboxReceive reads messages already queued on the connection of
// a real redis-server with go-redis's PubSub and with the inbox's own
// reader: the cost of one frame received (-benchmem: its allocations).
func BenchmarkInboxReceive(b *testing.B) {
	rdb := realRedis(b)
	ctx := context.Background()
	frame := []byte(strings.Repeat("x", 120))
	fill := func(b *testing.B, n int) {
		b.StopTimer()
		p := rdb.Pipeline()
		for range n {
			p.Publish(ctx, "bench", frame)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.Run("pubsub", func(b *testing.B) {
		sub := rdb.Subscribe(ctx, "bench")
		defer func() { _ = sub.Close() }()
		if _, err := sub.Receive(ctx); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < b.N; {
			n := min(b.N-done, 10000)
			fill(b, n)
			for range n {
				if _, err := sub.ReceiveMessage(ctx); err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
	})
	b.Run("subscriber", func(b *testing.B) {
		s, err := cluster.Subscribe(ctx, rdb.Options(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for done := 0; done < b.N; {
			n := min(b.N-done, 10000)
			fill(b, n)
			for range n {
				if _, err := s.Next(); err != nil {
					b.Fatal(err)
				}
			}
			done += n
		}
	})
}

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
