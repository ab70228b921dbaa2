package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/png"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

const (
	apiKey   = "console-test-key"
	wrongKey = "not-the-key-0123"
	office   = "demo"
	pcName   = "demo-pc"
	docsHost = "com.example.docs"
	// The quarterly report of examples/docs and the page with its table.
	reportRef = "quarterly-report-81fbae"
)

// browserPath finds Debian's chromium (or another Chrome). Under CI a missing
// browser fails the test: CI installs it (.ci/run).
func browserPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: the console's browser test needs it (apt-get install chromium; .ci/run does)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); CI=true makes this a failure")
	return ""
}

// system is a gateway, the document server over examples/docs and a
// computer hosting it in office "demo": the demo, in this process.
type system struct {
	gw *gateway.Running
}

func startSystem(t *testing.T, ctx context.Context) *system {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	docsURL := systest.Docs(t, ctx, docserver.Options{Root: filepath.Join("..", "..", "examples", "docs"), Host: docsHost}, false)
	keys, err := core.NewKeyRing(core.Key{ID: "console", Key: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Metrics: true, Logger: quiet})
	systest.Computer(t, ctx, pcName, map[string]*config.Server{"docs": systest.Server(t, "docs", map[string]any{"url": docsURL})},
		computer.Gateway{URL: gw.URL, Office: office, APIKey: apiKey, Dial: sioclient.Options{Logger: quiet}}, quiet)
	return &system{gw: gw}
}

// request is one HTTP request the browser sent, as the DevTools protocol
// reports it.
type request struct {
	url     string
	headers map[string]string // lower-case names
	body    string
}

type requestLog struct {
	mu   sync.Mutex
	reqs []request
}

func (l *requestLog) listen(ev any) {
	e, ok := ev.(*network.EventRequestWillBeSent)
	if !ok {
		return
	}
	r := request{url: e.Request.URL, headers: map[string]string{}}
	for k, v := range e.Request.Headers {
		r.headers[strings.ToLower(k)] = fmt.Sprint(v)
	}
	for _, entry := range e.Request.PostDataEntries {
		r.body += entry.Bytes // base64, as the protocol gives it
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
}

func (l *requestLog) all() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.reqs...)
}

// TestConsoleInBrowser drives the console in headless chromium against an
// in-process gateway, computer and document server over examples/docs: a
// wrong key is refused with a clear message; the right key shows office
// "demo" and its computer; search_documents is called from the form made
// from its schema and its hits are shown; the Finder filters, opens the
// quarterly report, its Revenue page, and shows the page's table as a table;
// the desktop lists the status window; the gateway's figures are charted.
// An office held by another agent is reported as such, and signing in
// under that agent's name shares the office. Every API call
// carried the key in its x-api-key header, and no URL ever held it. Last,
// the page's own modules are probed: a form from a schema with every kind
// of input, and the Prometheus parser.
// Screenshots go to a temporary folder (SMCP_CONSOLE_SCREENSHOT=path also
// writes the README's).
func TestConsoleInBrowser(t *testing.T) {
	chrome := browserPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sys := startSystem(t, ctx)
	shots := t.TempDir()
	profile := browserProfile(t)

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1000),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	// The browser starts with the first Run, and lives as long as that
	// Run's context: this one, not a step's.
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("starting %s: %v", chrome, err)
	}
	var log requestLog
	chromedp.ListenTarget(browser, log.listen)

	step := func(name string, actions ...chromedp.Action) {
		t.Helper()
		// Each step has its own deadline, so that a stuck one leaves time
		// for the screenshot and the page dump below.
		sctx, cancel := context.WithTimeout(browser, 25*time.Second)
		defer cancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			shot(t, browser, filepath.Join(shots, "failed.png"))
			var html string
			_ = chromedp.Run(browser, chromedp.OuterHTML("body", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v (screenshot in %s)\npage: %.8000s", name, err, shots, html)
		}
	}
	// waitText waits until the element sel shows want.
	waitText := func(sel, want string) chromedp.Action {
		var ok bool
		return chromedp.Poll(fmt.Sprintf(`document.querySelector(%q)?.textContent.includes(%q)`, sel, want), &ok,
			chromedp.WithPollingTimeout(20*time.Second))
	}

	// A wrong key: a clear message, and nothing stored.
	var msg string
	step("wrong key",
		network.Enable(),
		chromedp.Navigate(sys.gw.URL+"/console/"),
		chromedp.WaitVisible("#key", chromedp.ByQuery),
		chromedp.SendKeys("#key", wrongKey, chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		chromedp.WaitVisible("#login-error", chromedp.ByQuery),
		chromedp.Text("#login-error", &msg, chromedp.ByQuery),
	)
	if !strings.Contains(msg, "The gateway refused this API key (invalid API key)") {
		t.Fatalf("wrong key: message %q", msg)
	}
	shot(t, browser, filepath.Join(shots, "wrong-key.png"))

	// The right key: office demo with its computer, live.
	step("sign in",
		chromedp.Evaluate(`document.querySelector("#key").value = ""`, nil),
		chromedp.SendKeys("#key", apiKey, chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		chromedp.WaitVisible(`.office[data-office="demo"] .computer[data-computer="demo-pc"]`, chromedp.ByQuery),
		click(`.computer[data-computer="demo-pc"]`),
		waitText("#live", "live"),
	)

	// search_documents from the form generated from its schema.
	step("search_documents",
		chromedp.WaitVisible(`.tool[data-tool="search_documents"]`, chromedp.ByQuery),
		click(`.tool[data-tool="search_documents"]`),
		chromedp.WaitVisible(`[data-param="query"]`, chromedp.ByQuery),
		chromedp.SendKeys(`[data-param="query"]`, "east", chromedp.ByQuery),
		chromedp.SendKeys(`[data-param="limit"]`, "3", chromedp.ByQuery),
		// file_type is an enum: its options are the schema's values.
		chromedp.SetValue(`[data-param="file_type"]`, "2", chromedp.ByQuery), // "md"
		chromedp.Click("#call-tool", chromedp.ByQuery),
		waitText("#tool-result", `2 of 2 hits for "east" in md documents`),
		waitText("#tool-result .structured", "Q3 2026 Operations Report"),
	)
	shot(t, browser, filepath.Join(shots, "search.png"))

	// The desktop: the document server's status window.
	step("desktop",
		chromedp.Click("#tab-desktop", chromedp.ByQuery),
		waitText(".window", "window://"+docsHost+"/status"),
	)

	// The Finder: filter, open the report, its Revenue page, its table.
	step("finder",
		chromedp.Click("#tab-finder", chromedp.ByQuery),
		waitText("#finder-range", "of 7"),
		chromedp.SendKeys("#finder-keywords", "quarterly", chromedp.ByQuery),
		chromedp.Click("#finder-search", chromedp.ByQuery),
		waitText("#finder-range", "1–1 of 1"),
		click(`.doc[data-doc-ref="`+reportRef+`"] a`),
		waitText(".document", "Revenue"),
		click(`.page-link[data-page="1"]`),
		waitText("table.dpe-table", "East"),
		chromedp.ScrollIntoView("table.dpe-table", chromedp.ByQuery),
	)
	var cells []string
	step("table cells", chromedp.Evaluate(
		`[...document.querySelectorAll("table.dpe-table tr")].map(r => [...r.cells].map(c => c.innerText).join("|"))`, &cells))
	wantRows := []string{"Region|Q2|Q3|Change", "North|1,250|1,380|+10.4%", "South|980|1,040|+6.1%", "East|1,120|1,310|+17.0%", "West|870|905|+4.0%"}
	if strings.Join(cells, "\n") != strings.Join(wantRows, "\n") {
		t.Fatalf("Revenue table:\n%s\nwant\n%s", strings.Join(cells, "\n"), strings.Join(wantRows, "\n"))
	}

	// The gateway's figures: the console's own calls are counted.
	var counted bool
	step("metrics", chromedp.Poll(
		`parseInt(document.querySelector("#metric-calls .small")?.innerText ?? "0") > 0 && document.querySelectorAll("#metrics svg.spark polyline").length > 0`,
		&counted, chromedp.WithPollingTimeout(20*time.Second)))
	dst := os.Getenv("SMCP_CONSOLE_SCREENSHOT")
	if dst != "" {
		// For the README: a few more samples, so the charts show a line.
		step("charts", chromedp.Poll(
			`(document.querySelector("#metric-calls polyline")?.getAttribute("points") ?? "").split(" ").length >= 5`,
			&counted, chromedp.WithPollingTimeout(20*time.Second)))
	}
	path := filepath.Join(shots, "table.png")
	shot(t, browser, path)
	if dst != "" {
		b, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	// The key is kept for this tab only.
	var stored struct{ Session, Local string }
	step("storage", chromedp.Evaluate(
		`({Session: sessionStorage.getItem("smcp.console.key") ?? "", Local: JSON.stringify(localStorage)})`, &stored))
	if stored.Session != apiKey || strings.Contains(stored.Local, apiKey) {
		t.Fatalf("storage: session %q, local %q", stored.Session, stored.Local)
	}

	// Another agent takes the office while the console is signed out: the
	// console says so instead of failing vaguely.
	step("sign out", chromedp.Click("#sign-out", chromedp.ByQuery), chromedp.WaitVisible("#key", chromedp.ByQuery))
	other, err := joinOtherAgent(ctx, sys.gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	step("office held",
		chromedp.SendKeys("#key", apiKey, chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		waitText(`.office[data-office="demo"]`, "other-agent"),
		click(`.computer[data-computer="demo-pc"]`),
		waitText("#tab-body", `Office "demo" already has an agent: an office holds one agent at a time`),
	)
	shot(t, browser, filepath.Join(shots, "held.png"))

	// Signed in under that agent's name, the console shares the office.
	step("shared office",
		chromedp.Click("#sign-out", chromedp.ByQuery),
		chromedp.WaitVisible("#key", chromedp.ByQuery),
		chromedp.SendKeys("#key", apiKey, chromedp.ByQuery),
		chromedp.SendKeys("#agent", "other-agent", chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		waitText("#whoami", `acting as agent "other-agent"`),
		click(`.computer[data-computer="demo-pc"]`),
		chromedp.WaitVisible(`.tool[data-tool="search_documents"]`, chromedp.ByQuery),
	)

	checkRequests(t, log.all())
	checkModules(t, browser)
}

// click clicks the first element matching sel in one step inside the page,
// once there is one. The console re-renders its lists live (WatchOffice): a
// node found by one DevTools call (chromedp.Click queries, then clicks) can
// be replaced before the next ("Could not find node with given id").
func click(sel string) chromedp.Action {
	return chromedp.Poll(fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, sel),
		nil, chromedp.WithPollingInterval(50*time.Millisecond))
}

// formProbe builds a form from a schema with every kind of input, fills it
// as a user would and reads the arguments it makes, then its refusals;
// renders a tool result with text, images and structured content; and
// parses Prometheus text as the charts do.
const formProbe = `(async () => {
  const { buildForm } = await import("./form.js");
  const { parseProm } = await import("./metrics.js");
  const schema = { type: "object", required: ["s", "n"], properties: {
    s: { type: "string" }, n: { type: "number" }, i: { type: ["null", "integer"] }, b: { type: "boolean" },
    e: { enum: ["x", 2, true] }, a: { type: "array", items: { type: "string" } }, o: { type: "object" },
    unset: { type: "string" }, timeout: { type: "integer" } } };
  let values, callTimeout;
  const form = buildForm(schema, (v, t) => { values = v; callTimeout = t; });
  document.body.append(form);
  const set = (n, v) => { form.querySelector('[data-param="' + n + '"]').value = v; };
  const attempt = () => { try { return JSON.stringify(values()); } catch (e) { return "error: " + e.message; } };
  set("s", "hi"); set("n", "1.5"); set("i", "7"); set("b", "false"); set("e", "1");
  set("a", '["p", "q"]'); set("o", '{"k": {"z": null}}');
  // A tool input named timeout is the tool's; the call's deadline is its own field.
  set("timeout", "5"); form.querySelector("input:not([data-param])").value = "9";
  form.requestSubmit();
  const out = [attempt(), "call timeout " + callTimeout];
  set("i", "7.5"); out.push(attempt());
  set("i", ""); set("o", "{bad"); out.push(attempt().replace(/ \(.*/, ""));
  set("o", ""); set("s", ""); out.push(attempt());
  form.remove();
  const { renderResult } = await import("./result.js");
  let opened = "";
  const node = renderResult({ isError: true, content: [{ type: "text", text: "<b>hi</b>" },
    { type: "image", mimeType: "image/png", data: "PNG_BASE64" }, { type: "image", mimeType: "text/html", data: "PGI+" }],
    structuredContent: { hits: [{ uri: "dpe://h/d" }] } }, (u) => { opened = u; });
  document.body.append(node);
  const img = node.querySelector("img");
  await img.decode();
  node.querySelector("a.j-uri").click();
  out.push([node.classList.contains("is-error"), node.querySelector("pre").textContent, node.querySelector("b") === null,
    img.naturalWidth + "x" + img.naturalHeight, node.querySelectorAll("img").length, opened].join(" "));
  node.remove();
  const { Client } = await import("./api.js");
  out.push(JSON.stringify(new Client("k", "a", "x-token").headers("application/json")));
  const m = parseProm('# HELP x\nsmcp_calls_total{front="rpc",event="a b",outcome="ok"} 3\nsmcp_calls_total{front="sio",event="e",outcome="404"} 2\nsmcp_calls_in_flight 1.5\n');
  out.push(m.get("smcp_calls_total").map((x) => x.labels.event + "=" + x.value).join(",") + " " + m.get("smcp_calls_in_flight")[0].value);
  return out;
})()`

func checkModules(t *testing.T, ctx context.Context) {
	t.Helper()
	var got []string
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	probe := strings.Replace(formProbe, "PNG_BASE64", base64.StdEncoding.EncodeToString(img.Bytes()), 1)
	err := chromedp.Run(ctx, chromedp.Evaluate(probe, &got, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	if err != nil {
		t.Fatalf("form probe: %v", err)
	}
	want := []string{
		`{"s":"hi","n":1.5,"i":7,"b":false,"e":2,"a":["p","q"],"o":{"k":{"z":null}},"timeout":5}`,
		"call timeout 9",
		"error: i must be an integer",
		"error: o is not valid JSON",
		"error: s is required",
		// An error result; text stays text; the PNG decodes; an image that
		// claims to be HTML is not an <img>; dpe:// links call back.
		"true <b>hi</b> true 3x2 1 dpe://h/d",
		// A gateway with another key header (config.json) gets the key there.
		`{"Content-Type":"application/json","Connect-Protocol-Version":"1","x-token":"k","x-smcp-agent":"a"}`,
		"a b=3,e=2 1.5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("form probe:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkRequests: every call of the AgentService carried the right or the
// wrong key in x-api-key; no request carried a key in its URL (nor
// anywhere but that header).
func checkRequests(t *testing.T, reqs []request) {
	t.Helper()
	calls := map[string]int{}
	for _, r := range reqs {
		for _, k := range []string{apiKey, wrongKey} {
			if strings.Contains(r.url, k) || strings.Contains(r.body, k) {
				t.Errorf("a key outside the header: %s", r.url)
			}
			for name, v := range r.headers {
				if name != "x-api-key" && strings.Contains(v, k) {
					t.Errorf("a key in header %s of %s", name, r.url)
				}
			}
		}
		i := strings.Index(r.url, "/smcp.v1.AgentService/")
		if i < 0 {
			continue
		}
		method := r.url[i+len("/smcp.v1.AgentService/"):]
		calls[method]++
		if k := r.headers["x-api-key"]; k != apiKey && k != wrongKey {
			t.Errorf("%s without the key in x-api-key (headers %v)", method, r.headers)
		}
		if a, ok := r.headers["x-smcp-agent"]; ok && a != "other-agent" {
			t.Errorf("%s as agent %q", method, a)
		} else if ok {
			calls["as other-agent"]++
		}
	}
	for _, m := range []string{"ListOffices", "WatchOffice", "GetTools", "CallTool", "GetDesktop", "GetFinder", "ReadResource", "as other-agent"} {
		if calls[m] == 0 {
			t.Errorf("the browser never called %s (calls: %v)", m, calls)
		}
	}
}

func joinOtherAgent(ctx context.Context, url string) (*agent.Client, error) {
	a, err := agent.Dial(ctx, sioclient.Options{URL: url, APIKey: apiKey, Logger: slog.New(slog.DiscardHandler)}, "other-agent")
	if err != nil {
		return nil, fmt.Errorf("dial other agent: %w", err)
	}
	// The console's watch stream may still hold the office for a moment
	// after sign-out (the gateway sees the cancel): retry the join.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := a.Join(ctx, office)
		if err == nil {
			return a, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			a.Close()
			return nil, errors.Join(fmt.Errorf("other agent join: %w", err), ctx.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func shot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	var b []byte
	if err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&b)); err != nil {
		t.Logf("screenshot %s: %v", path, err)
		return
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", path, err)
	}
}

// browserProfile is a fresh user-data-dir. Chromium's helper processes may
// still write to it for a moment after the browser is stopped, so its
// removal is retried rather than left to t.TempDir.
func browserProfile(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "smcp-console-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if err = os.RemoveAll(dir); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("removing the browser profile %s: %v", dir, err)
	})
	return dir
}
