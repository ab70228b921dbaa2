package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
	"github.com/smcpgw/smcp-gateway/internal/loadtest"
)

// realRedis starts a redis-server for the test and returns a client of it.
// Without one installed the test is skipped, except under CI (CI=true,
// .ci/run installs it), where that is a failure: the Lua join rules must
// not pass only against miniredis's Lua.
func realRedis(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed (.ci/run installs it); CI=true makes this a failure")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := loadtest.StartRedis(ctx)
	if err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(srv.Stop)
	opts, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatalf("redis URL %q: %v", srv.URL, err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestRegistryConformanceRedisServer holds the Lua join rules, run by a real
// redis-server, to the suite MemRegistry passes. One server serves every
// subtest, each on a flushed database.
func TestRegistryConformanceRedisServer(t *testing.T) {
	rdb := realRedis(t)
	registrytest.Run(t, func(t *testing.T) core.Registry {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := rdb.FlushDB(ctx).Err(); err != nil {
			t.Fatalf("flushdb: %v", err)
		}
		return cluster.NewRegistry(rdb)
	})
}
