package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/peerstest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
)

// conformanceTTL is the nodes' heartbeat TTL. Not shorter: on a loaded
// machine a heartbeat late by two thirds of a TTL is taken for Redis
// standing still, and nobody is reaped while the registry settles then.
const conformanceTTL = 2 * time.Second

// redisCluster is the cluster of the suite on rdb: n nodes with their
// heartbeats, registries and Peers. A node killed stops beating and
// sending, and its heartbeat key is removed: it lapses now rather than a
// TTL later (in miniredis a TTL passes only when a test moves its clock).
func redisCluster(t *testing.T, rdb redis.UniversalClient, n int, cfg core.Config) *peerstest.Cluster {
	nodes := startNodes(t, rdb, n, cfg, conformanceTTL, true)
	c := &peerstest.Cluster{}
	for _, tn := range nodes {
		c.Hubs = append(c.Hubs, tn.hub)
	}
	c.Kill = func(t *testing.T, i int) {
		nodes[i].stop()
		nodes[i].calls.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rdb.Del(ctx, cluster.AliveKey(nodes[i].hub.Node())).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestPeersConformanceMiniredis holds cluster.Peers on miniredis to the
// suite core.MemBus passes.
func TestPeersConformanceMiniredis(t *testing.T) {
	t.Parallel()
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		c := redisCluster(t, rdb, n, cfg)
		c.Outage = func(t *testing.T) {
			mr.Close()
			mr.FlushAll()
			if err := mr.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		return c
	})
}

// TestPeersConformanceRedisServer is the suite on a real redis-server,
// which the outage stops (its data gone) and starts again.
func TestPeersConformanceRedisServer(t *testing.T) {
	t.Parallel()
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		srv := systest.RedisProcess(t)
		opts, err := redis.ParseURL(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		c := redisCluster(t, rdb, n, cfg)
		c.Outage = func(t *testing.T) {
			srv.Stop()
			srv.Start(t)
		}
		return c
	})
}
