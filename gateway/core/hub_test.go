package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// fakeConn is a front end's session: it records notifications and answers
// requests with handler (in its own goroutine, as a network peer would).
type fakeConn struct {
	mu       sync.Mutex
	notes    []Notification
	requests []string // event names received
	handler  func(event string, payload json.RawMessage) (json.RawMessage, bool)
	// forgotten counts the requests the core gave up on (forget called).
	forgotten atomic.Int64
}

func (c *fakeConn) Notify(n Notification) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n)
}

func (c *fakeConn) Request(event string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	c.mu.Lock()
	c.requests = append(c.requests, event)
	h := c.handler
	c.mu.Unlock()
	forget := func() { c.forgotten.Add(1) }
	if h == nil {
		return forget // never answers
	}
	go func() {
		if raw, ok := h(event, payload); ok {
			done(raw, nil)
		}
	}()
	return forget
}

func (c *fakeConn) notifications() []Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Notification(nil), c.notes...)
}

func (c *fakeConn) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

func (c *fakeConn) events() []string {
	var out []string
	for _, n := range c.notifications() {
		out = append(out, noteString(n))
	}
	return out
}

// noteString renders a notification compactly (protojson varies its spacing).
func noteString(n Notification) string {
	var b bytes.Buffer
	if err := json.Compact(&b, n.Wire); err != nil {
		return "bad json: " + string(n.Wire)
	}
	return n.Event + " " + b.String()
}

var allowAll = &Principal{ID: "test"}

func attach(t *testing.T, h *Hub, sid string) (*Session, *fakeConn) {
	t.Helper()
	return attachProto(t, h, sid, v02)
}

func attachProto(t *testing.T, h *Hub, sid string, proto Protocol) (*Session, *fakeConn) {
	t.Helper()
	c := &fakeConn{}
	s, err := h.Attach(sid, allowAll, c, proto)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func join(t *testing.T, s *Session, role, name, office string) {
	t.Helper()
	if err := s.Join(&smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: office}); err != nil {
		t.Fatalf("join %s %s %s: %v", role, name, office, err)
	}
}

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok {
		t.Fatalf("want smcp error %d, got %v", code, err)
	}
	if e.Code != code {
		t.Fatalf("want code %d, got %d (%s)", code, e.Code, e.Message)
	}
}

func TestJoinRules(t *testing.T) {
	h := New(Config{})
	agent, _ := attach(t, h, "a1")
	join(t, agent, smcp.RoleAgent, "alice", "o1")

	tests := []struct {
		name       string
		role, who  string
		office     string
		wantCode   int
		setupOther bool
	}{
		{name: "unknown role", role: "robot", who: "x", office: "o1", wantCode: 400},
		{name: "empty name", role: smcp.RoleAgent, who: "", office: "o1", wantCode: 400},
		{name: "empty office", role: smcp.RoleAgent, who: "x", office: "", wantCode: 400},
		{name: "second agent", role: smcp.RoleAgent, who: "bob", office: "o1", wantCode: 403},
		{name: "second agent same name", role: smcp.RoleAgent, who: "alice", office: "o1", wantCode: 403},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := attach(t, h, fmt.Sprintf("t%d", i))
			wantCode(t, s.Join(&smcpv1.EnterOfficeReq{Role: tc.role, Name: tc.who, OfficeId: tc.office}), tc.wantCode)
			if got := s.Info(); got.GetRole() != "" || got.GetOfficeId() != "" {
				t.Fatalf("refused join changed the session: %v", got)
			}
		})
	}

	t.Run("agent in another office", func(t *testing.T) {
		wantCode(t, agent.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "o2"}), 403)
	})
	t.Run("role and name fixed", func(t *testing.T) {
		wantCode(t, agent.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "alice", OfficeId: "o2"}), 403)
		wantCode(t, agent.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "other", OfficeId: "o1"}), 403)
		if err := agent.Leave("o1"); err != nil {
			t.Fatal(err)
		}
		// Still an agent named alice after leaving.
		wantCode(t, agent.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "alice", OfficeId: "o1"}), 403)
		join(t, agent, smcp.RoleAgent, "alice", "o1")
	})
	t.Run("computer name unique per office, not across offices", func(t *testing.T) {
		c1, _ := attach(t, h, "c1")
		c2, _ := attach(t, h, "c2")
		c3, _ := attach(t, h, "c3")
		join(t, c1, smcp.RoleComputer, "pc", "o1")
		wantCode(t, c2.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o1"}), 403)
		join(t, c3, smcp.RoleComputer, "pc", "o3")
	})
}

func TestRejoinIsNoOp(t *testing.T) {
	h := New(Config{})
	a, ac := attach(t, h, "a")
	c, _ := attach(t, h, "c")
	join(t, a, smcp.RoleAgent, "alice", "o")
	join(t, c, smcp.RoleComputer, "pc", "o")
	join(t, c, smcp.RoleComputer, "pc", "o")
	if got := ac.events(); len(got) != 1 {
		t.Fatalf("agent got %d notifications, want 1 enter: %v", len(got), got)
	}
}

func TestNotificationsScopedAndExcludeSender(t *testing.T) {
	h := New(Config{})
	a, ac := attach(t, h, "a")
	c1, c1c := attach(t, h, "c1")
	c2, c2c := attach(t, h, "c2")
	other, oc := attach(t, h, "x")
	join(t, other, smcp.RoleComputer, "pc1", "elsewhere")
	join(t, a, smcp.RoleAgent, "alice", "o")
	join(t, c1, smcp.RoleComputer, "pc1", "o")
	join(t, c2, smcp.RoleComputer, "pc2", "o")
	w, err := h.Watch(allowAll, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	if err := c1.Update(smcp.EventUpdateToolList); err != nil {
		t.Fatal(err)
	}
	if err := a.CancelToolCall(&smcpv1.AgentCallData{Agent: "alice", ReqId: "r1"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.CancelToolCall(&smcpv1.AgentCallData{Agent: "mallory", ReqId: "r1"}), 403)
	wantCode(t, a.Update(smcp.EventUpdateConfig), 403)                                    // agents may not send updates
	wantCode(t, c1.CancelToolCall(&smcpv1.AgentCallData{Agent: "pc1", ReqId: "r"}), 4103) // computers may not cancel

	wantAgent := []string{
		`notify:enter_office {"office_id":"o","computer":"pc1"}`,
		`notify:enter_office {"office_id":"o","computer":"pc2"}`,
		`notify:update_tool_list {"computer":"pc1"}`,
	}
	assertEvents(t, "agent", ac.events(), wantAgent)
	assertEvents(t, "pc1", c1c.events(), []string{
		`notify:enter_office {"office_id":"o","computer":"pc2"}`,
		`notify:tool_call_cancel {"agent":"alice","req_id":"r1"}`,
	})
	assertEvents(t, "pc2", c2c.events(), []string{
		`notify:update_tool_list {"computer":"pc1"}`,
		`notify:tool_call_cancel {"agent":"alice","req_id":"r1"}`,
	})
	assertEvents(t, "other office", oc.events(), nil)

	var watched []string
	for len(w.C()) > 0 {
		n := <-w.C()
		watched = append(watched, noteString(n))
	}
	assertEvents(t, "watcher", watched, []string{
		`notify:update_tool_list {"computer":"pc1"}`,
		`notify:tool_call_cancel {"agent":"alice","req_id":"r1"}`,
	})
}

func assertEvents(t *testing.T, who string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s got\n  %v\nwant\n  %v", who, got, want)
	}
}

func TestComputerMovesAndOldOfficeIsTold(t *testing.T) {
	h := New(Config{})
	a1, a1c := attach(t, h, "a1")
	a2, a2c := attach(t, h, "a2")
	c, _ := attach(t, h, "c")
	join(t, a1, smcp.RoleAgent, "alice", "o1")
	join(t, a2, smcp.RoleAgent, "bob", "o2")
	join(t, c, smcp.RoleComputer, "pc", "o1")
	join(t, c, smcp.RoleComputer, "pc", "o2")
	assertEvents(t, "old office", a1c.events(), []string{
		`notify:enter_office {"office_id":"o1","computer":"pc"}`,
		`notify:leave_office {"office_id":"o1","computer":"pc"}`,
	})
	assertEvents(t, "new office", a2c.events(), []string{`notify:enter_office {"office_id":"o2","computer":"pc"}`})
	if got := c.Info().GetOfficeId(); got != "o2" {
		t.Fatalf("office = %q", got)
	}
	rooms, err := a1.ListRoom("o1")
	if err != nil || len(rooms) != 1 {
		t.Fatalf("o1 members: %v %v", rooms, err)
	}
}

func TestCloseLeavesAndTells(t *testing.T) {
	h := New(Config{})
	a, ac := attach(t, h, "a")
	c, _ := attach(t, h, "c")
	join(t, a, smcp.RoleAgent, "alice", "o")
	join(t, c, smcp.RoleComputer, "pc", "o")
	c.Close()
	c.Close()
	assertEvents(t, "agent", ac.events(), []string{
		`notify:enter_office {"office_id":"o","computer":"pc"}`,
		`notify:leave_office {"office_id":"o","computer":"pc"}`,
	})
	a.Close()
	if n := len(h.offices); n != 0 {
		t.Fatalf("%d offices left after everyone closed", n)
	}
	// The sid may be attached again once closed.
	if _, err := h.Attach("c", allowAll, &fakeConn{}, v02); err != nil {
		t.Fatal(err)
	}
}

func TestLeaveRules(t *testing.T) {
	h := New(Config{})
	a, _ := attach(t, h, "a")
	wantCode(t, a.Leave("o"), 403)
	join(t, a, smcp.RoleAgent, "alice", "o")
	wantCode(t, a.Leave("other"), 403)
	if err := a.Leave("o"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.Leave("o"), 403)
}

func TestListRoomMembersOnly(t *testing.T) {
	h := New(Config{})
	a, _ := attach(t, h, "a")
	c, _ := attach(t, h, "c")
	x, _ := attach(t, h, "x")
	join(t, a, smcp.RoleAgent, "alice", "o")
	join(t, c, smcp.RoleComputer, "pc", "o")
	join(t, x, smcp.RoleComputer, "spy", "other")
	got, err := a.ListRoom("o")
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, m := range got {
		members = append(members, m.GetSid()+"/"+m.GetName()+"/"+m.GetRole()+"/"+m.GetOfficeId())
	}
	if want := "[a/alice/agent/o c/pc/computer/o]"; fmt.Sprint(members) != want {
		t.Fatalf("got %v", got)
	}
	_, err = x.ListRoom("o")
	wantCode(t, err, 403)
}

func TestPrincipalLimits(t *testing.T) {
	h := New(Config{})
	p := &Principal{ID: "k", Roles: []string{smcp.RoleAgent}, Offices: []string{"o"}, Name: "alice"}
	s, err := h.Attach("s", p, &fakeConn{}, v02)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "alice", OfficeId: "o"}), 403)
	wantCode(t, s.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "p"}), 403)
	wantCode(t, s.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "bob", OfficeId: "o"}), 403)
	join(t, s, smcp.RoleAgent, "alice", "o")
	_, err = h.Watch(p, "p")
	wantCode(t, err, 403)
	_, err = h.ActAsAgent(p, "p", "alice")
	wantCode(t, err, 403)
}

// Many sessions race for one office: exactly one agent wins, every other
// attempt is refused, and the office's state is consistent.
func TestAgentRaceExactlyOneWins(t *testing.T) {
	h := New(Config{})
	const n = 64
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	sessions := make([]*Session, n)
	for i := range n {
		sessions[i], _ = attach(t, h, fmt.Sprintf("s%d", i))
	}
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			if i%4 == 0 { // some race through the one-call path
				var l *Session
				l, err = h.ActAsAgent(allowAll, "o", fmt.Sprintf("agent%d", i))
				if err == nil {
					wins.Add(1)
					_ = l // held until the end of the test
				}
			} else {
				err = sessions[i].Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: fmt.Sprintf("agent%d", i), OfficeId: "o"})
				if err == nil {
					wins.Add(1)
				}
			}
			if err != nil {
				wantCode(t, err, 403)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Fatalf("%d agents won the office, want exactly 1", got)
	}
}

func TestActAsAgent(t *testing.T) {
	h := New(Config{})
	a, ac := attach(t, h, "a")
	c, cc := attach(t, h, "c")
	cc.handler = func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		return json.RawMessage(`{"tools":[],"req_id":"r"}`), true
	}
	join(t, c, smcp.RoleComputer, "pc", "o")

	l, err := h.ActAsAgent(allowAll, "o", "rpc")
	if err != nil {
		t.Fatal(err)
	}
	// While the one-call agent holds the office, another agent cannot join...
	wantCode(t, a.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "o"}), 403)
	// ... and another one-call agent with another name is refused.
	_, err = h.ActAsAgent(allowAll, "o", "other")
	wantCode(t, err, 403)
	ret, err := l.GetTools(context.Background(), &smcpv1.GetToolsReq{Agent: "rpc", ReqId: "r", Computer: "pc"})
	if err != nil || ret.GetReqId() != "r" {
		t.Fatalf("GetTools: %v %v", ret, err)
	}
	wantCode(t, l.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "rpc", OfficeId: "o"}), 403)
	l.Close()
	l.Close()
	join(t, a, smcp.RoleAgent, "alice", "o")
	_, err = h.ActAsAgent(allowAll, "o", "rpc")
	wantCode(t, err, 403)
	// The same agent name may act alongside its Socket.IO session.
	l2, err := h.ActAsAgent(allowAll, "o", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := ac.events(); len(got) != 0 {
		t.Fatalf("one-call agents must not notify: %v", got)
	}
	if err := l2.CancelToolCall(&smcpv1.AgentCallData{Agent: "alice", ReqId: "r9"}); err != nil {
		t.Fatal(err)
	}
	assertEvents(t, "computer", cc.events(), []string{
		`notify:enter_office {"office_id":"o","agent":"alice"}`,
		`notify:tool_call_cancel {"agent":"alice","req_id":"r9"}`,
	})
}

func TestWatcherOverflowIsDropped(t *testing.T) {
	h := New(Config{WatchBuffer: 2})
	c, _ := attach(t, h, "c")
	join(t, c, smcp.RoleComputer, "pc", "o")
	w, err := h.Watch(allowAll, "o")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Update(smcp.EventUpdateDesktop); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range w.C() {
		n++
	}
	if n != 2 || !errors.Is(w.Err(), ErrWatchOverflow) {
		t.Fatalf("got %d notifications, err %v", n, w.Err())
	}
	w.Close()
}

// A watcher with a buffer of its own lags behind that many notifications,
// not the hub's WatchBuffer, before it is dropped.
func TestWatchBufferedOverflowsAtItsOwnBuffer(t *testing.T) {
	h := New(Config{WatchBuffer: 8})
	c, _ := attach(t, h, "c")
	join(t, c, smcp.RoleComputer, "pc", "o")
	w, err := h.WatchBuffered(allowAll, "o", 1)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Update(smcp.EventUpdateDesktop); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for range w.C() {
		n++
	}
	if n != 1 || !errors.Is(w.Err(), ErrWatchOverflow) {
		t.Fatalf("got %d notifications, err %v", n, w.Err())
	}
	w.Close()
}

var (
	v02 = Protocol{Version: smcp.V02}
	v03 = Protocol{Version: smcp.V03, Announced: "0.3.2"}
	v04 = Protocol{Version: smcp.V04, Announced: "0.4.0"}
)
