package computer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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
