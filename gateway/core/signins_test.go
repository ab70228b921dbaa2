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
