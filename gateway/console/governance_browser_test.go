package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/policy"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// The console obeys the rules of examples/governance as every front end
// does: signed in with echo-only-key it lists only echo of a computer
// hosting server-everything, and its call of another tool (the console's
// own Connect request, as its forms send) is refused naming the rule set;
// with full-key it lists every tool.
func TestConsoleGovernanceInBrowser(t *testing.T) {
	chrome := testbrowser.Path(t)
	entry := nodetest.EverythingServer(t, filepath.Join("..", "..", "test", "npm-mcp"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const keysFile = "../../examples/governance/keys.yaml"
	rules, err := policy.LoadFile(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := core.LoadKeyRing(keysFile)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Core: core.Config{Guard: policy.NewEngine(rules)}, Logger: quiet})
	systest.Computer(t, ctx, "pc", map[string]*config.Server{
		"everything": systest.Server(t, "everything", map[string]any{"command": "node", "args": []any{entry, "stdio"}}),
	}, computer.Gateway{URL: gw.URL, Office: "gov", APIKey: "full-key", Dial: sioclient.Options{Logger: quiet}}, quiet)

	browser := testbrowser.Start(t, ctx, chrome)
	step := func(name string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 50*time.Second)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var html string
			_ = chromedp.Run(browser, chromedp.OuterHTML("body", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v\npage: %.6000s", name, err, html)
		}
	}
	tool := func(name string) string { return fmt.Sprintf(`.tool[data-tool=%q]`, name) }
	signIn := func(key string) {
		step("sign in with "+key,
			chromedp.WaitVisible("#key", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#key").value = ""`, nil),
			chromedp.SendKeys("#key", key, chromedp.ByQuery),
			chromedp.Click("#sign-in", chromedp.ByQuery),
			click(`#start-offices .card[data-office="gov"] .chip[data-computer="pc"]`),
			chromedp.WaitVisible(tool("echo"), chromedp.ByQuery),
		)
	}

	step("open the console", chromedp.Navigate(gw.URL+"/console/"))
	signIn("echo-only-key")
	var n int
	step("only echo listed", chromedp.Evaluate(`document.querySelectorAll(".tool[data-tool]").length`, &n))
	if n != 1 {
		t.Fatalf("echo-only-key: the console lists %d tools, want only echo", n)
	}
	// The console's call, as its tool forms make it (Connect JSON with the
	// key in x-api-key and x-smcp-front: console).
	var refusal string
	step("call get-sum", chromedp.Evaluate(`(async () => {
	  const r = await fetch("/smcp.v1.AgentService/CallTool", {method: "POST",
	    headers: {"Content-Type": "application/json", "Connect-Protocol-Version": "1", "x-api-key": "echo-only-key", "x-smcp-front": "console"},
	    body: JSON.stringify({office_id: "gov", computer: "pc", tool_name: "get-sum", params: {a: 1, b: 2}})});
	  return r.status + " " + (await r.json()).message;
	})()`, &refusal, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if want := `403 tool "get-sum" of computer "pc": not allowed by rule sets "echo-only"`; refusal != want {
		t.Fatalf("console call: %q, want %q", refusal, want)
	}

	step("sign out", click("#sign-out"))
	signIn("full-key")
	step("every tool listed", chromedp.WaitVisible(tool("get-sum"), chromedp.ByQuery))
}
