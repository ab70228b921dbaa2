package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/peerstest"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// clusterClient is the client --redis --redis-cluster makes of seeds, on
// emptied primaries.
func clusterClient(t *testing.T, seeds string) *redis.ClusterClient {
	t.Helper()
	rdb, err := cluster.NewClient(seeds, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	cc := rdb.(*redis.ClusterClient)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		return c.FlushAll(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	return cc
}

// clusterNodeClients is the client of each node of callsThroughFailover:
// its own cluster client, the first one emptying the primaries.
func clusterNodeClients(t *testing.T, seeds string) func(i int) redis.UniversalClient {
	return func(i int) redis.UniversalClient {
		if i == 0 {
			return clusterClient(t, seeds)
		}
		rdb, err := cluster.NewClient(seeds, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
}

// TestRegistryConformanceRedisCluster holds the join rules to the suite on
// a Redis Cluster of three primaries: every script touches one slot (an
// office's, or the registry's).
func TestRegistryConformanceRedisCluster(t *testing.T) {
	t.Parallel()
	seeds := systest.RedisCluster(t)
	registrytest.Run(t, func(t *testing.T) core.Registry {
		return cluster.NewRegistry(clusterClient(t, seeds), cluster.RegistryOptions{})
	})
}

// TestPeersConformanceRedisCluster is the cross-node suite on a Redis
// Cluster of three primaries with a replica each: the nodes' inboxes and
// the notifications on sharded pub/sub. Its outage is the failover of the
// notifications' primary: killed (SIGKILL), its replica promoted, the
// nodes' subscriptions following it.
func TestPeersConformanceRedisCluster(t *testing.T) {
	t.Parallel()
	rc := systest.RedisClusterReplicated(t)
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		c := redisCluster(t, clusterClient(t, rc.URL), n, cfg)
		c.Outage = func(t *testing.T) {
			_, promoted := rc.Failover(t, cluster.NotifyChannel)
			t.Logf("the replica promoted %v after the primary's SIGKILL", promoted)
		}
		return c
	})
}

// TestRedisClusterFailoverCallsResume is TestSentinelFailoverCallsResume
// on a Redis Cluster of three primaries with a replica each: the primary
// of the first node's inbox (the calls to its computer, the answers to its
// agent) is killed (SIGKILL) and the cluster promotes its replica. Calls resume on every node, none reaches its computer twice,
// and no office admits a second agent. Each node has its own client.
func TestRedisClusterFailoverCallsResume(t *testing.T) {
	t.Parallel()
	rc := systest.RedisClusterReplicated(t)
	callsThroughFailover(t, clusterNodeClients(t, rc.URL), func(tb testing.TB) (time.Time, time.Duration) { return rc.Failover(tb, cluster.InboxChannel("nodea0")) })
}

// TestRedisClusterSpreadsOffices: 1,000 offices, each with a computer of
// one of three nodes, land on every primary of a three-primary Redis
// Cluster (an office's keys are its own slot), and each is found again
// through any node.
func TestRedisClusterSpreadsOffices(t *testing.T) {
	t.Parallel()
	rdb := clusterClient(t, systest.RedisCluster(t))
	nodes := startNodes(t, rdb, 3, core.Config{}, conformanceTTL, false)
	const offices = 1000
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, offices)
	for i := range offices {
		wg.Go(func() {
			m := core.Member{OfficeID: fmt.Sprintf("office-%d", i), Role: smcp.RoleComputer, Name: "pc",
				SID: fmt.Sprintf("sid-%d", i), Node: nodes[i%3].hub.Node()}
			if err := nodes[i%3].reg.Claim(ctx, m); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var mu sync.Mutex
	perPrimary := map[string]int{}
	if err := rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		n := 0
		iter := c.Scan(ctx, 0, "smcp:office:*", 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		mu.Lock()
		perPrimary[c.Options().Addr] = n
		mu.Unlock()
		return iter.Err()
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("office keys per primary: %v", perPrimary)
	total := 0
	for addr, n := range perPrimary {
		if n == 0 {
			t.Errorf("no office on primary %s: %v", addr, perPrimary)
		}
		total += n
	}
	if len(perPrimary) != 3 || total != offices {
		t.Fatalf("office keys per primary %v, want %d on three", perPrimary, offices)
	}
	for i := range offices {
		office := fmt.Sprintf("office-%d", i)
		got, ok, err := nodes[(i+1)%3].reg.Computer(ctx, office, "pc")
		if err != nil || !ok || got.Node != nodes[i%3].hub.Node() {
			t.Fatalf("computer of %s through another node: %+v %v %v", office, got, ok, err)
		}
	}
	if n, err := rdb.SCard(ctx, cluster.MembersKey(nodes[0].hub.Node())).Result(); err != nil || n != (offices+2)/3 {
		t.Fatalf("members of %s: %d, %v, want %d", nodes[0].hub.Node(), n, err, (offices+2)/3)
	}
}

// TestRedisClusterOfficeShardFailover is TestRedisClusterFailoverCallsResume
// with the primary of office o0's hash killed: the office's agent and
// computer are on the promoted replica, a second agent is still refused
// there, and calls go on.
func TestRedisClusterOfficeShardFailover(t *testing.T) {
	t.Parallel()
	rc := systest.RedisClusterReplicated(t)
	callsThroughFailover(t, clusterNodeClients(t, rc.URL), func(tb testing.TB) (time.Time, time.Duration) { return rc.Failover(tb, cluster.OfficeKey("o0")) })
}

// TestRedisClusterSwitchoverCallsResume is TestRedisClusterFailoverCallsResume
// with a switchover (CLUSTER FAILOVER on the replica): the former primary
// stays up as a replica and drops the sharded subscriptions of the slots
// it no longer serves (SUNSUBSCRIBE), which the nodes subscribe again on
// the new primary.
func TestRedisClusterSwitchoverCallsResume(t *testing.T) {
	t.Parallel()
	rc := systest.RedisClusterReplicated(t)
	callsThroughFailover(t, clusterNodeClients(t, rc.URL), func(tb testing.TB) (time.Time, time.Duration) {
		return rc.Switchover(tb, cluster.InboxChannel("nodea0"))
	})
}
