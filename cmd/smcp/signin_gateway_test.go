package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/oauthtest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Issue #37's check for a headless computer: `smcp computer
// --sign-in-via-gateway` behind a gateway, its MCP server behind OAuth
// (internal/oauthtest). An agent's call gets 4006 and no answer it sees
// holds the authorization URL or the callback; the operator key's
// ListSignIns shows the link, so does the computer's own key (its own
// sign-ins only), an agent's key is refused; the browser
// (chromedp) signs in at the authorization server, whose redirect reaches
// the gateway's /oauth/callback/o/pc and through it the computer, which
// stores the token; the agent's call then succeeds, the sign-in is gone
// from the list, and its state used again gets the 400 page.
func TestHeadlessComputerSignsInThroughGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	as, _, cfg, keyFile := guardedServer(t, time.Hour, dir)
	keys := signInKeys(t, core.Key{ID: "pc2", Key: "pc2-key", Roles: []string{smcp.RoleComputer}, Offices: []string{"o"}, Name: "pc2"})
	gw, err := gateway.Start(gateway.Config{Auth: keys}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })

	t.Setenv("SMCP_API_KEY", "pc-key")
	cctx, stopComputer := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- runComputer(cctx, []string{"--config", cfg, "--gateway", gw.URL, "--office", "o", "--name", "pc",
			"--confirm", "auto", "--log-level", "error", "--sign-in-via-gateway", gw.URL,
			"--auth-store", filepath.Join(dir, "auth.enc"), "--auth-store-key-file", keyFile})
	}()
	defer func() {
		stopComputer()
		if err := <-ran; err != nil {
			t.Errorf("smcp computer: %v", err)
		}
	}()

	ag, call := guardedCaller(t, ctx, gw.URL, "agent-key")

	op := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connecttest.Headers("x-api-key", "op-key"))
	signIn := listedSignIn(t, ctx, op, "the sign-in listed for the operator")
	if signIn.GetComputer() != "pc" || signIn.GetServer() != "Guarded API" || signIn.GetBundleId() != "Guarded_API" ||
		!strings.HasPrefix(signIn.GetUrl(), as.Issuer) || signIn.GetExpiresAt() == "" {
		t.Fatalf("sign-in listed: %v", signIn)
	}
	authURL, err := url.Parse(signIn.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	state := authURL.Query().Get("state")
	if want := gw.URL + "/oauth/callback/o/pc"; authURL.Query().Get("redirect_uri") != want || state == "" {
		t.Fatalf("authorization URL %s: want redirect_uri %s and a state", authURL, want)
	}

	// What the agent sees: 4006, and never the URL nor the state.
	res := call()
	if code(res) != smcp.CodeToolAuthorizationRequired {
		t.Fatalf("before the sign-in: %v, want 4006", res)
	}
	seen, _ := protojson.Marshal(res)
	room, err := ag.ListRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range room {
		more, _ := protojson.Marshal(s)
		seen = append(seen, more...)
	}
	for _, secret := range []string{as.Issuer, state, "oauth/callback"} {
		if strings.Contains(string(seen), secret) {
			t.Fatalf("the agent saw %q: %s", secret, seen)
		}
	}
	agentRPC := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connecttest.Headers("x-api-key", "agent-key"))
	if _, err := agentRPC.ListSignIns(ctx, &smcpv1.ListSignInsRequest{Office: "o"}); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("ListSignIns with an agent's key: %v, want PERMISSION_DENIED", err)
	}
	// The computer's own key sees its sign-in; another computer's, none.
	for key, want := range map[string]int{"pc-key": 1, "pc2-key": 0} {
		cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connecttest.Headers("x-api-key", key))
		l, err := cl.ListSignIns(ctx, &smcpv1.ListSignInsRequest{})
		if err != nil || len(l.GetSignIns()) != want || (want == 1 && l.GetSignIns()[0].GetUrl() != signIn.GetUrl()) {
			t.Fatalf("ListSignIns with %s: %v, %v; want %d", key, l, err, want)
		}
	}

	// The console, with the operator's key, shows the link in the office's
	// view; the browser follows it.
	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	var href string
	link := `#office-signins li.signin[data-computer="pc"][data-server="Guarded API"] a`
	cctx2, cancel2 := context.WithTimeout(browser, time.Minute)
	defer cancel2()
	if err := chromedp.Run(cctx2,
		chromedp.Navigate(gw.URL+"/console/#/office/o"),
		chromedp.WaitVisible("#key", chromedp.ByQuery),
		chromedp.SendKeys("#key", "op-key", chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		chromedp.WaitVisible(link, chromedp.ByQuery),
		chromedp.AttributeValue(link, "href", &href, nil, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("console: %v", err)
	}
	if href != signIn.GetUrl() {
		t.Fatalf("the console's link %q, want %q", href, signIn.GetUrl())
	}
	if err := oauthtest.SignIn(browser, as, href); err != nil {
		t.Fatalf("browser: %v", err)
	}
	waitFor(t, ctx, "the agent's call to succeed", func() bool { res = call(); return !res.GetIsError() })
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "guarded: hi" {
		t.Fatalf("echo = %q", got)
	}
	if l, err := op.ListSignIns(ctx, &smcpv1.ListSignInsRequest{}); err != nil || len(l.GetSignIns()) != 0 {
		t.Fatalf("sign-ins after the callback: %v, %v; want none", l, err)
	}

	// The state is single use.
	resp, err := http.Get(gw.URL + "/oauth/callback/o/pc?code=again&state=" + url.QueryEscape(state))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Unknown sign-in") {
		t.Fatalf("the state again: %d %s", resp.StatusCode, body)
	}
}

// A hosted computer signs in the same way when the gateway knows its
// public URL (public_url): the sign-in is listed for the operator (an
// insecure gateway's caller is one), the browser's callback reaches the
// computer in process, and calls on the Connect API succeed.
func TestHostedComputerSignsInThroughGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	as, _, _, _ := guardedServer(t, time.Hour, dir) // mcp.json and store.key, which the YAML names
	addr := freeAddr(t)
	yml := "listen: " + addr + "\ninsecure: true\npublic_url: http://" + addr + "\ncomputers:\n" +
		"  - {name: pc, office: o, config: mcp.json, confirm: auto, auth_store: state/auth.enc, auth_store_key_file: store.key}\n"
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	gctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- runGateway(gctx, []string{"--config", cfgPath, "--log-level", "error"}) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("smcp gateway: %v", err)
		}
	}()

	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, "http://"+addr)
	var signIn *smcpv1.SignIn
	waitFor(t, ctx, "the hosted computer's sign-in listed", func() bool {
		res, err := cl.ListSignIns(ctx, &smcpv1.ListSignInsRequest{})
		if len(res.GetSignIns()) == 1 {
			signIn = res.GetSignIns()[0]
		}
		return err == nil && signIn != nil
	})
	if signIn.GetOffice() != "o" || signIn.GetComputer() != "pc" || !strings.Contains(signIn.GetUrl(), url.QueryEscape("http://"+addr+"/oauth/callback/o/pc")) {
		t.Fatalf("sign-in listed: %v", signIn)
	}
	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	if err := oauthtest.SignIn(browser, as, signIn.GetUrl()); err != nil {
		t.Fatalf("browser: %v", err)
	}
	params, _ := structpb.NewStruct(map[string]any{"text": "hi"})
	var res *smcpv1.CallToolResult
	waitFor(t, ctx, "a call through the signed-in hosted computer", func() bool {
		r, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "Guarded_API__echo", Params: params, Timeout: 10})
		res = r.GetResult()
		return err == nil && !res.GetIsError()
	})
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "guarded: hi" {
		t.Fatalf("echo = %q", got)
	}
}

// TestHeadlessComputerSignsInThroughClusterGateway is
// TestHeadlessComputerSignsInThroughGateway on three nodes sharing a
// redis-server: the computer is connected to node 1, its redirect URI is
// node 0's (the cluster's public URL names any node). The operator lists
// the sign-in on node 0, from node 1's report; the browser's callback
// reaches node 0, which forwards it to node 1, where the state is checked
// and the computer signs in; the agent's call on node 2 then succeeds, and
// the state used again on node 2 gets the 400 page. No node logs the
// state.
func TestHeadlessComputerSignsInThroughClusterGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	as, _, cfg, keyFile := guardedServer(t, time.Hour, dir)
	keys := signInKeys(t)
	redisURL := systest.RedisServer(t)
	var logs testwait.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nodes := make([]*gateway.Running, 3)
	for i := range nodes {
		gw, err := gateway.Start(gateway.Config{Auth: keys, Redis: redisURL, NodeID: fmt.Sprintf("n%d", i),
			HeartbeatTTL: time.Second, Logger: logger}, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gw.Stop() })
		nodes[i] = gw
	}

	t.Setenv("SMCP_API_KEY", "pc-key")
	cctx, stopComputer := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- runComputer(cctx, []string{"--config", cfg, "--gateway", nodes[1].URL, "--office", "o", "--name", "pc",
			"--confirm", "auto", "--log-level", "error", "--sign-in-via-gateway", nodes[0].URL,
			"--auth-store", filepath.Join(dir, "auth.enc"), "--auth-store-key-file", keyFile})
	}()
	defer func() {
		stopComputer()
		if err := <-ran; err != nil {
			t.Errorf("smcp computer: %v", err)
		}
	}()

	op := smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[0].URL, connecttest.Headers("x-api-key", "op-key"))
	signIn := listedSignIn(t, ctx, op, "the sign-in of node 1's computer listed on node 0")
	if signIn.GetComputer() != "pc" || signIn.GetServer() != "Guarded API" || !strings.HasPrefix(signIn.GetUrl(), as.Issuer) {
		t.Fatalf("sign-in listed: %v", signIn)
	}
	authURL, err := url.Parse(signIn.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	state := authURL.Query().Get("state")
	if want := nodes[0].URL + "/oauth/callback/o/pc"; authURL.Query().Get("redirect_uri") != want || state == "" {
		t.Fatalf("authorization URL %s: want redirect_uri %s and a state", authURL, want)
	}
	// A computer's own key on another node sees it too; an agent's, never.
	own := smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[2].URL, connecttest.Headers("x-api-key", "pc-key"))
	if l, err := own.ListSignIns(ctx, &smcpv1.ListSignInsRequest{}); err != nil || len(l.GetSignIns()) != 1 {
		t.Fatalf("ListSignIns with the computer's key on node 2: %v, %v; want its sign-in", l, err)
	}
	agentRPC := smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[2].URL, connecttest.Headers("x-api-key", "agent-key"))
	if _, err := agentRPC.ListSignIns(ctx, &smcpv1.ListSignInsRequest{}); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("ListSignIns with an agent's key: %v, want PERMISSION_DENIED", err)
	}

	_, call := guardedCaller(t, ctx, nodes[2].URL, "agent-key")
	if res := call(); code(res) != smcp.CodeToolAuthorizationRequired {
		t.Fatalf("before the sign-in: %v, want 4006", res)
	}

	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	if err := oauthtest.SignIn(browser, as, signIn.GetUrl()); err != nil {
		t.Fatalf("browser: %v", err)
	}
	var res *smcpv1.CallToolResult
	waitFor(t, ctx, "the agent's call on node 2 to succeed", func() bool { res = call(); return !res.GetIsError() })
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "guarded: hi" {
		t.Fatalf("echo = %q", got)
	}

	// The state is single use, wherever it comes back.
	for _, n := range []*gateway.Running{nodes[2], nodes[0], nodes[1]} {
		resp, err := http.Get(n.URL + "/oauth/callback/o/pc?code=again&state=" + url.QueryEscape(state))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Unknown sign-in") {
			t.Fatalf("the state again at %s: %d %s", n.URL, resp.StatusCode, body)
		}
	}
	if strings.Contains(logs.String(), state) {
		t.Fatalf("a node logged the sign-in's state")
	}
}

// signInKeys are the sign-in tests' keys: an operator ("op-key"), office
// o's agent ("agent-key") and computer pc ("pc-key"), and extra.
func signInKeys(t *testing.T, extra ...core.Key) *core.KeyRing {
	t.Helper()
	keys, err := core.NewKeyRing(append([]core.Key{
		{ID: "op", Key: "op-key"},
		{ID: "agent", Key: "agent-key", Roles: []string{smcp.RoleAgent}, Offices: []string{"o"}},
		{ID: "pc", Key: "pc-key", Roles: []string{smcp.RoleComputer}, Offices: []string{"o"}, Name: "pc"},
	}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// listedSignIn waits until the operator client op lists one sign-in in
// office o, and returns it.
func listedSignIn(t *testing.T, ctx context.Context, op smcpv1connect.AgentServiceClient, what string) *smcpv1.SignIn {
	t.Helper()
	var signIn *smcpv1.SignIn
	waitFor(t, ctx, what, func() bool {
		res, err := op.ListSignIns(ctx, &smcpv1.ListSignInsRequest{Office: "o"})
		if err != nil {
			t.Fatalf("ListSignIns (operator): %v", err)
		}
		if len(res.GetSignIns()) == 1 {
			signIn = res.GetSignIns()[0]
		}
		return signIn != nil
	})
	return signIn
}
