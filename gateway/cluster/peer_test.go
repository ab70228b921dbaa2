package cluster

import (
	"context"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// A node's URL is found through Redis for exactly as long as its heartbeat
// lives: published at once, refreshed by each beat, gone when the heartbeat
// lapses or the node stops, back when the node recovers.
func TestPeerURLLivesWithTheHeartbeat(t *testing.T) {
	mr := miniredis.RunT(t)
	ctx := context.Background()
	a, b := newTestNode(t, mr, "a"), newTestNode(t, mr, "b")
	peer := func(id string) (string, bool) {
		t.Helper()
		u, alive, err := b.PeerURL(ctx, id)
		if err != nil {
			t.Fatalf("PeerURL(%s): %v", id, err)
		}
		return u, alive
	}
	if u, alive := peer("a"); !alive || u != "" {
		t.Fatalf("a before publishing: %q %v, want alive without URL", u, alive)
	}
	if _, alive := peer("nobody"); alive {
		t.Fatal("an unknown node is alive")
	}
	a.SetURL("http://10.0.0.5:8080")
	if err := a.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if u, alive := peer("a"); !alive || u != "http://10.0.0.5:8080" {
		t.Fatalf("a after Publish: %q %v", u, alive)
	}
	// Each beat refreshes the URL with the heartbeat: two half TTLs with a
	// beat between keep it.
	mr.FastForward(healTTL * 2 / 3)
	a.tick(ctx)
	mr.FastForward(healTTL * 2 / 3)
	if u, alive := peer("a"); !alive || u != "http://10.0.0.5:8080" {
		t.Fatalf("a beating: %q %v", u, alive)
	}
	// Silent past its TTL: dead, and its URL with it.
	mr.FastForward(healTTL * 2)
	if u, alive := peer("a"); alive || u != "" {
		t.Fatalf("a lapsed: %q %v, want dead", u, alive)
	}
	a.tick(ctx) // finds its heartbeat lapsed and announces itself again
	if u, alive := peer("a"); !alive || u != "http://10.0.0.5:8080" {
		t.Fatalf("a recovered: %q %v", u, alive)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if u, alive := peer("a"); alive || u != "" {
		t.Fatalf("a stopped: %q %v, want dead", u, alive)
	}
	if mr.Exists(urlKey("a")) {
		t.Error("a stopped and its URL key is left")
	}
}
