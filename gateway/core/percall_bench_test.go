package core

import (
	"context"
	"testing"
)

// BenchmarkTakeSeat is the seat of one typed RPC call: taken, then closed.
func BenchmarkTakeSeat(b *testing.B) {
	h := New(Config{})
	p := &Principal{ID: "insecure", Operator: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := h.TakeSeat(ctx, p, "office", "agent", Seat{Front: FrontRPC})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
