package computer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func desktops(t testing.TB, ans map[string]any) []string {
	t.Helper()
	list, ok := ans["desktops"].([]any)
	if !ok {
		t.Fatalf("get_desktop answer: %v", ans)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.(string)
	}
	return out
}

func TestDesktop(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetWindow(testmcp.Window{URI: "window://a.host/low", Text: "low", Priority: ptr(0.1)})
	a.SetWindow(testmcp.Window{URI: "window://a.host/high", Text: "high", Priority: ptr(0.9)})
	a.SetWindow(testmcp.Window{URI: "window://a.host/empty"})
	b := testmcp.New("b", testmcp.Options{})
	b.SetWindow(testmcp.Window{URI: "window://b.host/one", Text: "b1", Priority: ptr(0.5)})
	b.SetWindow(testmcp.Window{URI: "window://b.host/full", Text: "bfull", Fullscreen: true})
	// A server without resources.subscribe takes part too (PROTOCOL.md §6).
	plain := testmcp.New("plain", testmcp.Options{NoSubscribe: true})
	plain.SetWindow(testmcp.Window{URI: "window://plain/w", Text: "listed"})
	h := newComputer(t, map[string]map[string]any{
		"a": {"url": fixture(t, a)}, "b": {"url": fixture(t, b), "forbidden_tools": []any{"echo", "add", "slow", "pid"}},
		"plain": {"url": fixture(t, plain), "forbidden_tools": []any{"echo", "add", "slow", "pid"}},
	})

	all := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"req_id": "d1"}))
	want := []string{"window://a.host/high\n\nhigh", "window://a.host/low\n\nlow", "window://b.host/full\n\nbfull", "window://plain/w\n\nlisted"}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("desktop:\n%q\nwant\n%q", all, want)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"desktop_size": 2})); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("size 2: %q", got)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"desktop_size": 0})); len(got) != 0 {
		t.Fatalf("size 0: %q", got)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"window": "window://b.host/one"})); !reflect.DeepEqual(got, []string{"window://b.host/one\n\nb1"}) {
		t.Fatalf("window filter: %q", got)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"window": "window://nope/x"})); len(got) != 0 {
		t.Fatalf("window filter without match: %q", got)
	}
	// A tool call on b puts b's windows first.
	if res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "echo", "params": map[string]any{"text": "x"}}); res["isError"] != false {
		t.Fatalf("echo: %v", res)
	}
	// "echo" is a's (b's is forbidden); call a then nothing on b: a first.
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); got[0] != want[0] {
		t.Fatalf("after a call: %q", got)
	}
	if got := h.call(smcp.EventReadResource, map[string]any{"uri": "window://b.host/one"}); got["contents"].([]any)[0].(map[string]any)["text"] != "b1" {
		t.Fatalf("read window: %v", got)
	}
}

// TestDesktopLegacyQuery: an SDK 0.1.x server without resources.subscribe
// marks its windows in the URI's query; the Desktop reads priority and
// fullscreen from it when annotations and _meta do not say, and shows the
// URIs without it; reads by the shown URI reach the server's own.
func TestDesktopLegacyQuery(t *testing.T) {
	old := testmcp.New("old", testmcp.Options{NoSubscribe: true})
	old.SetWindow(testmcp.Window{URI: "window://old/low?priority=10", Text: "low"})
	old.SetWindow(testmcp.Window{URI: "window://old/high?priority=90&fullscreen=false", Text: "high"})
	old.SetWindow(testmcp.Window{URI: "window://old/annotated?priority=1", Text: "annotated", Priority: ptr(0.5)})
	full := testmcp.New("full", testmcp.Options{NoSubscribe: true})
	full.SetWindow(testmcp.Window{URI: "window://full/a?priority=99", Text: "a"})
	full.SetWindow(testmcp.Window{URI: "window://full/b?fullscreen=true", Text: "b"})
	h := newComputer(t, map[string]map[string]any{
		"old":  {"url": fixture(t, old), "forbidden_tools": []any{"echo", "add", "slow", "pid"}},
		"full": {"url": fixture(t, full), "forbidden_tools": []any{"echo", "add", "slow", "pid"}},
	})
	got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{}))
	want := []string{"window://full/b\n\nb", "window://old/high\n\nhigh", "window://old/annotated\n\nannotated", "window://old/low\n\nlow"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("desktop:\n%q\nwant\n%q", got, want)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{"window": "window://old/low"})); !reflect.DeepEqual(got, want[3:]) {
		t.Fatalf("window filter by the shown URI: %q", got)
	}
	res := h.call(smcp.EventReadResource, map[string]any{"uri": "window://old/high"})
	if c, _ := res["contents"].([]any); len(c) != 1 || c[0].(map[string]any)["text"] != "high" {
		t.Fatalf("read by the shown URI: %v", res)
	}
}

func TestDesktopHistoryOrder(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetWindow(testmcp.Window{URI: "window://a/w", Text: "a"})
	b := testmcp.New("b", testmcp.Options{})
	b.SetWindow(testmcp.Window{URI: "window://b/w", Text: "b"})
	h := newComputer(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "tool_meta": map[string]any{"echo": map[string]any{"alias": "a_echo"}}},
		"b": {"url": fixture(t, b), "tool_meta": map[string]any{"echo": map[string]any{"alias": "b_echo"}},
			"forbidden_tools": []any{"add", "slow", "pid"}},
	})
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); got[0] != "window://a/w\n\na" {
		t.Fatalf("by name: %q", got)
	}
	h.call(smcp.EventToolCall, map[string]any{"tool_name": "b_echo", "params": map[string]any{"text": "x"}})
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); got[0] != "window://b/w\n\nb" {
		t.Fatalf("after b call: %q", got)
	}
	h.call(smcp.EventToolCall, map[string]any{"tool_name": "a_echo", "params": map[string]any{"text": "x"}})
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); got[0] != "window://a/w\n\na" {
		t.Fatalf("after a call: %q", got)
	}
}

func TestDesktopChangeDetection(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetWindow(testmcp.Window{URI: "window://a/w", Text: "one"})
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}})
	h.upd.drain()

	// The resource list changes but the set of windows does not: only
	// update_finder.
	a.SetDocs("a.docs", docs("a", 1)...)
	h.upd.wait(t, smcp.EventUpdateFinder)
	if n := h.upd.count(smcp.EventUpdateDesktop); n != 0 {
		t.Fatalf("update_desktop sent %d times for an unchanged window set", n)
	}
	// Content update: at once.
	if err := a.SetWindowText(context.Background(), "window://a/w", "two"); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateDesktop)
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); got[0] != "window://a/w\n\ntwo" {
		t.Fatalf("after update: %q", got)
	}
	// A new window: the set changes.
	a.SetWindow(testmcp.Window{URI: "window://a/new", Text: "new"})
	h.upd.wait(t, smcp.EventUpdateDesktop)
	a.RemoveResource("window://a/new")
	h.upd.wait(t, smcp.EventUpdateDesktop)
}

// docs makes n documents for server s.
func docs(s string, n int) []testmcp.Doc {
	out := make([]testmcp.Doc, n)
	for i := range out {
		out[i] = testmcp.Doc{
			DocRef: fmt.Sprintf("%s-%03d", s, i), Title: fmt.Sprintf("%s report %d", s, i), FileType: []string{"pdf", "xlsx"}[i%2],
			Keywords: []string{"k" + fmt.Sprint(i%5)}, Summary: "summary of " + s, LastModified: fmt.Sprintf("2026-01-%02dT00:00:00Z", 1+i%28),
			Pages: []testmcp.Page{{Title: "p0", Elements: []testmcp.Element{
				{ID: "h1", Category: "heading", Summary: "Title", Content: map[string]any{"level": 1, "text": "Title"}},
				{ID: "t1", Category: "table", Summary: "numbers", Content: map[string]any{"headers": []any{"a"}, "rows": []any{[]any{"1"}}}},
			}}, {Title: "p1"}},
		}
	}
	return out
}

func finderDocs(t testing.TB, ans map[string]any) ([]map[string]any, int) {
	t.Helper()
	list, ok := ans["documents"].([]any)
	if !ok {
		t.Fatalf("get_finder answer: %v", ans)
	}
	out := make([]map[string]any, len(list))
	for i, e := range list {
		out[i] = e.(map[string]any)
	}
	return out, int(ans["total_count"].(float64))
}

func TestFinder(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetDocs("a.docs", docs("a", 30)...)
	b := testmcp.New("b", testmcp.Options{})
	b.SetDocs("b.docs", docs("b", 10)...)
	h := newComputer(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "tool_meta": map[string]any{"echo": map[string]any{"alias": "a_echo"}}},
		"b": {"url": fixture(t, b), "tool_meta": map[string]any{"echo": map[string]any{"alias": "b_echo"}},
			"forbidden_tools": []any{"add", "slow", "pid"}},
	})
	page, total := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"req_id": "f1"}))
	if total != 40 || len(page) != 20 || page[0]["server"] != "a" {
		t.Fatalf("default page: total %d len %d first %v", total, len(page), page[0])
	}
	first := page[0]
	if first["uri"] != "dpe://a.docs/"+first["doc_ref"].(string) || first["page_count"] != 2.0 || first["file_uri"] == "" {
		t.Fatalf("summary: %v", first)
	}
	// last_modified descending within a server.
	for i := 1; i < len(page); i++ {
		if page[i]["last_modified"].(string) > page[i-1]["last_modified"].(string) {
			t.Fatalf("order: %v before %v", page[i-1]["last_modified"], page[i]["last_modified"])
		}
	}
	page, total = finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"offset": 35, "limit": 10}))
	if total != 40 || len(page) != 5 || page[0]["server"] != "b" {
		t.Fatalf("last page: %d %d", total, len(page))
	}
	page, total = finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"keywords": []any{"K3"}, "file_type": "xlsx"}))
	for _, d := range page {
		if d["file_type"] != "xlsx" || d["keywords"].([]any)[0] != "k3" {
			t.Fatalf("filter: %v", d)
		}
	}
	want := 0
	for _, n := range []int{30, 10} {
		for i := range n {
			if i%5 == 3 && i%2 == 1 {
				want++
			}
		}
	}
	if total != want || len(page) != want {
		t.Fatalf("filtered total %d (page %d), want %d", total, len(page), want)
	}
	page, total = finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"keywords": []any{"summary of b"}}))
	if total != 10 || page[0]["server"] != "b" {
		t.Fatalf("summary keyword: %d", total)
	}
	// History: b used last → b's documents first.
	h.call(smcp.EventToolCall, map[string]any{"tool_name": "b_echo", "params": map[string]any{"text": "x"}})
	if page, _ = finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{})); page[0]["server"] != "b" {
		t.Fatalf("history order: %v", page[0])
	}
}

func TestFinderChangeDetection(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetDocs("a.docs", docs("a", 3)...)
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}})
	h.upd.drain()
	if err := a.TouchDoc(context.Background(), "a.docs", "a-001", "Renamed report"); err != nil {
		t.Fatal(err)
	}
	h.upd.wait(t, smcp.EventUpdateFinder)
	page, _ := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"keywords": []any{"renamed"}}))
	if len(page) != 1 || page[0]["title"] != "Renamed report" {
		t.Fatalf("cache not refreshed before update_finder: %v", page)
	}
	a.SetDocs("a.docs", docs("z", 1)...)
	h.upd.wait(t, smcp.EventUpdateFinder)
	if _, total := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{})); total != 4 {
		t.Fatalf("after add: %d", total)
	}
	a.RemoveResource("dpe://a.docs/z-000")
	h.upd.wait(t, smcp.EventUpdateFinder)
	if _, total := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{})); total != 3 {
		t.Fatalf("after remove: %d", total)
	}
	if desk := h.upd.count(smcp.EventUpdateDesktop); desk != 0 {
		t.Fatalf("document changes sent update_desktop %d times", desk)
	}
}

func TestReadResourceLevelsAndErrors(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetDocs("a.docs", docs("a", 2)...)
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}})
	read := func(uri string) map[string]any {
		return h.call(smcp.EventReadResource, map[string]any{"uri": uri, "req_id": "rr"})
	}
	body := func(ans map[string]any) map[string]any {
		t.Helper()
		contents, ok := ans["contents"].([]any)
		if !ok || len(contents) == 0 {
			t.Fatalf("read answer: %v", ans)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(contents[0].(map[string]any)["text"].(string)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if ans := read("dpe://a.docs"); ans["req_id"] != "rr" || body(ans)["total_count"] != 2.0 {
		t.Fatalf("level 0: %v", ans)
	}
	if m := body(read("dpe://a.docs/a-001")); m["title"] != "a report 1" || m["pages"] != nil {
		t.Fatalf("level 1: %v", m)
	}
	if m := body(read("dpe://a.docs/a-001?depth=pages&offset=1&limit=1")); len(m["pages"].([]any)) != 1 || m["page_total"] != 2.0 {
		t.Fatalf("level 1 pages: %v", m)
	}
	if m := body(read("dpe://a.docs/a-001/pages/0?categories=table")); m["element_count"] != 1.0 {
		t.Fatalf("level 2: %v", m)
	}
	ans := read("dpe://a.docs/a-001/pages/0?format=markdown")
	if c := ans["contents"].([]any)[0].(map[string]any); c["mimeType"] != "text/markdown" || !strings.Contains(c["text"].(string), "[table: numbers]") {
		t.Fatalf("level 2 markdown: %v", ans)
	}
	if m := body(read("dpe://a.docs/a-001/elements/t1")); m["category"] != "table" || m["page_index"] != 0.0 {
		t.Fatalf("level 3: %v", m)
	}
	for _, tc := range []struct {
		uri     string
		code    float64
		details string
	}{
		{"dpe://a.docs/nope", 4201, "doc_ref"},
		{"dpe://a.docs/a-001/pages/7", 4202, "page_count"},
		{"dpe://a.docs/a-001/elements/zz", 4203, "element_id"},
		{"dpe://a.docs/a-001?limit=500", 4204, "rule"},
		{"dpe://a.docs/a-001/pages/x", 4204, "rule"},
		{"dpe://other.host/doc", 4201, "host"},
		{"window://nobody/w", 404, ""},
		// Seed 000 rule 1 (scheme): a case variant or a malformed dpe URI
		// is a 4204 from the computer, not a server's failure (500).
		{"DPE://a.docs/a-001", 4204, "rule"},
		{"Dpe://a.docs/a-001", 4204, "rule"},
		{"dpe:a.docs/a-001", 4204, "rule"},
		{"https://a.docs/a-001", 400, ""},
	} {
		ans := read(tc.uri)
		if ans["code"] != tc.code {
			t.Errorf("%s: %v, want code %v", tc.uri, ans, tc.code)
			continue
		}
		if tc.details != "" {
			if d, _ := ans["details"].(map[string]any); d[tc.details] == nil {
				t.Errorf("%s: details %v lack %q", tc.uri, ans["details"], tc.details)
			}
			if d, _ := ans["details"].(map[string]any); strings.HasPrefix(strings.ToLower(tc.uri), "dpe://") && !strings.HasPrefix(tc.uri, "dpe") && d["rule"] != "scheme" {
				t.Errorf("%s: rule %v, want scheme", tc.uri, d["rule"])
			}
		}
	}
}

// TestHostClashRoutesToFirstServer: two servers list documents under one
// host; the clash is logged and reads go to the first server by name.
func TestHostClashRoutesToFirstServer(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetDocs("shared.host", docs("a", 1)...)
	b := testmcp.New("b", testmcp.Options{})
	b.SetDocs("shared.host", docs("b", 1)...)
	h := newComputer(t, map[string]map[string]any{"a": {"url": fixture(t, a)}, "b": {"url": fixture(t, b), "forbidden_tools": []any{"echo", "add", "slow", "pid"}}})
	if _, total := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{})); total != 2 {
		t.Fatalf("both servers' documents are in the Finder: %d", total)
	}
	if ans := h.call(smcp.EventReadResource, map[string]any{"uri": "dpe://shared.host/a-000"}); ans["contents"] == nil {
		t.Fatalf("a's document: %v", ans)
	}
	if ans := h.call(smcp.EventReadResource, map[string]any{"uri": "dpe://shared.host/b-000"}); ans["code"] != 4201.0 {
		t.Fatalf("b's document is routed to a: %v", ans)
	}
}
