package computer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/internal/oauthtest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// login signs the store in to the server at url, the browser driven by
// chromedp.
func login(t *testing.T, ctx, browser context.Context, as *oauthtest.AS, st *upstreamauth.Store, srv upstreamauth.Server) *upstreamauth.Entry {
	t.Helper()
	done := make(chan error, 1)
	e, err := upstreamauth.Login(ctx, srv, upstreamauth.LoginOptions{Store: st, Log: quietLogger(),
		OpenURL: func(_ context.Context, u string) error {
			go func() { done <- oauthtest.SignIn(browser, as, u) }()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("browser: %v", err)
	}
	return e
}

// Step-up through the computer: signed in with the server's scope, a tool
// that needs one more answers 403 insufficient_scope; the agent gets 4007
// whose hint names the login command (no URL), the store keeps the scope
// asked for, and the next sign-in asks for it: the call succeeds, the
// other tool never stopped working.
func TestOAuthStepUpThroughComputer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	as := oauthtest.StartAS(t, time.Hour)
	url := oauthtest.ProtectedTools(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(),
		[]string{"mcp:tools"}, map[string]string{"add": "mcp:write"})
	st, err := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store"), []byte("a key of the test store 0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	srv := upstreamauth.Server{ID: "Guarded_API", Name: "Guarded API", URL: url}
	login(t, ctx, browser, as, st, srv)

	h := newComputerFrom(t, computer.Protocol04, fmt.Sprintf(`{"mcpServers": {"Guarded API": {"type": "streamable-http", "url": %q}}}`, url),
		[]string{"Guarded API"}, func(o *computer.Options) { o.AuthStore = st })
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__add", "params": map[string]any{"a": 1, "b": 2}, "timeout": 20})
	meta, _ := res["meta"].(map[string]any)
	if meta[smcp.MetaCode] != float64(smcp.CodeToolAuthorizationFailed) {
		t.Fatalf("add without mcp:write: %v, want 4007", res)
	}
	hint, _ := meta[smcp.MetaAuthHint].(map[string]any)
	msg, _ := hint["message"].(string)
	if !strings.Contains(msg, "insufficient_scope") || !strings.Contains(msg, "smcp computer auth login 'Guarded API'") || strings.Contains(msg, "http") {
		t.Errorf("step-up hint %q", msg)
	}
	if e, _ := st.Get(srv.ID, url); e == nil || !slices.Equal(e.StepUp, []string{"mcp:write"}) {
		t.Fatalf("the scope asked for is not kept: %+v", e)
	}
	if res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__echo", "params": map[string]any{"text": "x"}, "timeout": 20}); res["isError"] != false {
		t.Fatalf("echo beside the refusal: %v", res)
	}

	e := login(t, ctx, browser, as, st, srv)
	if !slices.Contains(e.Scopes, "mcp:write") || !slices.Contains(e.Scopes, "mcp:tools") || len(e.StepUp) != 0 {
		t.Fatalf("second sign-in scopes %v (step-up %v)", e.Scopes, e.StepUp)
	}
	// The session's transport reads the store again after the refusal.
	if !testwait.Poll(20*time.Second, func() bool {
		res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__add", "params": map[string]any{"a": 1, "b": 2}, "timeout": 20})
		return res["isError"] == false
	}) {
		t.Fatalf("add after the step-up sign-in: %v", res)
	}
}

// A headless computer's sign-in driven by its host (as the gateway will):
// the server refusing initialize with a Bearer 401 makes the computer start
// a sign-in and hand its URL to OnSignIn, never to an agent (whose call is
// 4006 with the login hint, no URL); the host's callback hands the answer
// to CompleteSignIn; the server connects and calls succeed. An unknown or
// reused state is refused.
func TestHostDrivenSignIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	as := oauthtest.StartAS(t, time.Hour)
	url := oauthtest.Protected(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(), "mcp:tools")
	st, err := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store"), []byte("a key of the test store 0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	var pc atomic.Pointer[computer.Computer]
	completed := make(chan error, 1)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		_, err := pc.Load().CompleteSignIn(q.Get("code"), q.Get("state"), q.Get("iss"), q.Get("error"))
		completed <- err
		_, _ = io.WriteString(w, "<!doctype html><p>Signed in.")
	}))
	t.Cleanup(host.Close)
	requests := make(chan computer.SignInRequest, 8)
	h := newComputerFrom(t, computer.Protocol04, fmt.Sprintf(`{"mcpServers": {"Guarded API": {"type": "streamable-http", "url": %q}}}`, url),
		nil, func(o *computer.Options) {
			o.AuthStore = st
			o.SignInRedirect = host.URL + "/oauth/callback/o/pc"
			o.OnSignIn = func(r computer.SignInRequest) { requests <- r }
		})
	pc.Store(h.c)

	var req computer.SignInRequest
	select {
	case req = <-requests:
	case <-ctx.Done():
		t.Fatal("no sign-in request")
	}
	if req.Server != "Guarded API" || req.BundleID != "Guarded_API" || !strings.HasPrefix(req.URL, as.Issuer) || req.State == "" {
		t.Fatalf("sign-in request %+v", req)
	}
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__echo", "params": map[string]any{"text": "x"}, "timeout": 20})
	meta, _ := res["meta"].(map[string]any)
	if meta[smcp.MetaCode] != float64(smcp.CodeToolAuthorizationRequired) {
		t.Fatalf("before the sign-in: %v, want 4006", res)
	}
	if all := fmt.Sprint(res); strings.Contains(all, as.Issuer) || strings.Contains(all, req.State) || strings.Contains(all, "http") {
		t.Errorf("the agent's answer carries the sign-in: %s", all)
	}
	if _, err := h.c.CompleteSignIn("code", "no-such-state", "", ""); !errors.Is(err, computer.ErrNoSignIn) {
		t.Errorf("unknown state: %v", err)
	}

	if err := oauthtest.SignIn(testbrowser.Start(t, ctx, testbrowser.Path(t)), as, req.URL); err != nil {
		t.Fatal(err)
	}
	if err := <-completed; err != nil {
		t.Fatalf("complete: %v", err)
	}
	h.waitConnected("Guarded API")
	if !testwait.Poll(20*time.Second, func() bool {
		res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__echo", "params": map[string]any{"text": "x"}, "timeout": 20})
		return res["isError"] == false
	}) {
		t.Fatalf("after the host-driven sign-in: %v", res)
	}
	if _, err := h.c.CompleteSignIn("code", req.State, "", ""); !errors.Is(err, computer.ErrNoSignIn) {
		t.Errorf("a state used twice: %v", err)
	}
	if n := len(requests); n != 0 {
		t.Errorf("%d more sign-in requests for one server (its retries must not start new ones)", n)
	}

	// A computer closed with a sign-in waiting abandons it and returns.
	other, _ := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store"), []byte("a key of the test store 0123456789abcdef"))
	h2 := newComputerFrom(t, computer.Protocol04, fmt.Sprintf(`{"mcpServers": {"Guarded API": {"type": "streamable-http", "url": %q}}}`, url),
		nil, func(o *computer.Options) {
			o.AuthStore = other
			o.SignInRedirect = host.URL + "/oauth/callback/o/pc2"
			o.OnSignIn = func(r computer.SignInRequest) { requests <- r }
		})
	select {
	case <-requests:
	case <-ctx.Done():
		t.Fatal("no sign-in request from the second computer")
	}
	h2.c.Close()
}
