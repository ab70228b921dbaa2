package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/peerstest"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
)

// sentinelClient is the client --redis makes of the Sentinel URL, on an
// emptied primary.
func sentinelClient(t *testing.T, s *systest.Sentinel) *redis.Client {
	t.Helper()
	rdb, err := cluster.NewClient(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb
}

// TestRegistryConformanceSentinel holds the Lua join rules to the suite
// through the failover client of a Sentinel URL (a primary, a replica,
// three sentinels).
func TestRegistryConformanceSentinel(t *testing.T) {
	s := systest.RedisSentinel(t)
	registrytest.Run(t, func(t *testing.T) core.Registry {
		return cluster.NewRegistry(sentinelClient(t, s), cluster.RegistryOptions{})
	})
}

// TestPeersConformanceSentinel is the cross-node suite through the
// failover client of a Sentinel URL; its outage is a failover: the primary
// killed (SIGKILL), its replica promoted, the nodes following it.
func TestPeersConformanceSentinel(t *testing.T) {
	s := systest.RedisSentinel(t)
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		c := redisCluster(t, sentinelClient(t, s), n, cfg)
		c.Outage = func(t *testing.T) {
			t.Logf("the sentinels promoted the replica %v after the primary's SIGKILL", s.Failover(t))
		}
		return c
	})
}
