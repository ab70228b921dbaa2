package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/core/peerstest"
)

// TestMemBusConformance holds the in-process bus to the suite the Redis
// one passes: hubs of one process connected as the nodes of a cluster,
// sharing a MemRegistry.
func TestMemBusConformance(t *testing.T) {
	peerstest.Run(t, func(t *testing.T, n int, cfg core.Config) *peerstest.Cluster {
		bus := core.NewMemBus()
		t.Cleanup(bus.Close)
		cfg.Registry = core.NewMemRegistry()
		c := &peerstest.Cluster{}
		for i := range n {
			hc := cfg
			hc.Node = fmt.Sprintf("n%d", i)
			h := core.New(hc)
			p, err := bus.Connect(h)
			if err != nil {
				t.Fatal(err)
			}
			h.SetPeers(p)
			c.Hubs = append(c.Hubs, h)
		}
		c.Kill = func(t *testing.T, i int) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := bus.Drop(ctx, c.Hubs[i].Node()); err != nil {
				t.Fatal(err)
			}
		}
		return c
	})
}
