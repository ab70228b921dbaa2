package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
)

// callerKey is a key that is no operator's: an agent of office lab, with a
// quota of one call per second.
const callerKey = "caller-key-0123"

// rpcCall makes a Connect JSON call of the AgentService and returns the
// HTTP status.
func rpcCall(t *testing.T, url, key, method, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/smcp.v1.AgentService/"+method, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

// TestConsoleOperatorViewsInBrowser drives the operator's views in headless
// chromium: the recent audit records filtered by outcome (a quota's
// refusal of another principal), kept across a reload by the view's URL;
// who is connected (the lab computer with its principal); the open
// office's seat and connections, the console's own seat and watch
// included, again kept across a reload, as is a computer's tab; a
// skill's files; the quotas' state; the figures.
// A key that is no operator's sees no link to these views, and its call
// of one (the view's URL typed in) is refused with the rule named.
func TestConsoleOperatorViewsInBrowser(t *testing.T) {
	chrome := testbrowser.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys, err := core.NewKeyRing(core.Key{ID: "console", Key: apiKey},
		core.Key{ID: "caller", Key: callerKey, Roles: []string{"agent"}, Offices: []string{labOffice}})
	if err != nil {
		t.Fatal(err)
	}
	quotas := &quota.Table{Keys: map[string]*quota.Limits{"caller": {Bound: quota.Bound{CallsPerSecond: 0.01, Burst: 1}}}}
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Metrics: true, Quotas: quotas,
		Audit: gateway.AuditConfig{Sinks: []audit.Sink{audit.NewJSONLines(io.Discard)}}, Logger: slog.New(slog.DiscardHandler)})
	startLabComputer(t, gw.URL)
	// The caller's second call within its burst of one is refused (429),
	// and recorded so.
	call := fmt.Sprintf(`{"office_id":%q,"computer":%q,"tool_name":%q,"params":{}}`, labOffice, labPC, labTool)
	if got := rpcCall(t, gw.URL, callerKey, "CallTool", call); got != http.StatusOK {
		t.Fatalf("caller's first call: HTTP %d", got)
	}
	if got := rpcCall(t, gw.URL, callerKey, "CallTool", call); got != http.StatusTooManyRequests {
		t.Fatalf("caller's second call: HTTP %d, want 429", got)
	}

	browser := testbrowser.Start(t, ctx, chrome)
	step := func(name string, actions ...chromedp.Action) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 50*time.Second)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var text string
			_ = chromedp.Run(browser, chromedp.Evaluate(`document.querySelector("#detail")?.innerText ?? document.body.innerText`, &text))
			t.Fatalf("%s: %v\ndetail pane: %.6000s", name, err, text)
		}
	}
	waitText := func(sel, want string) chromedp.Action {
		return waitJS(fmt.Sprintf(`document.querySelector(%q)?.textContent.includes(%q)`, sel, want))
	}
	signIn := func(key string) {
		step("sign in with "+key,
			chromedp.WaitVisible("#key", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#key").value = ""`, nil),
			chromedp.SendKeys("#key", key, chromedp.ByQuery),
			chromedp.Click("#sign-in", chromedp.ByQuery),
			waitText(`.office[data-office="lab"]`, labPC))
	}
	var hash string
	location := chromedp.Evaluate(`location.hash`, &hash)

	step("open the console", chromedp.Navigate(gw.URL+"/console/"))
	signIn(apiKey)

	// The audit records: the caller's refusal among them, then alone
	// once filtered by its outcome; the filter is in the URL.
	step("audit",
		click("#ops-link-audit"),
		waitText(`#audit-table tr.audit-record[data-principal="caller"][data-outcome="ok"]`, "render"),
		waitText(`#audit-table tr.audit-record[data-principal="caller"][data-outcome="429"]`, "quota_calls_per_second"),
		chromedp.SetValue("#audit-outcome", "429", chromedp.ByQuery),
		click("#audit-filter"),
		waitJS(`document.querySelectorAll("#audit-table tr.audit-record").length === 1 && document.querySelector("#audit-table tr.audit-record").dataset.outcome === "429"`),
		location)
	if hash != "#/ops/audit?outcome=429" {
		t.Fatalf("filtered audit view at %q", hash)
	}
	step("audit after a reload",
		chromedp.Reload(),
		waitJS(`document.querySelector("#audit-outcome")?.value === "429"`),
		waitJS(`document.querySelectorAll("#audit-table tr.audit-record").length === 1 && document.querySelector("#audit-table tr.audit-record").dataset.principal === "caller"`),
		location)
	if hash != "#/ops/audit?outcome=429" {
		t.Fatalf("after a reload: %q", hash)
	}

	step("audit at 390 px", chromedp.EmulateViewport(390, 844))
	checkFits(t, browser, "the audit view at 390 px")
	step("back to 1400 px", chromedp.EmulateViewport(1400, 1000))

	// Who is connected: the lab computer, with its principal.
	step("connections",
		click("#ops-link-connections"),
		waitText(`#conn-table tr.conn[data-kind="computer"][data-office="lab"][data-principal="console"]`, labPC),
		chromedp.EmulateViewport(390, 844))
	checkFits(t, browser, "the connections view at 390 px")
	step("back to 1400 px", chromedp.EmulateViewport(1400, 1000))

	// The office: who holds its seat (the console's own watch stream, as
	// agent of the console) and who watches it; the view's URL survives
	// a reload.
	officeSeat := func() chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			return chromedp.Run(ctx,
				waitText(`#office-connections tr.conn[data-kind="seat"][data-front="console"][data-principal="console"]`, "console stream"),
				waitText(`#office-connections tr.conn[data-kind="watch"][data-principal="console"]`, "watching"),
				waitText(`#office-connections tr.conn[data-kind="computer"]`, labPC))
		})
	}
	step("office seat", click(`.office[data-office="lab"] h3 a`), officeSeat(), location)
	if hash != "#/office/lab" {
		t.Fatalf("office view at %q", hash)
	}
	step("office after a reload", chromedp.Reload(), officeSeat())
	step("computer tab URL", click(`.computer[data-computer="lab-pc"]`), chromedp.WaitVisible("#tab-skills", chromedp.ByQuery),
		chromedp.Click("#tab-skills", chromedp.ByQuery), location)
	if hash != "#/office/lab/lab-pc/skills" {
		t.Fatalf("skills tab at %q", hash)
	}
	step("tab after a reload", chromedp.Reload(), waitText(`.skill[data-skill="pdf-tools"]`, "pdf-tools"),
		waitJS(`document.querySelector("#tab-skills")?.classList.contains("active")`))
	// A skill's files: those its SKILL.md names (a user skill), those its
	// MCP server serves (an MCP skill); a file listed opens.
	step("skill files",
		click(`.skill[data-skill="pdf-tools"]`),
		waitJS(`[...document.querySelectorAll("#skill-files .skill-file")].map((a) => a.dataset.relPath).join() === "data.bin,notes.txt"`),
		click(`#skill-files .skill-file[data-rel-path="data.bin"]`),
		waitText(`.file-head[data-rel-path="data.bin"]`, "blob"),
		click(`.skill[data-skill="mcp:docs:search"]`),
		waitJS(`[...document.querySelectorAll("#skill-files .skill-file")].map((a) => a.dataset.relPath).join() === "SKILL.md,ref/syntax.md"`),
		waitText("#skill-files", "its MCP server's resources"))

	// The quotas: the caller's bound, its one token spent.
	step("quotas",
		click("#ops-link-quotas"),
		waitText(`#quota-table tr.quota[data-principal="caller"]`, "0.01/s, burst 1"),
		waitText(`#quota-table tr.quota[data-principal="caller"] .tokens`, "0 of 1"),
		waitText("#quota-rates", "counted by this gateway"))

	// The figures, from GetFigures: the calls made so far are counted.
	step("figures", waitJS(`Number(document.querySelector("#metrics")?.dataset.calls ?? 0) > 0 && document.querySelector("#metrics").dataset.nodes === "1"`))

	// A key that is no operator's: no link to the views, and the view's
	// URL typed in gets the gateway's refusal.
	step("sign out", click("#sign-out"))
	signIn(callerKey)
	step("no operator views",
		waitJS(`document.querySelector("#ops-nav").hidden`),
		chromedp.Evaluate(`location.hash = "#/ops/audit"; true`, nil),
		waitText("#ops-audit .error", "only an operator key"),
		waitText("#metrics-off", "for operator keys"))
}
