// Package registrytest is the conformance suite of core.Registry: every
// implementation (core.MemRegistry on one node, the Redis one of
// gateway/cluster) runs it, so the join rules written once per
// implementation (Go, Lua) cannot drift apart.
package registrytest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Run runs the suite; newRegistry returns an empty registry for each subtest.
func Run(t *testing.T, newRegistry func(t *testing.T) core.Registry) {
	for _, tc := range []struct {
		name string
		f    func(t *testing.T, r core.Registry)
	}{
		{"AgentSlot", agentSlot},
		{"Leases", leases},
		{"Computers", computers},
		{"ClaimAgainIsHeld", claimAgainIsHeld},
		{"ReleaseOnlyItsRecord", releaseOnlyItsRecord},
		{"MembersOrder", membersOrder},
		{"OfficesApart", officesApart},
		{"AgentRace", agentRace},
		{"ComputerNameRace", computerNameRace},
		{"OneVersionPerOffice", oneVersionPerOffice},
		{"SeatLapses", seatLapses},
		{"RefusalNamesHolder", refusalNamesHolder},
		{"EvictAgent", evictAgent},
		{"SeatPerRole", seatPerRole},
		{"ComputerSeatRace", computerSeatRace},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newRegistry(t)) })
	}
}

func agent(office, name, sid string) core.Member {
	return core.Member{OfficeID: office, Role: smcp.RoleAgent, Name: name, SID: sid, Node: "n1"}
}

func lease(office, name, sid string) core.Member {
	m := agent(office, name, sid)
	m.Lease = true
	return m
}

func computer(office, name, sid string) core.Member {
	return core.Member{OfficeID: office, Role: smcp.RoleComputer, Name: name, SID: sid, Node: "n1"}
}

// mustRefuse checks that err is the 403 a conflict gives.
func mustRefuse(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: claimed, want refused", what)
	}
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeForbidden {
		t.Fatalf("%s: %v, want a 403 *smcp.Error", what, err)
	}
}

func mustClaim(t *testing.T, r core.Registry, m core.Member) {
	t.Helper()
	if err := r.Claim(context.Background(), m); err != nil {
		t.Fatalf("claim %+v: %v", m, err)
	}
}

func mustRelease(t *testing.T, r core.Registry, m core.Member, want bool) {
	t.Helper()
	got, err := r.Release(context.Background(), m)
	if err != nil || got != want {
		t.Fatalf("release %+v = %v, %v; want %v", m, got, err, want)
	}
}

func names(t *testing.T, r core.Registry, office string) []string {
	t.Helper()
	ms, err := r.Members(context.Background(), office)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Role[:1]+":"+m.Name+"@"+m.SID)
	}
	return out
}

func wantNames(t *testing.T, r core.Registry, office string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := names(t, r, office); !slices.Equal(got, want) {
		t.Fatalf("members of %q = %v, want %v", office, got, want)
	}
}

// agentSlot: one agent session per office, whatever its name; the slot is
// free again once released.
func agentSlot(t *testing.T, r core.Registry) {
	ctx := context.Background()
	alice := agent("o", "alice", "s1")
	mustClaim(t, r, alice)
	mustRefuse(t, r.Claim(ctx, agent("o", "bob", "s2")), "second agent, other name")
	mustRefuse(t, r.Claim(ctx, agent("o", "alice", "s3")), "second agent session, same name")
	wantNames(t, r, "o", "a:alice@s1")
	mustRelease(t, r, alice, true)
	wantNames(t, r, "o")
	mustClaim(t, r, agent("o", "bob", "s2"))
	wantNames(t, r, "o", "a:bob@s2")
}

// leases: one-call agents share the agent slot by name, beside a joined
// agent of that name; they are not members; the slot is held until the last
// holder is released.
func leases(t *testing.T, r core.Registry) {
	ctx := context.Background()
	l1, l2 := lease("o", "alice", "lease:1"), lease("o", "alice", "lease:2")
	mustClaim(t, r, l1)
	mustClaim(t, r, l2)
	mustRefuse(t, r.Claim(ctx, lease("o", "bob", "lease:3")), "lease of another name")
	mustRefuse(t, r.Claim(ctx, agent("o", "bob", "s1")), "agent of another name while leased")
	wantNames(t, r, "o")
	// A session of the leases' name may join; then it is the member.
	alice := agent("o", "alice", "s2")
	mustClaim(t, r, alice)
	wantNames(t, r, "o", "a:alice@s2")
	mustClaim(t, r, lease("o", "alice", "lease:4"))
	mustRelease(t, r, alice, true)
	wantNames(t, r, "o")
	mustRelease(t, r, l1, true)
	mustRelease(t, r, l2, true)
	mustRefuse(t, r.Claim(ctx, agent("o", "bob", "s3")), "agent of another name while a lease remains")
	mustRelease(t, r, lease("o", "alice", "lease:4"), true)
	mustClaim(t, r, agent("o", "bob", "s3"))
	mustRefuse(t, r.Claim(ctx, lease("o", "alice", "lease:5")), "lease of another name than the agent")
	mustClaim(t, r, lease("o", "bob", "lease:6"))
}

// computers: one computer per name, any number of names, beside the agent.
func computers(t *testing.T, r core.Registry) {
	ctx := context.Background()
	pc := computer("o", "pc", "c1")
	mustClaim(t, r, pc)
	mustRefuse(t, r.Claim(ctx, computer("o", "pc", "c2")), "second computer of one name")
	mustClaim(t, r, computer("o", "mac", "c3"))
	// A computer's name does not take the agent's slot, nor the reverse.
	mustClaim(t, r, agent("o", "pc", "s1"))
	got, ok, err := r.Computer(ctx, "o", "pc")
	if err != nil || !ok || got != pc {
		t.Fatalf("Computer(pc) = %+v, %v, %v; want %+v", got, ok, err, pc)
	}
	if _, ok, err := r.Computer(ctx, "o", "nobody"); err != nil || ok {
		t.Fatalf("Computer(nobody) = %v, %v; want not found", ok, err)
	}
	if _, ok, err := r.Computer(ctx, "o", "s1"); err != nil || ok {
		t.Fatalf("an agent found as a computer: %v, %v", ok, err)
	}
	mustRelease(t, r, pc, true)
	if _, ok, _ := r.Computer(ctx, "o", "pc"); ok {
		t.Fatal("released computer still found")
	}
	mustClaim(t, r, computer("o", "pc", "c2"))
}

// claimAgainIsHeld: claiming the record that holds a slot again succeeds
// (a claim whose answer was lost is repeated, a node gives its members back
// to a registry that lost them) and changes nothing; any other record of
// the slot is still refused.
func claimAgainIsHeld(t *testing.T, r core.Registry) {
	ctx := context.Background()
	a, pc, l := agent("o", "alice", "s1"), computer("o", "pc", "c1"), lease("o", "alice", "lease:1")
	for _, m := range []core.Member{a, pc, l} {
		mustClaim(t, r, m)
		mustClaim(t, r, m)
	}
	other := a
	other.Node = "n2"
	mustRefuse(t, r.Claim(ctx, other), "the agent's sid from another node")
	mustRefuse(t, r.Claim(ctx, computer("o", "pc", "c2")), "another computer of the name")
	wantNames(t, r, "o", "a:alice@s1", "c:pc@c1")
	mustRelease(t, r, a, true)
	mustRelease(t, r, l, true)
	wantNames(t, r, "o", "c:pc@c1")
	mustClaim(t, r, agent("o", "bob", "s2"))
}

// releaseOnlyItsRecord: a late release (a reaper, a session that lost a
// race) never removes a newer holder of the slot.
func releaseOnlyItsRecord(t *testing.T, r core.Registry) {
	old := computer("o", "pc", "c1")
	mustClaim(t, r, old)
	mustRelease(t, r, old, true)
	mustClaim(t, r, computer("o", "pc", "c2"))
	mustRelease(t, r, old, false)
	onOtherNode := computer("o", "pc", "c2")
	onOtherNode.Node = "n2"
	mustRelease(t, r, onOtherNode, false)
	wantNames(t, r, "o", "c:pc@c2")

	a := agent("o", "alice", "s1")
	mustClaim(t, r, a)
	mustRelease(t, r, a, true)
	mustRelease(t, r, a, false)
	mustClaim(t, r, agent("o", "alice", "s2"))
	mustRelease(t, r, a, false)
	wantNames(t, r, "o", "a:alice@s2", "c:pc@c2")
	mustRelease(t, r, core.Member{OfficeID: "nowhere", Role: smcp.RoleComputer, Name: "x", SID: "x"}, false)
}

// membersOrder: the agent first, then the computers by name, whatever the
// order of joining; the records come back as claimed.
func membersOrder(t *testing.T, r core.Registry) {
	ctx := context.Background()
	for _, n := range []string{"zeta", "alpha", "Mike", "beta-2", "beta"} {
		mustClaim(t, r, computer("o", n, "sid-"+n))
	}
	a := agent("o", "zz-agent", "s1")
	a.Node = "n2"
	mustClaim(t, r, a)
	mustClaim(t, r, lease("o", "zz-agent", "lease:1"))
	wantNames(t, r, "o", "a:zz-agent@s1", "c:Mike@sid-Mike", "c:alpha@sid-alpha",
		"c:beta@sid-beta", "c:beta-2@sid-beta-2", "c:zeta@sid-zeta")
	ms, err := r.Members(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	if ms[0] != a {
		t.Fatalf("agent record %+v, want %+v", ms[0], a)
	}
	wantNames(t, r, "empty")
}

// officesApart: offices do not share slots.
func officesApart(t *testing.T, r core.Registry) {
	mustClaim(t, r, agent("o1", "alice", "s1"))
	mustClaim(t, r, agent("o2", "bob", "s2"))
	mustClaim(t, r, computer("o1", "pc", "c1"))
	mustClaim(t, r, computer("o2", "pc", "c2"))
	wantNames(t, r, "o1", "a:alice@s1", "c:pc@c1")
	wantNames(t, r, "o2", "a:bob@s2", "c:pc@c2")
}

// race runs claims at once and returns the indexes of the winners.
func race(t *testing.T, r core.Registry, ms []core.Member) []int {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
		start   = make(chan struct{})
	)
	for i, m := range ms {
		wg.Go(func() {
			<-start
			err := r.Claim(context.Background(), m)
			if err == nil {
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
				return
			}
			if e, ok := smcp.AsError(err); !ok || (e.Code != smcp.CodeForbidden && e.Code != smcp.CodeRoomFull) {
				t.Errorf("claim %+v: %v", m, err)
			}
		})
	}
	close(start)
	wg.Wait()
	return winners
}

// agentRace: agents of different names, sessions and leases racing for one
// office: exactly one name wins.
func agentRace(t *testing.T, r core.Registry) {
	for round := range 5 {
		office := fmt.Sprintf("o%d", round)
		var ms []core.Member
		for i := range 16 {
			ms = append(ms, agent(office, fmt.Sprintf("agent%d", i), fmt.Sprintf("s%d", i)))
		}
		if w := race(t, r, ms); len(w) != 1 {
			t.Fatalf("round %d: %d agents won, want 1", round, len(w))
		} else {
			wantNames(t, r, office, "a:"+ms[w[0]].Name+"@"+ms[w[0]].SID)
		}
	}
	// Leases of two names racing: only leases of one name win.
	ms := []core.Member{}
	for i := range 16 {
		ms = append(ms, lease("leased", fmt.Sprintf("n%d", i%2), fmt.Sprintf("lease:%d", i)))
	}
	w := race(t, r, ms)
	if len(w) != 8 {
		t.Fatalf("%d leases won, want the 8 of one name", len(w))
	}
	for _, i := range w {
		if ms[i].Name != ms[w[0]].Name {
			t.Fatalf("leases of %q and %q both hold the office", ms[i].Name, ms[w[0]].Name)
		}
	}
}

// computerNameRace: computers racing for names: one winner per name.
func computerNameRace(t *testing.T, r core.Registry) {
	var ms []core.Member
	for i := range 24 {
		ms = append(ms, computer("o", fmt.Sprintf("pc%d", i%3), fmt.Sprintf("c%d", i)))
	}
	w := race(t, r, ms)
	got := map[string]int{}
	for _, i := range w {
		got[ms[i].Name]++
	}
	if len(w) != 3 || got["pc0"] != 1 || got["pc1"] != 1 || got["pc2"] != 1 {
		t.Fatalf("winners by name %v, want one of each of pc0..pc2", got)
	}
	if n := names(t, r, "o"); len(n) != 3 {
		t.Fatalf("members %v, want 3 computers", n)
	}
}

func versioned(m core.Member, v string) core.Member {
	m.Version, m.Announced = v, v+".0"
	return m
}

// oneVersionPerOffice: an office speaks the version of its non-lease
// members; another is refused (naming both) while one of them holds a slot,
// leases act in any version, and an emptied office takes any version.
func oneVersionPerOffice(t *testing.T, r core.Registry) {
	pc := versioned(computer("o", "pc", "s1"), "0.4")
	mustClaim(t, r, pc)
	a3 := versioned(agent("o", "alice", "s2"), "0.3")
	err := r.Claim(context.Background(), a3)
	mustRefuse(t, err, "0.3 agent in a 0.4 office")
	if e, _ := smcp.AsError(err); e.Message != "office o speaks 0.4; this connection speaks 0.3" {
		t.Fatalf("refusal %q", e.Message)
	}
	mustRefuse(t, r.Claim(context.Background(), versioned(computer("o", "pc2", "s3"), "0.2")), "0.2 computer in a 0.4 office")
	mustClaim(t, r, lease("o", "rpc", "l1"))
	a4 := versioned(agent("o", "alice", "s4"), "0.4")
	mustRefuse(t, r.Claim(context.Background(), a4), "agent while a lease holds the slot")
	mustRelease(t, r, lease("o", "rpc", "l1"), true)
	mustClaim(t, r, a4)
	mustRelease(t, r, pc, true)
	mustRefuse(t, r.Claim(context.Background(), versioned(computer("o", "pc2", "s3"), "0.2")), "0.2 computer while the 0.4 agent stays")
	mustRelease(t, r, a4, true)
	// Empty: a lease alone does not fix the version, a member does.
	mustClaim(t, r, lease("o", "rpc", "l2"))
	pc2 := versioned(computer("o", "pc2", "s3"), "0.2")
	mustClaim(t, r, pc2)
	if ms, err := r.Members(context.Background(), "o"); err != nil || len(ms) != 1 || ms[0] != pc2 {
		t.Fatalf("members %v, %v", ms, err)
	}
}

// lapsing is a lease that lapses ms after its last claim.
func lapsing(office, name, sid string, ms int64) core.Member {
	m := lease(office, name, sid)
	m.Front, m.Since, m.LeaseMS = core.FrontMCP, time.Now().UnixMilli(), ms
	return m
}

// seatLapses: a lapsing lease holds the seat while it is renewed (claimed
// again) and frees it by itself once it is not; a lease without LeaseMS
// never lapses. The registry's clock is real: waits are polled with
// generous bounds.
func seatLapses(t *testing.T, r core.Registry) {
	ctx := context.Background()
	const ms = 1000
	held := lapsing("o", "alice", "lease:1", ms)
	mustClaim(t, r, held)
	// Renewed for three leases: the seat stays held all along.
	for end := time.Now().Add(3 * ms * time.Millisecond); time.Now().Before(end); time.Sleep(ms / 4 * time.Millisecond) {
		mustClaim(t, r, held)
		mustRefuse(t, r.Claim(ctx, agent("o", "bob", "s1")), "agent while the lease is renewed")
	}
	// Not renewed: it lapses, and another agent takes the seat.
	bob := agent("o", "bob", "s1")
	testwait.Within(t, 20*time.Second, "seat free once the lease lapsed", func() bool { return r.Claim(ctx, bob) == nil })
	// The lapsed lease is refused while bob holds the seat, and its
	// release (its holder closing late) removes nothing.
	mustRefuse(t, r.Claim(ctx, held), "lapsed lease renewed while another agent holds the seat")
	mustRelease(t, r, held, false)
	wantNames(t, r, "o", "a:bob@s1")
	mustRelease(t, r, bob, true)

	// A lapsed lease whose seat stayed free is taken again by its renewal.
	again := lapsing("o", "carol", "lease:2", ms)
	mustClaim(t, r, again)
	time.Sleep(2 * ms * time.Millisecond)
	mustClaim(t, r, again)
	mustRefuse(t, r.Claim(ctx, agent("o", "dave", "s2")), "agent after the lapsed lease was renewed")
	mustRelease(t, r, again, true)

	// Without LeaseMS, a lease is held until released.
	call := lease("o", "erin", "lease:3")
	mustClaim(t, r, call)
	time.Sleep(2 * ms * time.Millisecond)
	mustRefuse(t, r.Claim(ctx, agent("o", "bob", "s3")), "agent beside a one-call lease")
	mustRelease(t, r, call, true)
}

// refusalNamesHolder: the refusal of the agent seat names the holder, its
// front end, since when it holds the seat and when a lapsing lease lapses,
// in RFC 3339 UTC.
func refusalNamesHolder(t *testing.T, r core.Registry) {
	ctx := context.Background()
	since := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	held := lapsing("o", "alice", "lease:1", 60_000)
	held.Since = since.UnixMilli()
	before := time.Now()
	mustClaim(t, r, held)
	err := r.Claim(ctx, agent("o", "bob", "s1"))
	mustRefuse(t, err, "agent while leased")
	msg := err.Error()
	for _, want := range []string{`"alice"`, "over mcp", "since 2026-07-01T10:00:00Z", "lapses at "} {
		if !strings.Contains(msg, want) {
			t.Fatalf("refusal %q does not say %q", msg, want)
		}
	}
	at := msg[strings.Index(msg, "lapses at ")+len("lapses at "):]
	at, _, _ = strings.Cut(at, " ")
	lapses, perr := time.Parse(time.RFC3339, at)
	if perr != nil {
		t.Fatalf("refusal %q: lapse time: %v", msg, perr)
	}
	// By the registry's clock, which may differ from this one by a little.
	if lapses.Before(before.Add(50*time.Second)) || lapses.After(time.Now().Add(70*time.Second)) {
		t.Fatalf("refusal %q: lapses at %v, want about a minute after %v", msg, lapses, before)
	}
	mustRelease(t, r, held, true)

	sess := agent("o", "carol", "s2")
	sess.Front, sess.Since = core.FrontSocketIO, since.UnixMilli()
	mustClaim(t, r, sess)
	err = r.Claim(ctx, lease("o", "bob", "lease:2"))
	mustRefuse(t, err, "lease while an agent is joined")
	if msg := err.Error(); !strings.Contains(msg, `"carol" over socket.io since 2026-07-01T10:00:00Z`) || strings.Contains(msg, "lapses") {
		t.Fatalf("refusal %q does not name the joined agent, or gives it a lapse", msg)
	}
}

// evictAgent: eviction frees the seat at once, whoever holds it (a joined
// agent and its leases), returns the holders, and leaves the computers.
func evictAgent(t *testing.T, r core.Registry) {
	ctx := context.Background()
	alice := agent("o", "alice", "s1")
	l := lapsing("o", "alice", "lease:1", 60_000)
	pc := computer("o", "pc", "s9")
	mustClaim(t, r, alice)
	mustClaim(t, r, l)
	mustClaim(t, r, pc)
	got, err := r.EvictAgent(ctx, "o")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != l || got[1] != alice {
		t.Fatalf("evicted %+v, want %+v and %+v", got, l, alice)
	}
	wantNames(t, r, "o", "c:pc@s9")
	mustRelease(t, r, alice, false)
	mustRelease(t, r, l, false)
	mustClaim(t, r, agent("o", "bob", "s2"))
	wantNames(t, r, "o", "a:bob@s2", "c:pc@s9")
	if got, err := r.EvictAgent(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("evict in an empty office = %v, %v", got, err)
	}
}

// mustBeFull checks that err is 0.5's 4101 for role in office, word for
// word (PROTOCOL-0.5.md row 3).
func mustBeFull(t *testing.T, err error, office, role, what string) {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok {
		t.Fatalf("%s: %v, want a 4101 *smcp.Error", what, err)
	}
	want := "Room already has a computer"
	if role == smcp.RoleAgent {
		want = "Room already has an agent"
	}
	if e.Code != smcp.CodeRoomFull || e.Message != want || len(e.Details) != 2 ||
		e.Details["office_id"] != office || e.Details["role"] != role {
		t.Fatalf("%s: %+v, want 4101 %q {office_id: %s, role: %s}", what, e, want, office, role)
	}
}

// seatPerRole: in a 0.5 office the first computer keeps the only computer
// seat against any other, of another name or the same; the agent seat is
// refused with 4101 too; the seat is free once released; 0.4 offices keep
// their computers by name.
func seatPerRole(t *testing.T, r core.Registry) {
	ctx := context.Background()
	c1 := versioned(computer("R1", "C1", "s1"), "0.5")
	mustClaim(t, r, c1)
	mustClaim(t, r, c1) // the very record again: held
	mustBeFull(t, r.Claim(ctx, versioned(computer("R1", "C2", "s2"), "0.5")), "R1", smcp.RoleComputer, "second computer")
	mustBeFull(t, r.Claim(ctx, versioned(computer("R1", "C1", "s3"), "0.5")), "R1", smcp.RoleComputer, "second computer of the same name")
	a := versioned(agent("R1", "A", "s4"), "0.5")
	mustClaim(t, r, a)
	mustBeFull(t, r.Claim(ctx, versioned(agent("R1", "B", "s5"), "0.5")), "R1", smcp.RoleAgent, "second agent")
	wantNames(t, r, "R1", "a:A@s4", "c:C1@s1")
	mustRelease(t, r, c1, true)
	mustClaim(t, r, versioned(computer("R1", "C2", "s2"), "0.5"))
	wantNames(t, r, "R1", "a:A@s4", "c:C2@s2")

	// Beside it, a 0.4 office holds computers by name as before.
	mustClaim(t, r, versioned(computer("R4", "C1", "t1"), "0.4"))
	mustClaim(t, r, versioned(computer("R4", "C2", "t2"), "0.4"))
	mustRefuse(t, r.Claim(ctx, versioned(computer("R4", "C1", "t3"), "0.4")), "0.4 computer of a taken name")
	wantNames(t, r, "R4", "c:C1@t1", "c:C2@t2")
}

// computerSeatRace: computers of different names and of one name racing
// for an empty 0.5 office: exactly one wins, the others get 4101.
func computerSeatRace(t *testing.T, r core.Registry) {
	for round := range 5 {
		office := fmt.Sprintf("R%d", round)
		var ms []core.Member
		for i := range 16 {
			ms = append(ms, versioned(computer(office, fmt.Sprintf("C%d", i%(round+1)), fmt.Sprintf("s%d", i)), "0.5"))
		}
		w := race(t, r, ms)
		if len(w) != 1 {
			t.Fatalf("round %d: %d computers won, want 1", round, len(w))
		}
		wantNames(t, r, office, "c:"+ms[w[0]].Name+"@"+ms[w[0]].SID)
	}
}
