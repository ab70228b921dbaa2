package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/peerstest"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// sentinelClient is the client --redis makes of the Sentinel URL, on an
// emptied primary.
func sentinelClient(t *testing.T, s *systest.Sentinel) redis.UniversalClient {
	t.Helper()
	rdb := noFlush(t, s)
	flush(t, rdb)
	return rdb
}

func flush(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryConformanceSentinel holds the Lua join rules to the suite
// through the failover client of a Sentinel URL (a primary, a replica,
// three sentinels).
func TestRegistryConformanceSentinel(t *testing.T) {
	t.Parallel()
	s := systest.RedisSentinel(t)
	registrytest.Run(t, func(t *testing.T) core.Registry {
		return cluster.NewRegistry(sentinelClient(t, s), cluster.RegistryOptions{})
	})
}

// TestPeersConformanceSentinel is the cross-node suite through the
// failover client of a Sentinel URL; its outage is a failover: the primary
// killed (SIGKILL), its replica promoted, the nodes following it.
func TestPeersConformanceSentinel(t *testing.T) {
	t.Parallel()
	s := systest.RedisSentinel(t)
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		c := redisCluster(t, sentinelClient(t, s), n, cfg)
		c.Outage = func(t *testing.T) {
			_, promoted := s.Failover(t)
			t.Logf("the sentinels promoted the replica %v after the primary's SIGKILL", promoted)
		}
		return c
	})
}

// TestSentinelFailoverCallsResume: three nodes, each with its own failover
// client, an agent on each calling a computer of the next node without a
// pause; the Redis primary is killed (SIGKILL) and the sentinels promote
// its replica. Calls resume on every node without a restart; no call
// reaches its computer twice; and no office admits a second agent after
// the failover (its agent's claim was on the replica). The time from the
// kill to every agent's first call answered again, and the calls failed
// meanwhile, are logged: docs/RELIABILITY.md quotes them.
func TestSentinelFailoverCallsResume(t *testing.T) {
	t.Parallel()
	s := systest.RedisSentinel(t)
	callsThroughFailover(t, sentinelNodes(t, s), s.Failover)
}

// TestSentinelSwitchoverCallsResume is TestSentinelFailoverCallsResume
// with a switchover (SENTINEL FAILOVER): the former primary stays up,
// becoming a replica, with the subscriptions of Peers still on it (go-redis
// moves only its command connections on a switch).
func TestSentinelSwitchoverCallsResume(t *testing.T) {
	t.Parallel()
	s := systest.RedisSentinel(t)
	callsThroughFailover(t, sentinelNodes(t, s), s.Switchover)
}

// sentinelNodes is the client of each node of callsThroughFailover: its
// own failover client, the first one emptying the primary.
func sentinelNodes(t *testing.T, s *systest.Sentinel) func(i int) redis.UniversalClient {
	return func(i int) redis.UniversalClient {
		rdb := noFlush(t, s)
		if i == 0 {
			flush(t, rdb)
		}
		return rdb
	}
}

// callsThroughFailover runs the calls and joins of
// TestSentinelFailoverCallsResume across fail, which returns when the
// primary went and how long after that another was serving; client(i) is
// the Redis client of node i (the first on an emptied Redis).
func callsThroughFailover(t *testing.T, client func(i int) redis.UniversalClient, fail func(testing.TB) (time.Time, time.Duration)) {
	const n = 3
	const callTimeout = 2 * time.Second
	var nodes []*testNode
	for i := range n {
		nodes = append(nodes, startNamed(t, client(i), fmt.Sprintf("node%c", 'a'+i), 1, core.Config{}, conformanceTTL, true)...)
	}
	join := func(nd *testNode, sid, role, name, office string, conn core.Conn) (*core.Session, error) {
		sess, err := nd.hub.Attach(sid, &core.Principal{ID: "test"}, conn, v02)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sess.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return sess, sess.JoinContext(ctx, &smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: office})
	}
	agents := make([]*core.Session, n)
	pcs := make([]*computerConn, n)
	for i := range n {
		office := fmt.Sprintf("o%d", i)
		pcs[i] = &computerConn{answer: echoBack}
		if _, err := join(nodes[(i+1)%n], "pc-"+office, smcp.RoleComputer, "pc", office, pcs[i]); err != nil {
			t.Fatal(err)
		}
		var err error
		if agents[i], err = join(nodes[i], "agent-"+office, smcp.RoleAgent, "alice", office, &computerConn{}); err != nil {
			t.Fatal(err)
		}
	}

	// Each agent calls without a pause, recording when each call started
	// and whether it was answered.
	type result struct {
		start, end time.Time
		ok         bool
	}
	var (
		mu      sync.Mutex
		results = make([][]result, n)
	)
	run, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for k := 0; run.Err() == nil; k++ {
				start := time.Now()
				// A call lost with the primary (published to it, not yet
				// carried) is given up after this, as a client would.
				ctx, cancel := context.WithTimeout(run, callTimeout)
				_, err := agents[i].Route(ctx, parse(t, smcp.EventGetConfig, fmt.Sprintf(`{"agent":"alice","req_id":"r%06d","computer":"pc"}`, k)))
				cancel()
				if run.Err() != nil {
					return
				}
				mu.Lock()
				results[i] = append(results[i], result{start, time.Now(), err == nil})
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond) // a failing Redis fails fast: no spin
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	// answeredSince: every agent has had a call started after since answered.
	answeredSince := func(since time.Time) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range results {
			if !slices.ContainsFunc(rs, func(r result) bool { return r.ok && r.start.After(since) }) {
				return false
			}
		}
		return true
	}
	testwait.Within(t, time.Minute, "every agent's calls answered before the failover", func() bool { return answeredSince(time.Time{}) })

	// Meanwhile a second agent tries each office, on another node, again
	// and again: refused, or failed while Redis is away, never admitted.
	for i := range n {
		wg.Go(func() {
			nd := nodes[(i+2)%n]
			for k := 0; run.Err() == nil; k++ {
				sess, err := nd.hub.Attach(fmt.Sprintf("mallory-o%d-%d", i, k), &core.Principal{ID: "test"}, &computerConn{}, v02)
				if err != nil {
					t.Error(err)
					return
				}
				ctx, cancel := context.WithTimeout(run, 30*time.Second)
				if err := sess.JoinContext(ctx, &smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "mallory", OfficeId: fmt.Sprintf("o%d", i)}); err == nil {
					t.Errorf("office o%d admitted a second agent during the failover", i)
				}
				cancel()
				sess.Close()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	killed, promoted := fail(t)
	testwait.Within(t, 2*time.Minute, "every agent's calls answered after the failover", func() bool { return answeredSince(killed.Add(promoted)) })
	stop()
	wg.Wait()

	var resumed time.Duration
	failed, total := 0, 0
	for _, rs := range results {
		first := rs[slices.IndexFunc(rs, func(r result) bool { return r.ok && r.start.After(killed) })]
		resumed = max(resumed, first.end.Sub(killed))
		for _, r := range rs {
			if r.start.After(killed) {
				total++
				if !r.ok {
					failed++
				}
			}
		}
	}
	t.Logf("primary gone: replica promoted %v after, every agent's calls answered again %v after; %d of %d calls started after failed (given up after %v)",
		promoted, resumed, failed, total, callTimeout)

	for i, pc := range pcs {
		seen := map[string]bool{}
		for _, p := range pc.requests() {
			if seen[p] {
				t.Errorf("office o%d: the computer got %s twice", i, p)
			}
			seen[p] = true
		}
	}
	// A second agent, on any node, is refused: the office's agent is known
	// to the new primary.
	for i := range n {
		for j, nd := range nodes {
			_, err := join(nd, fmt.Sprintf("mallory-%d-%d", i, j), smcp.RoleAgent, "mallory", fmt.Sprintf("o%d", i), &computerConn{})
			if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeForbidden {
				t.Errorf("a second agent into o%d on node %d after the failover: %v, want refused (403)", i, j, err)
			}
		}
	}
}

// noFlush is the client --redis makes of the Sentinel URL, as is.
func noFlush(t *testing.T, s *systest.Sentinel) redis.UniversalClient {
	t.Helper()
	rdb, err := cluster.NewClient(s.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
