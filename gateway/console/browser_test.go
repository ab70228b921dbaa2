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
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
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
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
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

// system is a gateway, the document server over a copy of examples/docs
// (watched: a file added there reaches the console as notify:update_finder)
// and a computer hosting it in office "demo": the demo, in this process;
// beside it a fake 0.4 computer in office "lab".
type system struct {
	gw   *gateway.Running
	docs string // the document server's folder
	lab  *labComputer
}

func startSystem(t *testing.T, ctx context.Context) *system {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	docs := t.TempDir()
	if err := os.CopyFS(docs, os.DirFS(filepath.Join("..", "..", "examples", "docs"))); err != nil {
		t.Fatal(err)
	}
	docsURL := systest.Docs(t, ctx, docserver.Options{Root: docs, Host: docsHost}, true)
	keys, err := core.NewKeyRing(core.Key{ID: "console", Key: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Metrics: true, Logger: quiet})
	systest.Computer(t, ctx, pcName, map[string]*config.Server{"docs": systest.Server(t, "docs", map[string]any{"url": docsURL})},
		computer.Gateway{URL: gw.URL, Office: office, APIKey: apiKey, Dial: sioclient.Options{Logger: quiet}}, quiet)
	return &system{gw: gw, docs: docs, lab: startLabComputer(t, gw.URL)}
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
// in-process gateway, computer and document server over a copy of
// examples/docs, and a fake 0.4 computer: a wrong key is refused with a
// clear message; the right key opens on a start page listing the offices
// with their versions; search_documents is called from the form made from
// its schema and its hits are shown; the Finder filters, opens the
// quarterly report, its Revenue page, and shows the page's table as a
// table; a live update (a document added) while that page is read keeps the
// page and the tool result, and refreshes the list in place; every time is
// in one format; at 1400 and 390 px wide nothing sticks out of the window;
// the desktop lists the status window; the gateway's figures are charted.
// In the 0.4 office the Skills tab lists and reads skills and downloads a
// skill file inline and one through ReadBlob, and a tool result's blob is
// downloaded byte for byte; live updates of the tools and skills keep what
// is open. An office held by another agent is reported as such, and signing
// in under that agent's name shares the office. Every API call carried the
// key in its x-api-key header, and no URL ever held it. Last, the page's own
// modules are probed: a form from a schema with every kind of input, the
// result view, the time format and the reading of the figures.
// Screenshots go to a temporary folder (SMCP_CONSOLE_SCREENSHOT=path also
// writes the README's; SMCP_CONSOLE_DOCS=dir writes console-1400.png,
// console-390.png and the others there).
func TestConsoleInBrowser(t *testing.T) {
	chrome := testbrowser.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sys := startSystem(t, ctx)
	shots := t.TempDir()
	downloads := t.TempDir()
	browser := testbrowser.Start(t, ctx, chrome)
	var log requestLog
	chromedp.ListenTarget(browser, log.listen)

	step := func(name string, actions ...chromedp.Action) {
		t.Helper()
		// Each step has its own deadline, so that a stuck one leaves time
		// for the screenshot and the page dump below.
		sctx, cancel := context.WithTimeout(browser, 50*time.Second)
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
		return waitJS(fmt.Sprintf(`document.querySelector(%q)?.textContent.includes(%q)`, sel, want))
	}
	// Times are shown in the page's zone: one set here, so that the probe
	// of the format knows what to expect.
	step("browser settings",
		emulation.SetTimezoneOverride("Asia/Tokyo"),
		cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(downloads),
		chromedp.EmulateViewport(1400, 1000),
	)

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

	// The right key: before an office is chosen, the start page says what to
	// do and lists the offices with their versions.
	step("sign in",
		chromedp.Evaluate(`document.querySelector("#key").value = ""`, nil),
		chromedp.SendKeys("#key", apiKey, chromedp.ByQuery),
		chromedp.Click("#sign-in", chromedp.ByQuery),
		waitText("#start", "Start here"),
		waitText(`#start-offices .card[data-office="demo"]`, "SMCP 0.2"),
		waitText(`#start-offices .card[data-office="demo"] .chip[data-computer="demo-pc"]`, "demo-pc"),
		waitText(`#start-offices .card[data-office="lab"]`, "SMCP 0.4"),
		waitText(`.office[data-office="lab"] .version`, "SMCP 0.4"),
		waitText(`.office[data-office="demo"] .version`, "SMCP 0.2"),
	)
	docShot(t, browser, shots, "console-start-1400.png", false)
	checkFits(t, browser, "the start page at 1400 px")
	step("start page at 390 px", chromedp.EmulateViewport(390, 844))
	checkFits(t, browser, "the start page at 390 px")
	docShot(t, browser, shots, "console-start-390.png", true)
	step("back to 1400 px", chromedp.EmulateViewport(1400, 1000))

	// The computer from the start page: its office is live.
	step("open demo-pc",
		click(`#start-offices .card[data-office="demo"] .chip[data-computer="demo-pc"]`),
		waitText("#live", "live"),
		waitText("#office-version", "SMCP 0.2"),
		// Skills are a 0.3+ feature: a 0.2 office has no such tab.
		waitJS(`document.querySelector("#tab-tools") !== null && document.querySelector("#tab-skills") === null`),
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

	// A live update while the page is read: a document is added to the
	// document server's folder, which the computer announces
	// (notify:update_finder). The page being read stays, the very same
	// nodes, as does the tool result on the hidden Tools tab; the documents
	// list is refreshed in place and the reader says the documents changed.
	step("mark what is read", chromedp.Evaluate(
		`window.keptTable = document.querySelector("table.dpe-table"); window.keptResult = document.querySelector("#tool-result .structured"); true`, nil))
	if err := os.WriteFile(filepath.Join(sys.docs, "staff-notes.md"), []byte("# Staff notes\n\nThe new quarterly planning starts in October.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("live update while reading",
		waitText("#events", "notify:update_finder"),
		waitJS(`Number(document.querySelector("#finder-results")?.dataset.refreshed ?? 0) >= 1`),
		waitText("#reader-stale", "The computer's documents changed since this was read"),
	)
	var kept struct{ Table, Result, Page bool }
	step("page kept", chromedp.Evaluate(`({
		Table: window.keptTable.isConnected && document.querySelector("table.dpe-table") === window.keptTable,
		Result: window.keptResult.isConnected && document.querySelector("#tool-result .structured") === window.keptResult,
		Page: document.querySelector("#reader .page[data-page='1'] table.dpe-table") !== null })`, &kept))
	if !kept.Table || !kept.Result || !kept.Page {
		t.Fatalf("after a live update: the page read kept %t, its table kept %t, the tool result kept %t", kept.Page, kept.Table, kept.Result)
	}
	// Switching tabs keeps each tab's page too.
	step("tabs keep their pages",
		chromedp.Click("#tab-tools", chromedp.ByQuery),
		chromedp.WaitVisible("#tool-result .structured", chromedp.ByQuery),
		waitText("#tool-result", `2 of 2 hits for "east" in md documents`),
		chromedp.Click("#tab-finder", chromedp.ByQuery),
		chromedp.WaitVisible("table.dpe-table", chromedp.ByQuery),
		waitJS(`document.querySelector("table.dpe-table") === window.keptTable`),
		chromedp.ScrollIntoView("table.dpe-table", chromedp.ByQuery),
	)
	checkTimes(t, browser)

	// The gateway's figures: the console's own calls are counted.
	var counted bool
	step("metrics", chromedp.Poll(
		`parseInt(document.querySelector("#metric-calls .small")?.innerText ?? "0") > 0 && document.querySelectorAll("#metrics svg.spark polyline").length > 0`,
		&counted, chromedp.WithPollingTimeout(40*time.Second)))
	dst := os.Getenv("SMCP_CONSOLE_SCREENSHOT")
	if dst != "" || os.Getenv("SMCP_CONSOLE_DOCS") != "" {
		// For the docs: a few more samples, so the charts show a line.
		step("charts", chromedp.Poll(
			`(document.querySelector("#metric-calls polyline")?.getAttribute("points") ?? "").split(" ").length >= 5`,
			&counted, chromedp.WithPollingTimeout(40*time.Second)))
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
	docShot(t, browser, shots, "console-1400.png", false)
	checkFits(t, browser, "the Finder at 1400 px")
	step("390 px", chromedp.EmulateViewport(390, 844))
	checkFits(t, browser, "the Finder at 390 px")
	docShot(t, browser, shots, "console-390.png", true)
	step("tools at 390 px", chromedp.Click("#tab-tools", chromedp.ByQuery), chromedp.WaitVisible("#tool-result", chromedp.ByQuery))
	checkFits(t, browser, "the Tools tab at 390 px")
	docShot(t, browser, shots, "console-tools-390.png", true)
	step("back to 1400 px", chromedp.EmulateViewport(1400, 1000))

	// The 0.4 office: its version shown, and a Skills tab.
	step("skills",
		click(`.computer[data-computer="lab-pc"]`),
		waitText("#office-version", "SMCP 0.4"),
		waitText("#live", "live"),
		chromedp.WaitVisible("#tab-skills", chromedp.ByQuery),
		chromedp.Click("#tab-skills", chromedp.ByQuery),
		waitText(`.skill[data-skill="pdf-tools"]`, "pdf-tools"),
		waitText("#skills-list", "mcp:docs:search"),
		click(`.skill[data-skill="pdf-tools"]`),
		waitText("#skill-view pre", "Use `pdftotext`"),
		waitText("#skill-pane .facts", "/home/u/.a2c/skills/pdf-tools"),
		// SKILL.md came inline: its download is made in the page.
		click("#skill-download"),
	)
	waitFile(t, filepath.Join(downloads, "SKILL.md"), []byte(skillBody))
	// data.bin comes as a blob handle: its download streams ReadBlob.
	reads := sys.lab.blobReads()
	step("skill blob",
		chromedp.SetValue("#skill-file", "data.bin", chromedp.ByQuery),
		chromedp.Click("#skill-open", chromedp.ByQuery),
		waitText(`.file-head[data-rel-path="data.bin"]`, "blob"),
		click("#skill-download"),
		waitJS(`document.querySelector("#skill-view .blob-status")?.dataset.done === "true"`),
	)
	waitFile(t, filepath.Join(downloads, "data.bin"), sys.lab.blobs["h-data.bin"])
	if n := sys.lab.blobReads() - reads; n < 4 {
		t.Errorf("data.bin (4 chunks) downloaded with %d client:get_blob", n)
	}
	// A live update of the skills keeps the skill file shown.
	step("mark the skill", chromedp.Evaluate(`window.keptSkill = document.querySelector("#skill-view .file-head"); true`, nil))
	sys.lab.announce(t, smcp.EventUpdateSkills)
	step("skills update",
		waitText("#events", "notify:update_skills"),
		waitJS(`Number(document.querySelector("#skills-list")?.dataset.refreshed ?? 0) >= 1 && document.querySelector("#skill-view .file-head") === window.keptSkill`),
	)
	docShot(t, browser, shots, "console-skills-1400.png", false)
	checkFits(t, browser, "the Skills tab at 1400 px")
	step("skills at 390 px", chromedp.EmulateViewport(390, 844))
	checkFits(t, browser, "the Skills tab at 390 px")
	docShot(t, browser, shots, "console-skills-390.png", true)
	step("back to 1400 px", chromedp.EmulateViewport(1400, 1000))

	// A tool result whose image came as a blob handle: a download link.
	png := sys.lab.blobs["h-chart.png"]
	step("tool result blob",
		chromedp.Click("#tab-tools", chromedp.ByQuery),
		click(`.tool[data-tool="`+labTool+`"]`),
		chromedp.WaitVisible(`[data-param="title"]`, chromedp.ByQuery),
		chromedp.Click("#call-tool", chromedp.ByQuery),
		waitText("#tool-result", "rendered the chart"),
		waitText(`#tool-result .blob[data-handle="h-chart.png"]`, "image/png"),
		click(`#tool-result .blob[data-handle="h-chart.png"] button`),
		waitJS(`document.querySelector("#tool-result .blob-status")?.dataset.done === "true"`),
	)
	waitFile(t, filepath.Join(downloads, "image-"+sum256(png)[:8]+".png"), png)
	// A live update of the tool list keeps the result shown.
	step("mark the result", chromedp.Evaluate(`window.keptBlob = document.querySelector("#tool-result .blob"); true`, nil))
	sys.lab.announce(t, smcp.EventUpdateToolList)
	step("tool list update",
		waitText("#events", "notify:update_tool_list"),
		waitJS(`Number(document.querySelector("#tools-list")?.dataset.refreshed ?? 0) >= 1 && document.querySelector("#tool-result .blob") === window.keptBlob`),
	)
	shot(t, browser, filepath.Join(shots, "lab-tools.png"))

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
		waitText("#tab-body", `Office "demo" already has an agent: "other-agent" over socket.io since `),
		waitText("#tab-body", `An office holds one agent at a time`),
	)
	shot(t, browser, filepath.Join(shots, "held.png"))

	// The console's key is an operator's (no scope): it may evict the agent
	// from the office's overview, which disconnects it.
	step("evict agent",
		click(`.office[data-office="demo"] h3 a`),
		chromedp.WaitVisible("#evict-agent", chromedp.ByQuery),
		click("#evict-agent"),
		waitText("#evict-result", "Evicted: "),
		waitText("#evict-result", "other-agent (socket.io since "),
		waitText(`.office[data-office="demo"]`, "none joined"),
	)

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

// waitJS waits until the expression expr is true in the page.
func waitJS(expr string) chromedp.Action {
	var ok bool
	return chromedp.Poll(expr, &ok, chromedp.WithPollingTimeout(40*time.Second))
}

// waitFile waits until the browser has downloaded path (it writes a
// .crdownload file first and renames it when done) and checks its bytes.
func waitFile(t *testing.T, path string, want []byte) {
	t.Helper()
	var got []byte
	testwait.Within(t, 40*time.Second, "the download "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		got = b
		return err == nil && len(b) == len(want)
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("download %s: %d bytes, sha256 %s; want %d bytes, sha256 %s", filepath.Base(path), len(got), sum256(got), len(want), sum256(want))
	}
}

// fitsProbe lists the visible elements of the console that stick out of
// the window's width, leaving out those inside a scrolling box (a wide table
// scrolls in its own box: that is usable). A page that scrolls sideways, or
// a control out of reach, is not.
const fitsProbe = `(() => {
  const w = document.documentElement.clientWidth;
  const out = [];
  const scrolls = (e) => ["auto", "scroll", "hidden"].includes(getComputedStyle(e).overflowX);
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest("[hidden]") || e.getClientRects().length === 0) continue;
    let inner = false;
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) if (scrolls(p)) { inner = true; break; }
    if (inner) continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > w + 1 || r.left < -1)) {
      out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && typeof e.className === "string" ? "." + e.className.split(" ").join(".") : "") + " " + Math.round(r.left) + ".." + Math.round(r.right));
    }
  }
  const aside = document.querySelector("aside").getBoundingClientRect();
  const detail = document.querySelector("#detail").getBoundingClientRect();
  return { Width: w, ScrollWidth: document.documentElement.scrollWidth, Out: out.slice(0, 12),
    Stacked: aside.bottom <= detail.top + 1, Beside: aside.right <= detail.left + 1 };
})()`

// checkFits: at the window's width, the page does not scroll sideways and
// every element is within reach; below 900 px the offices pane is above
// the detail pane, else beside it.
func checkFits(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	var got struct {
		Width, ScrollWidth int
		Out                []string
		Stacked, Beside    bool
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(fitsProbe, &got)); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if got.ScrollWidth > got.Width || len(got.Out) > 0 {
		t.Errorf("%s: the page is %d px wide in a %d px window; out of reach: %v", where, got.ScrollWidth, got.Width, got.Out)
	}
	if got.Width < 900 && !got.Stacked || got.Width >= 900 && !got.Beside {
		t.Errorf("%s (%d px): offices pane stacked %t, beside %t", where, got.Width, got.Stacked, got.Beside)
	}
}

// checkTimes: every time the page shows is local "YYYY-MM-DD HH:MM:SS"
// with the full ISO time in its tooltip, among them the documents'
// modification times and the notifications'.
func checkTimes(t *testing.T, ctx context.Context) {
	t.Helper()
	var times []string
	if err := chromedp.Run(ctx, chromedp.Evaluate(
		`[...document.querySelectorAll("time")].map(e => (e.closest("#finder-results") ? "doc " : e.closest("#events") ? "event " : "other ") + e.textContent + "|" + e.title)`,
		&times)); err != nil {
		t.Fatal(err)
	}
	format := regexp.MustCompile(`^(doc|event|other) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`)
	kinds := map[string]int{}
	for _, s := range times {
		if !format.MatchString(s) {
			t.Errorf("time %q is not YYYY-MM-DD HH:MM:SS with an ISO tooltip", s)
		}
		kinds[strings.Fields(s)[0]]++
	}
	if kinds["doc"] == 0 || kinds["event"] == 0 {
		t.Errorf("times shown: %v; want the documents' and the notifications'", times)
	}
}

// docShot saves a screenshot (of the whole page when full) as name in
// shots, and in $SMCP_CONSOLE_DOCS when that is set.
func docShot(t *testing.T, ctx context.Context, shots, name string, full bool) {
	t.Helper()
	var b []byte
	action := chromedp.CaptureScreenshot(&b)
	if full {
		action = chromedp.FullScreenshot(&b, 100)
	}
	if err := chromedp.Run(ctx, action); err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	for _, dir := range []string{shots, os.Getenv("SMCP_CONSOLE_DOCS")} {
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
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
// reads the figures of GetFigures as the charts do.
const formProbe = `(async () => {
  const { buildForm } = await import("./form.js");
  const { figuresOf } = await import("./metrics.js");
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
  const { stamp } = await import("./dom.js");
  const s1 = stamp("2026-08-01T09:05:03Z"), s2 = stamp(new Date(Date.UTC(2026, 0, 2, 3, 4, 5))), s3 = stamp("yesterday");
  out.push([s1.textContent, s1.title, s2.textContent, s2.title, s3.tagName, s3.textContent, stamp("").textContent === ""].join(" | "));
  const { fileName } = await import("./blob.js");
  const blobs = [];
  const bnode = renderResult({ content: [
    { type: "image", mimeType: "image/png", data: "", _meta: { a2c_blob_handle: "h1", a2c_total_size: 2048, a2c_sha256: "abcdef0123456789" } },
    { type: "resource", resource: { uri: "file:///tmp/report.pdf", mimeType: "application/pdf", blob: "", _meta: { a2c_blob_handle: "h2", a2c_total_size: 5, a2c_sha256: "00" } } },
    { type: "text", text: "plain", _meta: { other: 1 } }] }, null, (b) => { blobs.push(b); return document.createElement("button"); });
  out.push([blobs.map((b) => b.handle + ":" + fileName(b)).join(","), bnode.querySelectorAll(".blob button").length,
    bnode.querySelector(".blob").textContent.trim(), bnode.querySelector("pre").textContent].join(" "));
  const { Client } = await import("./api.js");
  out.push(JSON.stringify(new Client("k", "a", "x-token").headers("application/json")));
  const f = figuresOf({ figures: { calls_total: 5, call_seconds_sum: 0.5, call_seconds_count: 4, calls_in_flight: 1.5 }, nodes: [{ node: "a" }, { node: "b" }] });
  out.push([f.calls, f.latSum, f.latCount, f.refused, f.inflight, f.nodes].join(" "));
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
		// Times: local (the test's zone is Asia/Tokyo), the ISO text as
		// given in the tooltip, else UTC; what is not a time stays as it is.
		"2026-08-01 18:05:03 | 2026-08-01T09:05:03Z | 2026-01-02 12:04:05 | 2026-01-02T03:04:05.000Z | SPAN | yesterday | true",
		// Content items replaced by blob handles (in the item's _meta, or
		// the embedded resource's) get download controls named after the
		// resource or the type, hash and MIME type; other items do not.
		"h1:image-abcdef01.png,h2:report.pdf 2 image image/png · 2.0 KiB plain",
		// A gateway with another key header (config.json) gets the key there.
		`{"Content-Type":"application/json","Connect-Protocol-Version":"1","x-token":"k","x-smcp-front":"console","x-smcp-agent":"a"}`,
		// Figures summed over the nodes, as GetFigures gives them.
		"5 0.5 4 0 1.5 2",
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
	for _, m := range []string{"ListOffices", "WatchOffice", "GetTools", "CallTool", "GetDesktop", "GetFinder", "ReadResource",
		"GetSkills", "GetSkill", "ReadBlob", "as other-agent"} {
		if calls[m] == 0 {
			t.Errorf("the browser never called %s (calls: %v)", m, calls)
		}
	}
}

func joinOtherAgent(ctx context.Context, url string) (*agent.Client, error) {
	a, err := agent.Dial(ctx, sioclient.Options{URL: url, APIKey: apiKey, Logger: slog.New(slog.DiscardHandler), Version: smcp.V02.Full()}, "other-agent")
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
