package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The tests below drive the nodes' heartbeats by hand (tick) on miniredis,
// where a TTL passes only when the test says so: a lapse, a reset or a
// pause happens exactly between two beats. The real redis-server versions
// (restart, SIGSTOP, outage) are in gateway/cluster_heal_test.go.

const healTTL = 300 * time.Millisecond

// recConn is a session's front end: it records notifications.
type recConn struct {
	mu    sync.Mutex
	notes []string
}

func (c *recConn) Notify(n core.Notification) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n.Event+" "+string(n.Wire))
}

func (c *recConn) Request(string, json.RawMessage, func(json.RawMessage, error)) func() { return nil }

func (c *recConn) seen(sub string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}

type testNode struct {
	*Node
	reg *Registry
	hub *core.Hub
	t   *testing.T
}

func newTestNode(t *testing.T, mr *miniredis.Miniredis, id string) *testNode {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := NewRegistry(rdb, RegistryOptions{Timeout: 5 * time.Second, ClaimTimeout: 5 * time.Second})
	hub := core.New(core.Config{Registry: reg, Node: id})
	n := NewNode(rdb, reg, hub, healTTL, nil)
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &testNode{Node: n, reg: reg, hub: hub, t: t}
}

// join attaches a session and joins it; err is the join's.
func (n *testNode) join(sid, role, name, office string) (*core.Session, *recConn, error) {
	n.t.Helper()
	c := &recConn{}
	s, err := n.hub.Attach(sid, &core.Principal{ID: "test"}, c, core.Protocol{Version: smcp.V02})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s, c, s.JoinContext(ctx, &smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: office})
}

func (n *testNode) mustJoin(sid, role, name, office string) (*core.Session, *recConn) {
	n.t.Helper()
	s, c, err := n.join(sid, role, name, office)
	if err != nil {
		n.t.Fatalf("%s joins %s as %s %q: %v", sid, office, role, name, err)
	}
	return s, c
}

func mustBeRefused(t *testing.T, err error, what string) {
	t.Helper()
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeForbidden {
		t.Fatalf("%s: %v, want refused (403)", what, err)
	}
}

func (n *testNode) computer(office, name string) (core.Member, bool) {
	n.t.Helper()
	m, ok, err := n.reg.Computer(context.Background(), office, name)
	if err != nil {
		n.t.Fatal(err)
	}
	return m, ok
}

// settle waits out the first node's settling of a new registry.
func settle(t *testing.T, nodes ...*testNode) {
	t.Helper()
	for _, n := range nodes {
		if _, err := n.reg.settled(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRegistryHealsAfterDataLoss: Redis loses every key under two nodes.
// The first join after that waits (the registry settles) instead of taking
// the agent slot, whose holder is on the other node and not yet given
// back; once both nodes beat, the registry holds every live member again
// and cross-node lookups find them.
func TestRegistryHealsAfterDataLoss(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newTestNode(t, mr, "na"), newTestNode(t, mr, "nb")
	settle(t, a, b)
	a.mustJoin("alice", smcp.RoleAgent, "alice", "o")
	a.mustJoin("pcA", smcp.RoleComputer, "pc", "o")
	b.mustJoin("pcB", smcp.RoleComputer, "mac", "o")

	mr.FlushAll() // Redis restarted empty
	// b notices on its own heartbeat: it settles the registry and gives
	// back its members; a has not beaten yet.
	b.tick(context.Background())
	if _, ok := a.computer("o", "mac"); !ok {
		t.Fatal("mac not given back by its node's heartbeat")
	}
	// A second agent on b now would find the slot free: it must wait for
	// the settling, and a gives its agent back meanwhile.
	joined := make(chan error, 1)
	go func() { _, _, err := b.join("bob", smcp.RoleAgent, "bob", "o"); joined <- err }()
	select {
	case err := <-joined:
		t.Fatalf("second agent answered while the registry settles: %v", err)
	case <-time.After(healTTL / 3):
	}
	a.tick(context.Background())
	mustBeRefused(t, <-joined, "second agent after the reset")
	if m, ok := b.computer("o", "pc"); !ok || m.Node != "na" || m.SID != "pcA" {
		t.Fatalf("pc after healing: %+v, %v", m, ok)
	}
	_, _, err := b.join("pc2", smcp.RoleComputer, "pc", "o")
	mustBeRefused(t, err, "second computer of a name after the reset")
	ms, err := a.reg.Members(context.Background(), "o")
	if err != nil || len(ms) != 3 || ms[0].Name != "alice" {
		t.Fatalf("members after healing: %+v, %v", ms, err)
	}
}

// TestClaimInFlightNotGivenBack: Redis restarted empty and a second
// agent's claim on b is the first to find out: b recovers while that claim
// is in flight. The claim is no slot b holds: b must not give it "back"
// (before, it did, and the real agent on a, given back a moment later,
// lost its seat to it and was evicted). The claim waits for the settling
// and is refused; alice keeps the office.
func TestClaimInFlightNotGivenBack(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newTestNode(t, mr, "na"), newTestNode(t, mr, "nb")
	settle(t, a, b)
	alice, aliceConn := a.mustJoin("alice", smcp.RoleAgent, "alice", "o")
	b.mustJoin("pcB", smcp.RoleComputer, "mac", "o")

	mr.FlushAll() // Redis restarted empty
	joined := make(chan error, 1)
	go func() { _, _, err := b.join("mallory", smcp.RoleAgent, "mallory", "o"); joined <- err }()
	// mallory's claim finds no epoch and recovers b (announce, then give
	// back); a has not beaten yet. Once the epoch is back, b's recovery
	// holds recoverMu until it is done.
	testwait.Until(t, "b recovering", func() bool { return mr.Exists(epochKey()) })
	b.recoverMu.Lock()
	b.recoverMu.Unlock() //nolint:staticcheck // waits for b's recovery to end
	if m, ok := a.computer("o", "mac"); !ok || m.SID != "pcB" {
		t.Fatalf("mac not given back by b: %+v, %v", m, ok)
	}
	select {
	case err := <-joined:
		t.Fatalf("second agent answered while the registry settles: %v", err)
	default:
	}
	a.tick(context.Background()) // a gives alice back
	mustBeRefused(t, <-joined, "second agent claiming across the recovery")
	if info := alice.Info(); info.GetOfficeId() != "o" {
		t.Fatalf("alice evicted: %+v, notes %v", info, aliceConn.notes)
	}
	ms, err := a.reg.Members(context.Background(), "o")
	if err != nil || len(ms) != 2 || ms[0].Name != "alice" || ms[0].SID != "alice" {
		t.Fatalf("members after healing: %+v, %v", ms, err)
	}
}

// TestClaimAfterResetRecoversItsNode: a claim, not a heartbeat, is the
// first to find the registry reset: its node recovers at once and the
// claim waits for the settling.
func TestClaimAfterResetRecoversItsNode(t *testing.T) {
	mr := miniredis.RunT(t)
	a := newTestNode(t, mr, "na")
	settle(t, a)
	a.mustJoin("pcA", smcp.RoleComputer, "pc", "o")
	mr.FlushAll()
	_, _, err := a.join("pc2", smcp.RoleComputer, "pc", "o")
	mustBeRefused(t, err, "second computer of a name, claimed first after the reset")
}

// TestNoReapingAfterRedisPause: Redis stood still longer than the TTL, so
// every heartbeat expired at once. A node must not take the other for dead:
// it reaps nobody while its own heartbeat is gone, and nobody while the
// registry settles; the other node beats within the settling and keeps its
// members.
func TestNoReapingAfterRedisPause(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newTestNode(t, mr, "na"), newTestNode(t, mr, "nb")
	settle(t, a, b)
	_, aliceConn := a.mustJoin("alice", smcp.RoleAgent, "alice", "o")
	b.mustJoin("pcB", smcp.RoleComputer, "mac", "o")

	mr.FastForward(2 * healTTL) // both heartbeats expire
	ctx := context.Background()
	if err := a.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.computer("o", "mac"); !ok {
		t.Fatal("a node whose own heartbeat lapsed reaped another")
	}
	// a beats first: it settles; its reaper leaves b alone meanwhile.
	a.tick(ctx)
	if _, ok := a.computer("o", "mac"); !ok {
		t.Fatal("b reaped while the registry settles")
	}
	b.tick(ctx)
	time.Sleep(a.settleFor() + 50*time.Millisecond) // the settling ends
	a.tick(ctx)
	if _, ok := a.computer("o", "mac"); !ok {
		t.Fatal("b's computer reaped after the pause")
	}
	if aliceConn.seen(smcp.NotifyLeaveOffice) {
		t.Fatal("the agent was told mac left")
	}
	_, _, err := a.join("pc2", smcp.RoleComputer, "mac", "o")
	mustBeRefused(t, err, "second computer of a name after the pause")
}

// TestLapsedNodeTakesMembersBack: one node stood still (a pause of its
// own, a partition) while the other ran: it was reaped, its members' offices
// were told they left. When it beats again it takes back the slots still
// free and tells their offices they are back; a member whose slot was given
// to another session meanwhile is taken out of its office and told.
func TestLapsedNodeTakesMembersBack(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newTestNode(t, mr, "na"), newTestNode(t, mr, "nb")
	settle(t, a, b)
	_, aliceConn := a.mustJoin("alice", smcp.RoleAgent, "alice", "o")
	b.mustJoin("pcB", smcp.RoleComputer, "mac", "o")
	_, linuxConn := b.mustJoin("pcL", smcp.RoleComputer, "linux", "o")
	lost, lostConn := b.mustJoin("pcW", smcp.RoleComputer, "win", "o")

	ctx := context.Background()
	mr.Del(aliveKey("nb")) // b's heartbeat lapsed; a's did not
	if err := a.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.computer("o", "mac"); ok {
		t.Fatal("lapsed node not reaped")
	}
	testwait.Until(t, "the agent told mac left", func() bool { return aliceConn.seen(smcp.NotifyLeaveOffice) })
	// Meanwhile another computer takes the name win on a.
	a.mustJoin("pcW2", smcp.RoleComputer, "win", "o")

	b.tick(ctx) // b finds its heartbeat lapsed
	if m, ok := a.computer("o", "mac"); !ok || m.SID != "pcB" {
		t.Fatalf("mac not taken back: %+v, %v", m, ok)
	}
	if m, ok := a.computer("o", "win"); !ok || m.SID != "pcW2" {
		t.Fatalf("win: %+v, %v; want the computer that took the name meanwhile", m, ok)
	}
	// b's own members of the office are told: mac is back (the others
	// are on a, reached through the peers the test does not have), win is
	// gone; win itself is told it left.
	if !linuxConn.seen(smcp.NotifyEnterOffice + ` {"office_id":"o","computer":"mac"}`) {
		t.Fatalf("linux not told mac is back: %v", linuxConn.notes)
	}
	if !linuxConn.seen(`"computer":"win"`) || !lostConn.seen(smcp.NotifyLeaveOffice) {
		t.Fatalf("eviction of win not told: linux %v, win %v", linuxConn.notes, lostConn.notes)
	}
	if info := lost.Info(); info.GetOfficeId() != "" {
		t.Fatalf("evicted computer still in office %q", info.GetOfficeId())
	}
	for _, m := range b.hub.Held() {
		if m.Name == "win" {
			t.Fatalf("b still holds %+v", m)
		}
	}
}

// TestReconcileRemovesStaleRecords: a release that failed while Redis did
// not answer leaves the record of a session that is gone; the node removes
// it when Redis answers again, and the name is free.
func TestReconcileRemovesStaleRecords(t *testing.T) {
	mr := miniredis.RunT(t)
	a := newTestNode(t, mr, "na")
	settle(t, a)
	s, _ := a.mustJoin("pcA", smcp.RoleComputer, "pc", "o")
	mr.SetError("LOADING")
	s.Close() // its release fails
	a.tick(context.Background())
	if !a.health.Down() {
		t.Fatal("failed heartbeat not seen")
	}
	mr.SetError("")
	if _, ok := a.computer("o", "pc"); !ok {
		t.Fatal("the failed release removed the record after all: nothing to test")
	}
	a.tick(context.Background())
	if _, ok := a.computer("o", "pc"); ok {
		t.Fatal("stale record of a closed session left after Redis answered again")
	}
	a.mustJoin("pc2", smcp.RoleComputer, "pc", "o")
}

// TestClaimSteps: a claim puts its record in its node's members set before
// it takes the office's slot (two hash slots on a Redis Cluster), and takes
// it out when refused, so the set holds what the node holds. A node that
// died between the two steps leaves a record only in its set: the reaper
// removes it, tells no office, and forgets the node.
func TestClaimSteps(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newTestNode(t, mr, "na"), newTestNode(t, mr, "nb")
	settle(t, a, b)
	a.mustJoin("pcA", smcp.RoleComputer, "pc", "o")
	_, _, err := b.join("pcB", smcp.RoleComputer, "pc", "o")
	mustBeRefused(t, err, "a second computer named pc")
	if got, _ := mr.Members(membersKey("nb")); len(got) != 0 {
		t.Fatalf("members of nb after its refused claim: %v", got)
	}
	if got, _ := mr.Members(membersKey("na")); len(got) != 1 {
		t.Fatalf("members of na: %v, want its computer's record", got)
	}

	// nb dies after the first step of a claim.
	half := core.Member{OfficeID: "o2", Role: smcp.RoleComputer, Name: "pc", SID: "pcB2", Node: "nb"}
	if _, err := mr.SAdd(membersKey("nb"), encode(half)); err != nil {
		t.Fatal(err)
	}
	mr.Del(aliveKey("nb"))
	gone := ""
	a.OnNodeGone(func(node string) { gone = node })
	if err := a.Reap(context.Background()); err != nil {
		t.Fatal(err)
	}
	if gone != "nb" || mr.Exists(membersKey("nb")) {
		t.Fatalf("nb not reaped: gone %q, members left %v", gone, mr.Exists(membersKey("nb")))
	}
	if ok, _ := mr.SIsMember(nodesKey(), "nb"); ok {
		t.Fatal("nb not forgotten")
	}
	if m, ok := a.computer("o", "pc"); !ok || m.Node != "na" {
		t.Fatalf("a's computer after the reap: %+v, %v", m, ok)
	}
}
