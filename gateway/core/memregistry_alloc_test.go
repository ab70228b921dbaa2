package core

import (
	"context"
	"strconv"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestMemRegistryClaimAllocations: a one-call seat's claim and release
// (every typed RPC call, every stateless MCP request) allocate nothing
// once the office exists; an agent record was a Member copied to the heap
// by its map.
func TestMemRegistryClaimAllocations(t *testing.T) {
	r := NewMemRegistry()
	ctx := context.Background()
	pc := Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "pc", SID: "pc-sid", Node: "n", Version: "0.2"}
	if err := r.Claim(ctx, pc); err != nil {
		t.Fatal(err)
	}
	sids := make([]string, 200)
	for i := range sids {
		sids[i] = "lease:n:" + strconv.Itoa(i)
	}
	i := 0
	allocs := testing.AllocsPerRun(len(sids)-1, func() {
		m := Member{OfficeID: "o", Role: smcp.RoleAgent, Name: "agent", SID: sids[i], Node: "n", Lease: true, Front: FrontRPC, Since: 1}
		i++
		if err := r.Claim(ctx, m); err != nil {
			t.Fatal(err)
		}
		if ok, err := r.Release(ctx, m); err != nil || !ok {
			t.Fatalf("release: %v, %v", ok, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per claim and release of a one-call seat, want 0", allocs)
	}
}
