package cluster_test

import (
	"context"
	"strings"
	"testing"

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
