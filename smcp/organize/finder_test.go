package organize

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

type docOpt func(*smcpv1.DPEDocumentSummary)

func doc(server, ref string, opts ...docOpt) *smcpv1.DPEDocumentSummary {
	d := &smcpv1.DPEDocumentSummary{
		DocRef: ref, Uri: "dpe://" + server + ".host/" + ref, FileType: "pdf", Title: ref, Server: server,
	}
	for _, o := range opts {
		o(d)
	}
	return d
}

func modified(ts string) docOpt { return func(d *smcpv1.DPEDocumentSummary) { d.LastModified = &ts } }
func title(s string) docOpt     { return func(d *smcpv1.DPEDocumentSummary) { d.Title = s } }
func summary(s string) docOpt   { return func(d *smcpv1.DPEDocumentSummary) { d.Summary = &s } }
func fileType(s string) docOpt  { return func(d *smcpv1.DPEDocumentSummary) { d.FileType = s } }
func uri(s string) docOpt       { return func(d *smcpv1.DPEDocumentSummary) { d.Uri = s } }
func keywords(k ...string) docOpt {
	return func(d *smcpv1.DPEDocumentSummary) { d.Keywords = k }
}

func refs(docs []*smcpv1.DPEDocumentSummary) []string {
	out := []string{}
	for _, d := range docs {
		out = append(out, d.GetDocRef())
	}
	return out
}

func TestFinderEmpty(t *testing.T) {
	page, total, warnings := Finder(nil, nil, "", nil, 0, 20)
	if page == nil || len(page) != 0 || total != 0 || warnings != nil {
		t.Errorf("Finder(nil) = %v, %d, %v", page, total, warnings)
	}
}

func TestFinderKeywords(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{
		doc("s", "by-title", title("Annual REPORT 2026")),
		doc("s", "by-keyword", keywords("finance", "年报")),
		doc("s", "by-summary", summary("Quarterly revenue overview")),
		doc("s", "none", title("Contract"), keywords("legal"), summary("service terms")),
		doc("s", "joined", keywords("cash", "flow")),
	}
	tests := []struct {
		keywords []string
		want     []string
	}{
		{nil, []string{"by-title", "by-keyword", "by-summary", "none", "joined"}},
		{[]string{}, []string{"by-title", "by-keyword", "by-summary", "none", "joined"}},
		{[]string{"report"}, []string{"by-title"}},
		{[]string{"FINANCE"}, []string{"by-keyword"}},
		{[]string{"年报"}, []string{"by-keyword"}},
		{[]string{"Revenue"}, []string{"by-summary"}},
		{[]string{"report", "revenue"}, []string{"by-title", "by-summary"}},
		{[]string{"nothing-matches"}, []string{}},
		// The seed joins keywords with a space before matching.
		{[]string{"cash flow"}, []string{"joined"}},
		// An empty keyword is a substring of everything, as in the seed.
		{[]string{""}, []string{"by-title", "by-keyword", "by-summary", "none", "joined"}},
	}
	for _, tc := range tests {
		page, total, _ := Finder(docs, tc.keywords, "", nil, 0, 100)
		if got := refs(page); !reflect.DeepEqual(got, tc.want) || total != len(tc.want) {
			t.Errorf("keywords %q: %v (total %d), want %v", tc.keywords, got, total, tc.want)
		}
	}
}

func TestFinderFileType(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{
		doc("s", "a", fileType("pdf")), doc("s", "b", fileType("xlsx")), doc("s", "c", fileType("PDF")),
	}
	for ft, want := range map[string][]string{"": {"a", "b", "c"}, "pdf": {"a"}, "xlsx": {"b"}, "docx": {}, "PDF": {"c"}} {
		page, total, _ := Finder(docs, nil, ft, nil, 0, 20)
		if got := refs(page); !reflect.DeepEqual(got, want) || total != len(want) {
			t.Errorf("file_type %q: %v (total %d), want %v", ft, got, total, want)
		}
	}
	// Keyword and file type filters combine.
	page, total, _ := Finder(docs, []string{"b", "c"}, "xlsx", nil, 0, 20)
	if got := refs(page); !reflect.DeepEqual(got, []string{"b"}) || total != 1 {
		t.Errorf("keywords+file_type: %v (total %d)", got, total)
	}
}

func TestFinderInvalidURIs(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{
		doc("s", "ok"),
		doc("s", "wrong-scheme", uri("window://s/x")),
		doc("s", "no-host", uri("dpe:///x")),
		doc("s", "bad-page", uri("dpe://h/x/pages/-1")),
		doc("s", "bad-query", uri("dpe://h/x?limit=500")),
		nil,
	}
	page, total, warnings := Finder(docs, nil, "", nil, 0, 20)
	if got := refs(page); !reflect.DeepEqual(got, []string{"ok"}) || total != 1 {
		t.Errorf("got %v (total %d)", got, total)
	}
	if len(warnings) != 4 {
		t.Errorf("want 4 warnings, got %v", warnings)
	}
}

func TestFinderServerOrder(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{
		doc("zeta", "z1"), doc("alpha", "a1"), doc("mid", "m1"), doc("alpha", "a2"), doc("beta", "b1"),
	}
	tests := []struct {
		history []string
		want    []string
	}{
		{nil, []string{"a1", "a2", "b1", "m1", "z1"}},
		{[]string{"zeta", "mid", "zeta"}, []string{"z1", "m1", "a1", "a2", "b1"}},
		{[]string{"beta", "unknown"}, []string{"b1", "a1", "a2", "m1", "z1"}},
	}
	for _, tc := range tests {
		page, _, _ := Finder(docs, nil, "", tc.history, 0, 20)
		if got := refs(page); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("history %v: %v, want %v", tc.history, got, tc.want)
		}
	}
}

func TestFinderLastModified(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{
		doc("s", "missing-1"),
		doc("s", "jan", modified("2026-01-15T08:30:00Z")),
		doc("s", "garbage", modified("last tuesday")),
		doc("s", "feb", modified("2026-02-01T14:00:00Z")),
		// 2026-02-01T15:00:00+02:00 is 13:00Z: older than "feb" although it sorts after it as a string.
		doc("s", "feb-offset", modified("2026-02-01T15:00:00+02:00")),
		doc("s", "python-naive", modified("2026-01-20T10:00:00.123456")),
		doc("s", "date-only", modified("2026-01-16")),
		doc("s", "missing-2"),
		doc("s", "empty", modified("")),
		doc("s", "jan-twin", modified("2026-01-15T08:30:00Z")),
		doc("s", "fraction", modified("2026-02-01T14:00:00.5Z")),
	}
	page, total, _ := Finder(docs, nil, "", nil, 0, 100)
	want := []string{
		"fraction", "feb", "feb-offset", "python-naive", "date-only", "jan", "jan-twin",
		"garbage", "empty", // unparseable: descending as strings
		"missing-1", "missing-2", // missing: last, input order
	}
	if got := refs(page); !reflect.DeepEqual(got, want) || total != len(docs) {
		t.Errorf("order %v\n want %v (total %d)", got, want, total)
	}
}

func TestFinderPaging(t *testing.T) {
	var docs []*smcpv1.DPEDocumentSummary
	for i := range 7 {
		docs = append(docs, doc("s", fmt.Sprintf("d%d", i), modified(fmt.Sprintf("2026-01-%02dT00:00:00Z", 20-i))))
	}
	docs = append(docs, doc("s", "other", fileType("xlsx")))
	tests := []struct {
		name          string
		offset, limit int
		want          []string
	}{
		{"first page", 0, 3, []string{"d0", "d1", "d2"}},
		{"middle page", 3, 3, []string{"d3", "d4", "d5"}},
		{"last partial page", 6, 3, []string{"d6"}},
		{"offset at end", 7, 3, []string{}},
		{"offset beyond end", 50, 3, []string{}},
		{"limit zero", 0, 0, []string{}},
		{"limit above total", 0, 100, []string{"d0", "d1", "d2", "d3", "d4", "d5", "d6"}},
		{"negative offset counts as zero", -4, 2, []string{"d0", "d1"}},
		{"negative limit", 0, -1, []string{}},
	}
	for _, tc := range tests {
		page, total, _ := Finder(docs, nil, "pdf", nil, tc.offset, tc.limit)
		if got := refs(page); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		// total_count counts after filtering (the xlsx is out), before paging.
		if total != 7 {
			t.Errorf("%s: total %d, want 7", tc.name, total)
		}
	}
}

func TestFinderDoesNotModifyInput(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{doc("b", "1"), doc("a", "2")}
	Finder(docs, nil, "", nil, 0, 20)
	if refs(docs)[0] != "1" {
		t.Error("Finder reordered its input")
	}
}

func TestAppendLower(t *testing.T) {
	for _, s := range []string{"Hello World", "", "ÄRGER im Büro", "ΣΊΣΥΦΟΣ", "\xffA\xfe", "年报 Q1", "K-Kelvin İ"} {
		if got := string(appendLower([]byte("prefix:"), s)); got != "prefix:"+strings.ToLower(s) {
			t.Errorf("appendLower(%q) = %q, want %q", s, got, strings.ToLower(s))
		}
	}
}

func benchDocs(n int) []*smcpv1.DPEDocumentSummary {
	docs := make([]*smcpv1.DPEDocumentSummary, n)
	for i := range docs {
		// The computer collects documents server by server: 20 servers of n/20.
		server := fmt.Sprintf("server-%02d", i*20/n)
		d := doc(server, fmt.Sprintf("doc-%05d", i),
			title(fmt.Sprintf("Quarterly Report %d", i)),
			keywords("finance", fmt.Sprintf("q%d", i%4+1)),
			summary("Revenue and operations of the business unit"),
			fileType([]string{"pdf", "xlsx", "pptx", "md"}[i%4]))
		if i%10 != 0 {
			d.LastModified = new(fmt.Sprintf("2026-%02d-%02dT%02d:%02d:00Z", i%12+1, i%28+1, i%24, i%60))
		}
		docs[i] = d
	}
	return docs
}

func BenchmarkFinder10k(b *testing.B) {
	docs := benchDocs(10000)
	history := []string{"server-03", "server-11", "server-03", "server-07"}
	for _, bc := range []struct {
		name     string
		keywords []string
		fileType string
	}{
		{"all", nil, ""},
		{"keywords", []string{"REPORT 12", "q3"}, ""},
		{"file_type", nil, "xlsx"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			defer cpuTimer(b)()
			for b.Loop() {
				page, total, _ := Finder(docs, bc.keywords, bc.fileType, history, 40, 20)
				if total == 0 || len(page) == 0 {
					b.Fatal("empty result")
				}
			}
		})
		// A computer prepares its catalogue once per change and queries it.
		b.Run(bc.name+"/prepared", func(b *testing.B) {
			x := NewFinderIndex(docs)
			b.ReportAllocs()
			defer cpuTimer(b)()
			for b.Loop() {
				page, total, _ := x.Find(bc.keywords, bc.fileType, history, 40, 20)
				if total == 0 || len(page) == 0 {
					b.Fatal("empty result")
				}
			}
		})
	}
}

// TestFinderPageMatchesFullSort checks the bounded-heap page selection
// against a plain stable sort of the whole catalogue, for pages small enough
// to take the heap path and large enough to take the sort path.
func TestFinderPageMatchesFullSort(t *testing.T) {
	docs := benchDocs(600)
	// Duplicate timestamps and unparseable values exercise the tie-breaks.
	for i, d := range docs {
		switch i % 7 {
		case 1:
			d.LastModified = new("2026-03-03T03:03:03Z")
		case 2:
			d.LastModified = new(fmt.Sprintf("not a date %d", i%5))
		}
	}
	history := []string{"server-05", "server-17", "server-05"}
	rank := map[string]int{"server-05": 0, "server-17": 1}
	want := slices.Clone(docs)
	slices.SortStableFunc(want, func(a, b *smcpv1.DPEDocumentSummary) int {
		ra, ok := rank[a.Server]
		if !ok {
			ra = 2
		}
		rb, ok := rank[b.Server]
		if !ok {
			rb = 2
		}
		if ra != rb || ra == 2 && a.Server != b.Server {
			return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a.Server, b.Server))
		}
		ta, okA := parseISO8601(a.GetLastModified())
		tb, okB := parseISO8601(b.GetLastModified())
		class := func(d *smcpv1.DPEDocumentSummary, ok bool) int {
			switch {
			case d.LastModified == nil:
				return 2
			case ok:
				return 0
			}
			return 1
		}
		ca, cb := class(a, okA), class(b, okB)
		switch {
		case ca != cb:
			return cmp.Compare(ca, cb)
		case ca == 0:
			return tb.Compare(ta)
		case ca == 1:
			return strings.Compare(b.GetLastModified(), a.GetLastModified())
		}
		return 0
	})
	for _, pg := range []struct{ offset, limit int }{{0, 1}, {0, 20}, {37, 20}, {100, 50}, {0, 100}, {450, 100}, {599, 20}, {0, 600}} {
		page, total, _ := Finder(docs, nil, "", history, pg.offset, pg.limit)
		end := min(pg.offset+pg.limit, len(want))
		if total != len(docs) || !reflect.DeepEqual(refs(page), refs(want[pg.offset:end])) {
			t.Errorf("offset %d limit %d:\n got %v\nwant %v", pg.offset, pg.limit, refs(page), refs(want[pg.offset:end]))
		}
	}
}

func TestFinderPagingBounds(t *testing.T) {
	tests := []struct {
		offset, limit *int32
		o, l          int
		badField      string
	}{
		{nil, nil, 0, 20, ""},
		{new(int32(5)), new(int32(1)), 5, 1, ""},
		{new(int32(0)), new(int32(100)), 0, 100, ""},
		{new(int32(-1)), nil, 0, 0, "offset"},
		{nil, new(int32(0)), 0, 0, "limit"},
		{nil, new(int32(101)), 0, 0, "limit"},
	}
	for _, tc := range tests {
		o, l, err := FinderPaging(tc.offset, tc.limit)
		if tc.badField == "" {
			if err != nil || o != tc.o || l != tc.l {
				t.Errorf("FinderPaging(%v, %v) = %d, %d, %v", tc.offset, tc.limit, o, l, err)
			}
			continue
		}
		e, ok := smcp.AsError(err)
		if !ok || e.Code != smcp.CodeBadRequest || e.Details["field"] != tc.badField {
			t.Errorf("FinderPaging(%v, %v) error = %v, want 400 on %s", tc.offset, tc.limit, err, tc.badField)
		}
	}
}

func TestFinderKeywordsDoNotSpanFields(t *testing.T) {
	docs := []*smcpv1.DPEDocumentSummary{doc("s", "split", title("abc"), summary("def"), keywords("ghi"))}
	for _, kw := range []string{"cd", "fg", "c\xffd", "c\uFFFDd", "ci"} {
		if page, _, _ := Finder(docs, []string{kw}, "", nil, 0, 20); len(page) != 0 {
			t.Errorf("keyword %q matched across fields", kw)
		}
	}
	for _, kw := range []string{"ABC", "ef", "hi"} {
		if page, _, _ := Finder(docs, []string{kw}, "", nil, 0, 20); len(page) != 1 {
			t.Errorf("keyword %q did not match", kw)
		}
	}
}

// TestFinderIndexReusedAcrossQueries checks that one prepared index answers
// a sequence of different queries exactly as fresh Finder calls do (the
// index must not keep state from one query to the next).
func TestFinderIndexReusedAcrossQueries(t *testing.T) {
	docs := benchDocs(500)
	for i, d := range docs {
		if i%9 == 4 {
			d.LastModified = new(fmt.Sprintf("not a date %d", i%3))
		}
	}
	x := NewFinderIndex(docs)
	queries := []struct {
		keywords []string
		fileType string
		history  []string
		offset   int
		limit    int
	}{
		{nil, "", nil, 0, 20},
		{[]string{"REPORT 1"}, "", []string{"server-02"}, 5, 50},
		{nil, "xlsx", []string{"server-09", "server-01"}, 0, 100},
		{[]string{"q3", "nothing-matches-this"}, "pdf", nil, 0, 10},
		{nil, "", nil, 490, 20},
		{nil, "", nil, 0, 20},
	}
	for i, q := range queries {
		wantPage, wantTotal, _ := Finder(docs, q.keywords, q.fileType, q.history, q.offset, q.limit)
		page, total, _ := x.Find(q.keywords, q.fileType, q.history, q.offset, q.limit)
		if total != wantTotal || !slices.Equal(page, wantPage) {
			t.Errorf("query %d: total %d page %d, want total %d page %d", i, total, len(page), wantTotal, len(wantPage))
		}
	}
}
