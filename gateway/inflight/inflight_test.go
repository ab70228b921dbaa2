package inflight

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

func TestDrainWaitsForCallsInFlight(t *testing.T) {
	var g Gate
	if !g.Begin() || !g.Begin() {
		t.Fatal("Begin refused before Drain")
	}
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(context.Background()) }()
	testwait.Until(t, "Drain to start", g.Draining)
	if g.Begin() {
		t.Fatal("Begin counted a call while draining")
	}
	g.End()
	select {
	case err := <-drained:
		t.Fatalf("Drain returned with a call in flight: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.End()
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if err := g.Drain(context.Background()); err != nil {
		t.Fatalf("second Drain: %v", err)
	}
}

func TestDrainGivesUpWithCtx(t *testing.T) {
	var g Gate
	g.Begin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) || err.Error() != "1 calls still in flight: context deadline exceeded" {
		t.Fatalf("Drain = %v", err)
	}
}

func TestDrainWithNothingInFlight(t *testing.T) {
	var g Gate
	if err := g.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}
