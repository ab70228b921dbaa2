package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/oauthtest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The check: an MCP server behind OAuth (go-sdk bearer middleware
// and RFC 9728 metadata) and a real authorization server (zitadel's OP)
// on loopback; `smcp computer` in an office. Without a token an agent's
// call gets 4006 whose hint names `smcp computer auth login` and holds no
// URL; `smcp computer auth login` (loopback callback, the browser driven
// by chromedp) signs in; the running computer takes the token and calls
// succeed; past the access token's expiry they still succeed (refreshed,
// no new sign-in, no new registration); `smcp computer auth logout`
// revokes and forgets it, and calls get 4006 again.
func TestComputerAuthLoginThroughGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const lifetime = 3 * time.Second
	dir := t.TempDir()
	as, mcpURL, cfg, keyFile := guardedServer(t, lifetime, dir)
	storePath := filepath.Join(dir, "state", upstreamauth.DefaultFile)
	storeFlags := []string{"--auth-store", storePath, "--auth-store-key-file", keyFile}
	t.Setenv("SMCP_API_KEY", "k-1")
	gw := startKeyedGateway(t, "k-1")

	cctx, stopComputer := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- runComputer(cctx, append([]string{"--config", cfg, "--gateway", gw.URL, "--office", "o", "--name", "pc",
			"--confirm", "auto", "--log-level", "error"}, storeFlags...))
	}()
	defer func() {
		stopComputer()
		if err := <-ran; err != nil {
			t.Errorf("smcp computer: %v", err)
		}
	}()

	_, call := guardedCaller(t, ctx, gw.URL, "k-1")
	var res *smcpv1.CallToolResult
	if !testwait.Poll(30*time.Second, func() bool { res = call(); return code(res) == smcp.CodeToolAuthorizationRequired }) {
		t.Fatalf("without a token: %v, want 4006", res)
	}
	hint := res.GetMeta().GetFields()[smcp.MetaAuthHint].GetStructValue().GetFields()["message"].GetStringValue()
	if !strings.Contains(hint, "smcp computer auth login 'Guarded API'") || strings.Contains(hint, "http") {
		t.Errorf("auth_hint %q: want the login command, and no URL", hint)
	}

	// `smcp computer auth login`, the browser driven by chromedp.
	cliLogin(t, ctx, as, append([]string{"login", "Guarded API", "--config", cfg}, storeFlags...))

	// The running computer takes the stored token.
	if !testwait.Poll(30*time.Second, func() bool { res = call(); return !res.GetIsError() }) {
		t.Fatalf("after login: %v", res)
	}
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "guarded: hi" {
		t.Fatalf("echo = %q", got)
	}
	// Past the access token's expiry: refreshed, no new sign-in.
	refreshes := as.Refreshes()
	deadline := time.Now().Add(lifetime + 500*time.Millisecond)
	testwait.Poll(lifetime+time.Second, func() bool { return time.Now().After(deadline) })
	if res = call(); res.GetIsError() {
		t.Fatalf("after the token's expiry: %v", res)
	}
	if as.Refreshes() == refreshes || as.Registrations() != 1 {
		t.Errorf("refreshes %d -> %d, registrations %d: want a refresh and one registration", refreshes, as.Refreshes(), as.Registrations())
	}

	var out strings.Builder
	if err := runComputerAuth(ctx, append([]string{"list"}, storeFlags...), &out); err != nil {
		t.Fatal(err)
	}
	st, _ := upstreamauth.OpenStore(storePath, []byte("k3y-of-the-store-0123456789abcdefghij"))
	entry, _ := st.Get("Guarded_API", mcpURL)
	if entry == nil || !strings.Contains(out.String(), "Guarded API") || !strings.Contains(out.String(), "mcp:tools") ||
		strings.Contains(out.String(), entry.Token.AccessToken) || strings.Contains(out.String(), entry.Token.RefreshToken) {
		t.Errorf("auth list:\n%s", out.String())
	}

	out.Reset()
	if err := runComputerAuth(ctx, append([]string{"logout", "Guarded API"}, storeFlags...), &out); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if !strings.Contains(out.String(), "revoked") || as.Revoked() == 0 {
		t.Errorf("logout: %q, %d revoked", out.String(), as.Revoked())
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("entries after logout: %d", len(list))
	}
	// The computer's token ends with its lifetime, its refresh is refused:
	// back to 4006.
	if !testwait.Poll(30*time.Second, func() bool { res = call(); return code(res) == smcp.CodeToolAuthorizationRequired }) {
		t.Fatalf("after logout: %v, want 4006", res)
	}
}

// cliLogin runs `smcp computer auth login` (args) with --browser none and
// signs in at the URL it prints, in headless Chromium.
func cliLogin(t *testing.T, ctx context.Context, as *oauthtest.AS, args []string) {
	t.Helper()
	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	pr, pw := io.Pipe()
	loggedIn := make(chan error, 1)
	go func() {
		err := runComputerAuth(ctx, append(args, "--browser", "none"), pw)
		_ = pw.CloseWithError(err)
		loggedIn <- err
	}()
	sc := bufio.NewScanner(pr)
	authURL := ""
	for sc.Scan() {
		if u := strings.TrimSpace(sc.Text()); strings.HasPrefix(u, as.Issuer) {
			authURL = u
			break
		}
	}
	if authURL == "" {
		t.Fatalf("login printed no authorization URL: %v", <-loggedIn)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := oauthtest.SignIn(browser, as, authURL); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if err := <-loggedIn; err != nil {
		t.Fatalf("smcp computer auth login: %v", err)
	}
}

// A computer the gateway hosts signs in the same way: its YAML entry names
// the token store and its key file (relative to the YAML), its server
// behind OAuth answers 4006 until `smcp computer auth login` with that
// store, then its calls succeed on the Connect API, with no restart.
func TestHostedComputerUsesTheTokenStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	as, _, mcpPath, keyFile := guardedServer(t, time.Hour, dir) // mcp.json and store.key, which the YAML names
	addr := freeAddr(t)
	yml := "listen: " + addr + "\ninsecure: true\ncomputers:\n" +
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
	params, _ := structpb.NewStruct(map[string]any{"text": "hi"})
	call := func() *smcpv1.CallToolResult {
		res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "Guarded_API__echo", Params: params, Timeout: 10})
		if err != nil {
			return nil
		}
		return res.GetResult()
	}
	var res *smcpv1.CallToolResult
	waitFor(t, ctx, "4006 from the hosted computer", func() bool {
		res = call()
		return code(res) == smcp.CodeToolAuthorizationRequired
	})

	cliLogin(t, ctx, as, []string{"login", "Guarded API", "--config", mcpPath,
		"--auth-store", filepath.Join(dir, "state", "auth.enc"), "--auth-store-key-file", keyFile})
	waitFor(t, ctx, "a call through the signed-in hosted computer", func() bool {
		res = call()
		return res != nil && !res.GetIsError()
	})
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "guarded: hi" {
		t.Fatalf("echo = %q", got)
	}
}

// guardedServer starts the test authorization server (access tokens of
// the given lifetime) and an MCP server behind it, and writes into dir the
// computer's configuration naming it "Guarded API" (mcp.json) and a token
// store key file (store.key).
func guardedServer(t *testing.T, lifetime time.Duration, dir string) (as *oauthtest.AS, mcpURL, cfg, keyFile string) {
	t.Helper()
	as = oauthtest.StartAS(t, lifetime)
	mcpURL = oauthtest.Protected(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(), "mcp:tools")
	cfg = filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {"Guarded API": {"type": "streamable-http", "url": %q}}}`, mcpURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(dir, "store.key")
	if err := os.WriteFile(keyFile, []byte("k3y-of-the-store-0123456789abcdefghij\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return as, mcpURL, cfg, keyFile
}

// guardedCaller joins an agent with key to office o of the gateway at url
// and returns it and a call of the guarded server's echo on computer pc (a
// transport error is an error result).
func guardedCaller(t *testing.T, ctx context.Context, url, key string) (*agent.Client, func() *smcpv1.CallToolResult) {
	t.Helper()
	ag, err := agent.Dial(ctx, sioclient.Options{URL: url, APIKey: key, Version: smcp.V04.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	args, _ := structpb.NewStruct(map[string]any{"text": "hi"})
	return ag, func() *smcpv1.CallToolResult {
		res, err := ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "Guarded_API__echo", Params: args, Timeout: 20})
		if err != nil {
			return &smcpv1.CallToolResult{IsError: new(true)}
		}
		return res
	}
}

// code is the SMCP error code in a tool call result's _meta.
func code(res *smcpv1.CallToolResult) float64 {
	return res.GetMeta().GetFields()[smcp.MetaCode].GetNumberValue()
}
