package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// realRedis starts a redis-server for the test and returns a client of it.
// Without one installed the test is skipped, except under CI (CI=true,
// .ci/run installs it), where that is a failure: the Lua join rules must
// not pass only against miniredis's Lua.
func realRedis(t testing.TB) *redis.Client {
	t.Helper()
	url := systest.RedisServer(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redis URL %q: %v", url, err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestRegistryConformanceRedisServer holds the Lua join rules, run by a real
// redis-server, to the suite MemRegistry passes. One server serves every
// subtest, each on a flushed database.
func TestRegistryConformanceRedisServer(t *testing.T) {
	t.Parallel()
	rdb := realRedis(t)
	registrytest.Run(t, func(t *testing.T) core.Registry {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatalf("flushdb: %v", err)
		}
		return cluster.NewRegistry(rdb, cluster.RegistryOptions{})
	})
}

// TestClaimAgainstDeadNodeRedisServer runs the claim that meets a holder of
// another node on a real redis-server, whose keys expire on their own (in
// miniredis a TTL only passes when the test moves its clock): a live
// holder's node keeps its slot, and once that node stops beating its
// heartbeat key expires, the claim reaps the node and takes the slot well
// within two TTLs.
func TestClaimAgainstDeadNodeRedisServer(t *testing.T) {
	rdb := realRedis(t)
	const ttl = 600 * time.Millisecond
	newNode := func(id string) (*cluster.Registry, *cluster.Node) {
		reg := cluster.NewRegistry(rdb, cluster.RegistryOptions{})
		hub := core.New(core.Config{Registry: reg, Node: id})
		return reg, cluster.NewNode(rdb, reg, hub, ttl, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg1, node1 := newNode("n1")
	reg2, node2 := newNode("n2")
	for _, n := range []*cluster.Node{node1, node2} {
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Both beat: a node whose own heartbeat lapsed reaps nobody.
	beat1, stop1 := context.WithCancel(ctx)
	done1 := make(chan struct{})
	go func() { defer close(done1); node1.Run(beat1) }()
	defer func() { stop1(); <-done1 }()
	beat2, stop2 := context.WithCancel(ctx)
	done2 := make(chan struct{})
	go func() { defer close(done2); node2.Run(beat2) }()
	defer func() { stop2(); <-done2 }()

	held := core.Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "pc", SID: "sid-old", Node: "n2"}
	if err := reg2.Claim(ctx, held); err != nil {
		t.Fatal(err)
	}
	claim := core.Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "pc", SID: "sid-new", Node: "n1"}

	// n2 beats: the claim is refused, after watching n2's heartbeat for
	// about half a TTL.
	start := time.Now()
	if err := reg1.Claim(ctx, claim); err == nil {
		t.Fatal("claim against a live node's holder succeeded")
	}
	if took := time.Since(start); took < ttl/3 || took > 2*ttl {
		t.Errorf("refusal took %v, want about %v", took, ttl/2)
	}
	if got, _, _ := reg1.Computer(ctx, "o", "pc"); got != held {
		t.Fatalf("slot held by %+v after a refused claim, want %+v", got, held)
	}

	// n2 dies (no goodbye): its heartbeat key expires in redis-server.
	stop2()
	<-done2
	start = time.Now()
	if err := reg1.Claim(ctx, claim); err != nil {
		t.Fatalf("claim against a dead node's holder: %v", err)
	}
	took := time.Since(start)
	t.Logf("dead node's slot taken over in %v (TTL %v)", took.Round(time.Millisecond), ttl)
	if took > 2*ttl {
		t.Errorf("takeover took %v, want within two TTLs (%v)", took, 2*ttl)
	}
	if got, _, _ := reg1.Computer(ctx, "o", "pc"); got != claim {
		t.Fatalf("slot held by %+v, want %+v", got, claim)
	}
	// The dead node is reaped: its member records and its entry are gone;
	// what it held is remembered for a while (in case it was alive after
	// all: see Node), and forgotten on its own.
	keys, err := rdb.Keys(ctx, "smcp:{registry}:node:n2:*").Result()
	if err != nil || !slices.Equal(keys, []string{"smcp:{registry}:node:n2:reaped"}) {
		t.Fatalf("keys of the dead node left: %v, %v", keys, err)
	}
	if left, err := rdb.PTTL(ctx, keys[0]).Result(); err != nil || left <= 0 {
		t.Fatalf("reaped records kept without expiry: %v, %v", left, err)
	}
	if ok, err := rdb.SIsMember(ctx, "smcp:{registry}:nodes", "n2").Result(); err != nil || ok {
		t.Fatalf("dead node still in the nodes set: %v, %v", ok, err)
	}
}
