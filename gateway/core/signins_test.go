package core

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func testSignIn(state string) SignIn {
	return SignIn{Server: "Guarded API", BundleID: "Guarded_API", URL: "https://as.example/authorize?state=" + state, State: state,
		Expires: time.Now().Add(time.Minute)}
}

// A sign-in is keyed by the reporting computer's office and name (never
// the report's), reaches the computer once (the state is single use), and
// only a computer in an office may report one, with an http(s) URL.
func TestSignInReportedAndCompletedOnce(t *testing.T) {
	h := New(Config{})
	agent, _ := attach(t, h, "a")
	join(t, agent, smcp.RoleAgent, "bot", "o")
	wantCode(t, agent.ReportSignIn(testSignIn("s1")), smcp.CodeForbidden)
	pc, conn := attach(t, h, "c")
	wantCode(t, pc.ReportSignIn(testSignIn("s1")), smcp.CodeForbidden) // in no office yet
	join(t, pc, smcp.RoleComputer, "pc", "o")
	bad := testSignIn("s1")
	bad.URL = "javascript:alert(1)"
	wantCode(t, pc.ReportSignIn(bad), smcp.CodeBadRequest)

	var got map[string]string
	conn.handler = func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		if event != smcp.EventAuthCallback || json.Unmarshal(payload, &got) != nil {
			return json.RawMessage(`{"code":400,"message":"unexpected"}`), true
		}
		return json.RawMessage(`{"server":"Guarded API"}`), true
	}
	si := testSignIn("s1")
	si.Office, si.Computer = "elsewhere", "other" // ignored
	if err := pc.ReportSignIn(si); err != nil {
		t.Fatal(err)
	}
	if l := h.SignIns("o"); len(l) != 1 || l[0].Office != "o" || l[0].Computer != "pc" || l[0].URL != si.URL {
		t.Fatalf("SignIns(o) = %+v", l)
	}
	if l := h.SignIns("other"); len(l) != 0 {
		t.Fatalf("SignIns(other) = %+v", l)
	}
	ctx := context.Background()
	if _, err := h.CompleteSignIn(ctx, "o", "other", SignInAnswer{Code: "c", State: "s1"}); !errors.Is(err, ErrNoSignIn) {
		t.Fatalf("another computer's callback: %v, want ErrNoSignIn", err)
	}
	server, err := h.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1", Iss: "https://as.example"})
	if err != nil || server != "Guarded API" {
		t.Fatalf("CompleteSignIn = %q, %v", server, err)
	}
	if got["code"] != "c" || got["state"] != "s1" || got["iss"] != "https://as.example" {
		t.Fatalf("the computer got %v", got)
	}
	if _, err := h.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1"}); !errors.Is(err, ErrNoSignIn) {
		t.Fatalf("the state again: %v, want ErrNoSignIn", err)
	}
	if l := h.SignIns(""); len(l) != 0 {
		t.Fatalf("SignIns after the callback = %+v", l)
	}
}

// The sign-ins of a computer that leaves are forgotten, and a callback
// waiting for its answer ends at once.
func TestSignInsDroppedWhenTheComputerLeaves(t *testing.T) {
	h := New(Config{})
	pc, _ := attach(t, h, "c") // its conn never answers
	join(t, pc, smcp.RoleComputer, "pc", "o")
	for _, s := range []string{"s1", "s2"} {
		if err := pc.ReportSignIn(testSignIn(s)); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure, not a hang
	defer cancel()
	go func() {
		_, err := h.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1"})
		errc <- err
	}()
	// s1 is taken by the callback once it is no longer listed.
	testwait.Until(t, "the callback to take s1", func() bool { return len(h.SignIns("o")) == 1 })
	pc.Close()
	if err := <-errc; err == nil || errors.Is(err, ErrNoSignIn) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("callback when the computer left: %v", err)
	}
	if l := h.SignIns(""); len(l) != 0 {
		t.Fatalf("SignIns after the computer left = %+v", l)
	}
	if _, err := h.CompleteSignIn(context.Background(), "o", "pc", SignInAnswer{Code: "c", State: "s2"}); !errors.Is(err, ErrNoSignIn) {
		t.Fatalf("a left computer's sign-in: %v, want ErrNoSignIn", err)
	}
}

// twoNodes are two hubs of one cluster over a MemBus.
func twoNodes(t *testing.T) (h0, h1 *Hub) {
	t.Helper()
	bus := NewMemBus()
	t.Cleanup(bus.Close)
	reg := NewMemRegistry()
	var hubs [2]*Hub
	for i := range hubs {
		h := New(Config{Registry: reg, Node: []string{"n0", "n1"}[i]})
		p, err := bus.Connect(h)
		if err != nil {
			t.Fatal(err)
		}
		h.SetPeers(p)
		hubs[i] = h
	}
	return hubs[0], hubs[1]
}

// A callback that reaches a node other than the computer's is handed to
// the computer's node, which checks and uses the state there: the
// computer gets it once, however many nodes the state comes back to, and
// its refusal comes back naming the server.
func TestSignInCompletedThroughAnotherNode(t *testing.T) {
	h0, h1 := twoNodes(t)
	pc, conn := attach(t, h1, "c")
	join(t, pc, smcp.RoleComputer, "pc", "o")
	var got []map[string]string
	conn.handler = func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		var m map[string]string
		if event != smcp.EventAuthCallback || json.Unmarshal(payload, &m) != nil {
			return json.RawMessage(`{"code":400,"message":"unexpected"}`), true
		}
		got = append(got, m)
		if m["state"] == "s2" {
			return json.RawMessage(`{"code":4007,"message":"the token lacks a scope"}`), true
		}
		return json.RawMessage(`{}`), true
	}
	for _, s := range []string{"s1", "s2"} {
		if err := pc.ReportSignIn(testSignIn(s)); err != nil {
			t.Fatal(err)
		}
	}
	if l := h0.SignIns(""); len(l) != 0 {
		t.Fatalf("node 0 keeps sign-ins of node 1's computer: %+v", l)
	}
	ctx := context.Background()
	if _, err := h0.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "unknown"}); !errors.Is(err, ErrNoSignIn) {
		t.Fatalf("an unknown state through node 0: %v, want ErrNoSignIn", err)
	}
	if _, err := h0.CompleteSignIn(ctx, "o", "nobody", SignInAnswer{Code: "c", State: "s1"}); !errors.Is(err, ErrNoSignIn) {
		t.Fatalf("a computer nowhere: %v, want ErrNoSignIn", err)
	}
	server, err := h0.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1", Iss: "https://as.example"})
	if err != nil || server != "Guarded API" {
		t.Fatalf("CompleteSignIn through node 0 = %q, %v", server, err)
	}
	// The unknown state never reached the computer.
	if len(got) != 1 || got[0]["code"] != "c" || got[0]["state"] != "s1" || got[0]["iss"] != "https://as.example" {
		t.Fatalf("the computer got %v", got)
	}
	for _, h := range []*Hub{h0, h1} {
		if _, err := h.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1"}); !errors.Is(err, ErrNoSignIn) {
			t.Fatalf("the state again on %s: %v, want ErrNoSignIn", h.Node(), err)
		}
	}
	server, err = h0.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s2"})
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeToolAuthorizationFailed || server != "Guarded API" {
		t.Fatalf("a refused sign-in through node 0 = %q, %v; want the computer's 4007", server, err)
	}
	if l := h1.SignIns(""); len(l) != 0 {
		t.Fatalf("SignIns after the callbacks = %+v", l)
	}
}

// A callback forwarded to the computer's node ends when the computer
// leaves before it answers, not at its deadline, and its state stays used.
func TestForwardedSignInEndsWhenTheComputerLeaves(t *testing.T) {
	h0, h1 := twoNodes(t)
	pc, _ := attach(t, h1, "c") // its conn never answers
	join(t, pc, smcp.RoleComputer, "pc", "o")
	if err := pc.ReportSignIn(testSignIn("s1")); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure, not a hang
	defer cancel()
	go func() {
		_, err := h0.CompleteSignIn(ctx, "o", "pc", SignInAnswer{Code: "c", State: "s1"})
		errc <- err
	}()
	testwait.Until(t, "the forwarded callback to take s1", func() bool { return len(h1.SignIns("o")) == 0 })
	pc.Close()
	if err := <-errc; err == nil || errors.Is(err, ErrNoSignIn) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forwarded callback when the computer left: %v", err)
	}
}
