package cluster

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/registrytest"
)

// TestRegistryConformanceMiniredis holds the Lua join rules to the suite
// MemRegistry passes.
func TestRegistryConformanceMiniredis(t *testing.T) {
	t.Parallel()
	registrytest.Run(t, func(t *testing.T) core.Registry {
		mr := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		return NewRegistry(rdb, RegistryOptions{})
	})
}
