package core

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// stuckClaims is a registry whose claims are applied but whose answer never
// comes: the claim is cut short when the caller's context ends, as a shared
// registry's is when its server applied the script and the reply was lost.
type stuckClaims struct {
	*MemRegistry
	applied chan struct{}
}

func (r *stuckClaims) Claim(ctx context.Context, m Member) error {
	if err := r.MemRegistry.Claim(ctx, m); err != nil {
		return err
	}
	close(r.applied)
	<-ctx.Done()
	return fmt.Errorf("stuck registry: %w", ctx.Err())
}

// TestClaimCutShortIsReleased: a join abandoned by its caller while the
// registry had applied its claim gives the slot back, or the name would
// stay taken while this node lives.
func TestClaimCutShortIsReleased(t *testing.T) {
	reg := &stuckClaims{MemRegistry: NewMemRegistry(), applied: make(chan struct{})}
	h := New(Config{Registry: reg})
	s, _ := attach(t, h, "s1")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-reg.applied; cancel() }()
	err := s.JoinContext(ctx, &smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o"})
	wantCode(t, err, smcp.CodeInternal)
	ms, err := reg.Members(context.Background(), "o")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 0 {
		t.Fatalf("abandoned claim still holds its slot: %+v", ms)
	}
	// The name is free for the next claim.
	if err := reg.MemRegistry.Claim(context.Background(), Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "pc", SID: "s2"}); err != nil {
		t.Fatalf("name still taken: %v", err)
	}
}

// deadlineSeen counts the registry calls whose context carries a deadline.
type deadlineSeen struct {
	*MemRegistry
	calls, withDeadline atomic.Int64
}

func (r *deadlineSeen) seen(ctx context.Context) {
	r.calls.Add(1)
	if _, ok := ctx.Deadline(); ok {
		r.withDeadline.Add(1)
	}
}

func (r *deadlineSeen) Claim(ctx context.Context, m Member) error {
	r.seen(ctx)
	return r.MemRegistry.Claim(ctx, m)
}

func (r *deadlineSeen) Release(ctx context.Context, m Member) (bool, error) {
	r.seen(ctx)
	return r.MemRegistry.Release(ctx, m)
}

func (r *deadlineSeen) Members(ctx context.Context, officeID string) ([]Member, error) {
	r.seen(ctx)
	return r.MemRegistry.Members(ctx, officeID)
}

// TestHubSetsNoRegistryTimeout: the hub hands its registry the caller's
// context as it is (bounding the calls is the registry's business, whatever
// the registry), so one answering from memory costs no timer on the lease
// path.
func TestHubSetsNoRegistryTimeout(t *testing.T) {
	reg := &deadlineSeen{MemRegistry: NewMemRegistry()}
	h := New(Config{Registry: reg})
	s, _ := attach(t, h, "s1")
	join(t, s, smcp.RoleComputer, "pc", "o")
	lease, err := h.ActAsAgent(allowAll, "o", "bot")
	if err != nil {
		t.Fatal(err)
	}
	lease.Close()
	if _, err := s.ListRoom("o"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ListOffices(context.Background(), allowAll); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// join, lease claim and release, list_room, list_offices, leave.
	if n, d := reg.calls.Load(), reg.withDeadline.Load(); n != 6 || d != 0 {
		t.Fatalf("registry calls %d, %d of them with a deadline the hub set", n, d)
	}
}
