// Package peerstest is the conformance suite of core.Peers, what carries
// calls and notifications between the nodes of a cluster: every
// implementation (core.MemBus in one process, gateway/cluster's Peers over
// Redis) runs it, so that what the hub counts on does not depend on the
// transport.
package peerstest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Cluster is the cluster a subtest runs on.
type Cluster struct {
	// Hubs are the nodes: each hub's Peers is the implementation under
	// test, and they share one Registry.
	Hubs []*core.Hub
	// Kill makes node i die without a word: it beats no more and sends
	// nothing more. The other nodes find out by themselves (as they reap a
	// dead node) and answer the calls in flight to it.
	Kill func(t *testing.T, i int)
	// Outage, when not nil, makes the transport lose what it carries for
	// a while (Redis stops, and starts again empty) and returns once it
	// accepts connections again. nil: the implementation has no transport
	// to lose.
	Outage func(t *testing.T)
}

// Run runs the suite; newCluster starts n nodes, each hub made with cfg
// (newCluster sets Registry and Node).
func Run(t *testing.T, newCluster func(t *testing.T, n int, cfg core.Config) *Cluster) {
	for _, tc := range []struct {
		name  string
		nodes int
		f     func(t *testing.T, c *Cluster)
	}{
		{"Ordering", 3, ordering},
		{"SenderExcluded", 2, senderExcluded},
		{"WatchersAsBytes", 2, watchersAsBytes},
		{"CallsAsBytes", 2, callsAsBytes},
		{"AnsweredAfterNodeReaped", 2, answeredAfterNodeReaped},
		{"LossWhileTransportRestarts", 2, lossWhileTransportRestarts},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newCluster(t, tc.nodes, core.Config{})) })
	}
}

// conn is a session's front end: it records the notifications it gets
// and answers requests with answer (nil: holds them, unanswered).
type conn struct {
	answer func(payload json.RawMessage) (json.RawMessage, error)

	mu    sync.Mutex
	notes []core.Notification
	held  int
}

func (c *conn) Notify(n core.Notification) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n)
}

func (c *conn) Request(_ string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	if c.answer == nil {
		c.mu.Lock()
		c.held++
		c.mu.Unlock()
		return func() {}
	}
	go func() { done(c.answer(payload)) }() // answers come on the connection's goroutine
	return func() {}
}

// seen lists the notifications whose event and wire JSON contain sub, as
// "event wire".
func (c *conn) seen(sub string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.notes {
		if s := n.Event + " " + string(n.Wire); strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

func (c *conn) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

var v04 = core.Protocol{Version: smcp.V04, Announced: "0.4"}

// join attaches a session to h and joins office "o" as role name.
func join(t *testing.T, h *core.Hub, sid, role, name string, c core.Conn) *core.Session {
	t.Helper()
	s, err := h.Attach(sid, &core.Principal{ID: "test"}, c, v04)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.JoinContext(ctx, &smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: "o"}); err != nil {
		t.Fatalf("%s joins as %s %q: %v", sid, role, name, err)
	}
	return s
}

// enterOf is how the enter_office of computer name starts.
func enterOf(name string) string {
	return smcp.NotifyEnterOffice + ` {"office_id":"o","computer":"` + name + `"`
}

func cancelCall(t *testing.T, agent *core.Session, reqID string) {
	t.Helper()
	if err := agent.CancelToolCall(&smcpv1.AgentCallData{Agent: "alice", ReqId: reqID}); err != nil {
		t.Fatal(err)
	}
}

// reqIDs are the req_id of the tool_call_cancel notifications c got.
func reqIDs(t *testing.T, c *conn) []string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.notes {
		if p, ok := n.Payload.(*smcpv1.AgentCallData); ok {
			out = append(out, p.GetReqId())
		}
	}
	return out
}

func watch(t *testing.T, h *core.Hub) *conn {
	t.Helper()
	w, err := h.WatchBuffered(&core.Principal{ID: "test"}, "o", 1024)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := range w.C() {
			c.Notify(n)
		}
	})
	t.Cleanup(func() { w.Close(); wg.Wait() })
	return c
}

// ordering: the notifications a node publishes reach every other node's
// members and watchers in the order the hub published them, none lost
// (the transport works), none twice. The agent publishes them under its
// hub's lock (Hub.CancelToolCall), as fast as it can: Publish must not
// wait for the transport.
func ordering(t *testing.T, c *Cluster) {
	pc := &conn{}
	join(t, c.Hubs[1], "pc-sid", smcp.RoleComputer, "pc", pc)
	w := watch(t, c.Hubs[2])
	agent := join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", &conn{})
	const n = 300
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("r%03d", i)
		cancelCall(t, agent, want[i])
	}
	for name, got := range map[string]*conn{"computer on node 1": pc, "watcher on node 2": w} {
		testwait.Within(t, time.Minute, name+" told every cancel", func() bool { return len(reqIDs(t, got)) >= n })
		if ids := reqIDs(t, got); !slices.Equal(ids, want) {
			t.Fatalf("%s got %d cancels, not in the order sent: %v", name, len(ids), ids)
		}
	}
}

// senderExcluded: the session that caused a notification does not get it,
// and the sender's node delivers it to its own members once (the node
// does not take its own publication back from the transport).
func senderExcluded(t *testing.T, c *Cluster) {
	agent := join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", &conn{})
	pc0 := &conn{}
	join(t, c.Hubs[0], "pc0-sid", smcp.RoleComputer, "pc0", pc0)
	pc1 := &conn{}
	pc1s := join(t, c.Hubs[1], "pc1-sid", smcp.RoleComputer, "pc1", pc1)
	testwait.Within(t, time.Minute, "pc0 told pc1 entered", func() bool { return len(pc0.seen(enterOf("pc1"))) == 1 })

	cancelCall(t, agent, "x")
	testwait.Within(t, time.Minute, "pc1 told of the cancel", func() bool { return len(reqIDs(t, pc1)) == 1 })
	// Published by node 1 once it had the cancel: whatever node 0 would
	// take back of its own cancel comes to it before this.
	if err := pc1s.Update(smcp.EventUpdateConfig); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, time.Minute, "pc0 told pc1's update", func() bool { return len(pc0.seen(smcp.NotifyUpdateConfig)) == 1 })
	if ids := reqIDs(t, pc0); !slices.Equal(ids, []string{"x"}) {
		t.Fatalf("pc0, on the agent's node, got cancels %v, want [x] once", ids)
	}
	if got := pc1.seen(smcp.NotifyUpdateConfig); len(got) != 0 {
		t.Fatalf("pc1 was told its own update: %v", got)
	}
	if got := pc1.seen(enterOf("pc1")); len(got) != 0 {
		t.Fatalf("pc1 was told its own enter: %v", got)
	}
	if got := pc0.seen(enterOf("pc1")); len(got) != 1 {
		t.Fatalf("pc0 told pc1 entered %d times: %v", len(got), got)
	}
}

// watchersAsBytes: a node whose only part in the office is a watcher gets
// the notifications of the members of other nodes, their wire JSON byte
// for byte as the publishing node's own members got it.
func watchersAsBytes(t *testing.T, c *Cluster) {
	w := watch(t, c.Hubs[1])
	local := &conn{}
	join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", local)
	pc := join(t, c.Hubs[0], "pc-sid", smcp.RoleComputer, "pc", &conn{})
	if err := pc.Update(smcp.EventUpdateToolList); err != nil {
		t.Fatal(err)
	}
	if err := pc.Leave("o"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, time.Minute, "the watcher told pc left", func() bool { return len(w.seen(smcp.NotifyLeaveOffice)) == 1 })
	want := local.seen(`"pc"`)
	if got := w.seen(`"pc"`); !slices.Equal(got, want) || len(want) != 3 {
		t.Fatalf("the watcher on another node got %q, want %q (enter, update, leave)", got, want)
	}
}

// callsAsBytes: a call to a computer of another node reaches it as the
// agent's bytes, and its answer comes back as the computer's.
func callsAsBytes(t *testing.T, c *Cluster) {
	odd := `{ "z":1,"agent":"alice","req_id":"r1","computer":"pc","big":12345678901234567890,"s":"\ud800" ,"a":[ ]}`
	answer := `{"z" : 9007199254740993, "b":"\udfff"}`
	got := make(chan string, 1)
	join(t, c.Hubs[1], "pc-sid", smcp.RoleComputer, "pc", &conn{answer: func(p json.RawMessage) (json.RawMessage, error) {
		got <- string(p)
		return json.RawMessage(answer), nil
	}})
	agent := join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", &conn{})
	r, err := core.ParseRequest(smcp.EventGetConfig, []byte(odd))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := agent.Route(ctx, r)
	if err != nil || string(raw) != answer {
		t.Fatalf("answer %s, %v; want %s", raw, err, answer)
	}
	if p := <-got; p != odd {
		t.Fatalf("the computer got %s, want %s", p, odd)
	}
}

// answeredAfterNodeReaped: the calls in flight to a computer of a node that
// dies are answered (the computer is gone) once the other nodes find it
// dead, long before their deadline; its members are told gone to the
// others (leave_office), and a call after that is refused (404).
func answeredAfterNodeReaped(t *testing.T, c *Cluster) {
	pc := &conn{} // holds every request
	join(t, c.Hubs[1], "pc-sid", smcp.RoleComputer, "pc", pc)
	ac := &conn{}
	agent := join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", ac)
	const calls = 3
	answers := make(chan json.RawMessage, calls)
	for i := range calls {
		r, err := core.ParseRequest(smcp.EventToolCall, fmt.Appendf(nil,
			`{"agent":"alice","req_id":"t%d","computer":"pc","tool_name":"x","params":{},"timeout":600}`, i))
		if err != nil {
			t.Fatal(err)
		}
		agent.Go(r, func(raw json.RawMessage, err error) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			answers <- raw
		})
	}
	testwait.Within(t, time.Minute, "the calls at the computer", func() bool { return pc.requests() == calls })
	c.Kill(t, 1)
	for range calls {
		select {
		case raw := <-answers:
			if !strings.Contains(string(raw), "left the office") {
				t.Fatalf("answer %s, want the computer gone", raw)
			}
		case <-time.After(time.Minute):
			t.Fatal("calls to the dead node not answered within a minute (deadline 10 min)")
		}
	}
	testwait.Within(t, time.Minute, "the agent told pc left", func() bool { return len(ac.seen(smcp.NotifyLeaveOffice)) == 1 })
	r, err := core.ParseRequest(smcp.EventGetConfig, []byte(`{"agent":"alice","req_id":"after","computer":"pc"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := agent.Route(ctx, r); !isCode(err, smcp.CodeNotFound) {
		t.Fatalf("call after the node died: %v, want 404", err)
	}
}

func isCode(err error, code int) bool {
	e, ok := smcp.AsError(err)
	return ok && e.Code == code
}

// lossWhileTransportRestarts: what is promised when the transport loses
// what it carries (Redis restarting). Notifications published while it is
// gone, or before a node has subscribed again, are lost: delivery is at
// most once. None is delivered twice or out of order, and the nodes need
// no restart: once one notification of a node reaches another again,
// every later one does, in order, and calls cross again.
func lossWhileTransportRestarts(t *testing.T, c *Cluster) {
	if c.Outage == nil {
		t.Skip("this implementation has no transport to lose")
	}
	pc := &conn{answer: func(p json.RawMessage) (json.RawMessage, error) { return p, nil }}
	join(t, c.Hubs[1], "pc-sid", smcp.RoleComputer, "pc", pc)
	agent := join(t, c.Hubs[0], "a-sid", smcp.RoleAgent, "alice", &conn{})
	cancelCall(t, agent, "before")
	testwait.Within(t, time.Minute, "the cancel before the outage", func() bool { return len(reqIDs(t, pc)) == 1 })

	c.Outage(t)
	// Until one gets through: each look sends the next.
	sent := 0
	testwait.Within(t, 2*time.Minute, "a cancel through after the outage", func() bool {
		cancelCall(t, agent, fmt.Sprintf("r%04d", sent))
		sent++
		return len(reqIDs(t, pc)) > 1
	})
	const more = 50
	for i := range more {
		cancelCall(t, agent, fmt.Sprintf("r%04d", sent+i))
	}
	last := fmt.Sprintf("r%04d", sent+more-1)
	testwait.Within(t, time.Minute, "the cancels after the first through", func() bool {
		ids := reqIDs(t, pc)
		return ids[len(ids)-1] == last
	})
	ids := reqIDs(t, pc)[1:]
	first := ids[0]
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Fatalf("cancels after the outage out of order or twice: %v", ids)
	}
	var want []string
	for i := range sent + more {
		if id := fmt.Sprintf("r%04d", i); id >= first {
			want = append(want, id)
		}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("after the first through (%s), got %v, want every later one %v", first, ids, want)
	}
	t.Logf("%d of %d cancels sent while the transport came back were lost", sent+more-len(ids), sent+more)

	// Calls cross again too (the registry, rebuilt meanwhile, finds pc).
	r, err := core.ParseRequest(smcp.EventGetConfig, []byte(`{"agent":"alice","req_id":"after","computer":"pc"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if raw, err := agent.Route(ctx, r); err != nil || !strings.Contains(string(raw), `"after"`) {
		t.Fatalf("call after the outage: %s, %v", raw, err)
	}
}
