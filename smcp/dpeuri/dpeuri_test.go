package dpeuri

import (
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestParseLevels(t *testing.T) {
	tests := []struct {
		raw  string
		want URI
	}{
		{"dpe://com.example.docs", Catalogue("com.example.docs")},
		{"dpe://com.example.docs/", Catalogue("com.example.docs")},
		{"dpe://com.example.docs/rpt-2026", Document("com.example.docs", "rpt-2026")},
		{"dpe://com.example.docs/rpt-2026/pages/0", Page("com.example.docs", "rpt-2026", 0)},
		{"dpe://com.example.docs/rpt-2026/pages/11", Page("com.example.docs", "rpt-2026", 11)},
		{"dpe://com.example.docs/rpt-2026/elements/tbl-001", Element("com.example.docs", "rpt-2026", "tbl-001")},
	}
	wantLevels := []Level{LevelCatalogue, LevelCatalogue, LevelDocument, LevelPage, LevelPage, LevelElement}
	for i, tc := range tests {
		got, err := Parse(tc.raw)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.raw, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.raw, got, tc.want)
		}
		if got.Level() != wantLevels[i] {
			t.Errorf("Parse(%q).Level() = %v, want %v", tc.raw, got.Level(), wantLevels[i])
		}
	}
}

// TestRules has a passing and a failing URI for each of the 8 rules of seed
// 000 and for the well-formedness rules added by this package.
func TestRules(t *testing.T) {
	tests := []struct {
		rule Rule
		ok   string
		bad  []string
	}{
		{RuleScheme, "dpe://h/d", []string{"DPE://h/d", "Dpe://h", "http://h/d", "window://h/d", "h/d", "", "dpex://h", "://h"}},
		{RuleHost, "dpe://h", []string{"dpe://", "dpe:///doc", "dpe:h/d", "dpe:", "dpe://%zz/d", "dpe://?format=json", "dpe://%FF/d"}},
		{RuleSubPath, "dpe://h/d/pages/0", []string{
			"dpe://h/d/pages/-1", "dpe://h/d/pages/x", "dpe://h/d/pages/", "dpe://h/d/pages/1.5",
			"dpe://h/d/pages/+1", "dpe://h/d/pages/2147483648", "dpe://h/d/pages/99999999999",
			"dpe://h/d/elements/", "dpe://h/d/elements/a/b", "dpe://h/d/elements/%zz",
			"dpe://h/d/sheets/1", "dpe://h/d/pages", "dpe://h/d/", "dpe://h/d/Pages/1", "dpe://h/d/pages/1/",
		}},
		{RuleFormat, "dpe://h/d?format=markdown", []string{"dpe://h/d?format=xml", "dpe://h/d?format=", "dpe://h/d?format=JSON", "dpe://h/d?format=json&format=text"}},
		{RuleDepth, "dpe://h/d?depth=pages", []string{"dpe://h/d?depth=all", "dpe://h/d?depth=", "dpe://h/d?depth=pages&depth=pages"}},
		{RuleOffset, "dpe://h/d?offset=0", []string{"dpe://h/d?offset=-1", "dpe://h/d?offset=x", "dpe://h/d?offset=", "dpe://h/d?offset=1e3", "dpe://h/d?offset=2147483648"}},
		{RuleLimit, "dpe://h/d?limit=100", []string{"dpe://h/d?limit=0", "dpe://h/d?limit=101", "dpe://h/d?limit=-5", "dpe://h/d?limit=ten", "dpe://h/d?limit="}},
		{RuleCategories, "dpe://h/d/pages/0?categories=table,pivot_table", []string{
			"dpe://h/d/pages/0?categories=tables", "dpe://h/d/pages/0?categories=", "dpe://h/d/pages/0?categories=table,",
			"dpe://h/d/pages/0?categories=table,%20chart", "dpe://h/d/pages/0?categories=Table",
		}},
		{RuleDocRef, "dpe://h/a%2Fb", []string{"dpe://h//pages/1", "dpe://h/%zz", "dpe://h/%C3%28"}},
		{RuleQuery, "dpe://h/d?x=1", []string{"dpe://h/d?a=%zz", "dpe://h/d?a;b"}},
		{RuleFragment, "dpe://h/d%23x", []string{"dpe://h/d#x", "dpe://h#"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.rule), func(t *testing.T) {
			if _, err := Parse(tc.ok); err != nil {
				t.Errorf("Parse(%q) failed: %v", tc.ok, err)
			}
			for _, raw := range tc.bad {
				_, err := Parse(raw)
				if err == nil {
					t.Errorf("Parse(%q) accepted, want rule %s", raw, tc.rule)
					continue
				}
				e, ok := smcp.AsError(err)
				if !ok || e.Code != smcp.CodeInvalidDPEURI {
					t.Fatalf("Parse(%q) error %v is not a 4204 *smcp.Error", raw, err)
				}
				if rule, _ := RuleOf(err); rule != tc.rule {
					t.Errorf("Parse(%q) failed rule %q, want %q (%v)", raw, rule, tc.rule, err)
				}
				if e.Details["uri"] != raw && !strings.Contains(raw, "\xff") {
					t.Errorf("Parse(%q) details uri = %v", raw, e.Details["uri"])
				}
				if !strings.Contains(e.Message, string(tc.rule)) {
					t.Errorf("Parse(%q) message %q does not name rule %s", raw, e.Message, tc.rule)
				}
			}
		})
	}
}

func TestEveryCategoryAccepted(t *testing.T) {
	cats := Categories()
	if len(cats) != 19 {
		t.Fatalf("Categories() has %d entries, want 19", len(cats))
	}
	u, err := Parse("dpe://h/d/pages/0?categories=" + strings.Join(cats, ","))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(u.Query.Categories, cats) {
		t.Errorf("categories = %v", u.Query.Categories)
	}
	cats[0] = "mutated"
	if Categories()[0] != CategoryText {
		t.Error("Categories() shares its backing array with callers")
	}
}

func TestQueryCombinations(t *testing.T) {
	tests := []struct {
		raw  string
		want Query
		str  string // canonical String()
	}{
		{"dpe://h/d?depth=pages&offset=0&limit=10", Query{Depth: DepthPages, Offset: new(0), Limit: new(10)},
			"dpe://h/d?depth=pages&offset=0&limit=10"},
		{"dpe://h/d/pages/0?categories=table,pivot_table&format=markdown", Query{Format: FormatMarkdown, Categories: []string{"table", "pivot_table"}},
			"dpe://h/d/pages/0?format=markdown&categories=table,pivot_table"},
		{"dpe://h/d/elements/tbl-001?format=json", Query{Format: FormatJSON}, "dpe://h/d/elements/tbl-001?format=json"},
		{"dpe://h?format=text", Query{Format: FormatText}, "dpe://h?format=text"},
		{"dpe://h/d?categories=table%2Cchart", Query{Categories: []string{"table", "chart"}}, "dpe://h/d?categories=table,chart"},
		{"dpe://h/d?offset=007&limit=01", Query{Offset: new(7), Limit: new(1)}, "dpe://h/d?offset=7&limit=1"},
		{"dpe://h/d?", Query{}, "dpe://h/d"},
		{"dpe://h/d?&&", Query{}, "dpe://h/d"},
		{"dpe://h/d?b=2&a=1&a=0&format=text", Query{Format: FormatText, Extra: url.Values{"a": {"1", "0"}, "b": {"2"}}},
			"dpe://h/d?format=text&a=1&a=0&b=2"},
		{"dpe://h/d?note=a+b%26c", Query{Extra: url.Values{"note": {"a b&c"}}}, "dpe://h/d?note=a%20b%26c"},
	}
	for _, tc := range tests {
		u, err := Parse(tc.raw)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.raw, err)
		}
		if !reflect.DeepEqual(u.Query, tc.want) {
			t.Errorf("Parse(%q).Query = %+v, want %+v", tc.raw, u.Query, tc.want)
		}
		if got := u.String(); got != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.raw, got, tc.str)
		}
		if _, q, _ := strings.Cut(tc.raw, "?"); u.RawQuery != q {
			t.Errorf("Parse(%q).RawQuery = %q", tc.raw, u.RawQuery)
		}
	}
}

func TestDefaults(t *testing.T) {
	u, _ := Parse("dpe://h/d")
	q := u.Query
	if q.FormatOrDefault() != "json" || q.DepthOrDefault() != "metadata" || q.OffsetOrDefault() != 0 || q.LimitOrDefault() != 20 {
		t.Errorf("defaults: %q %q %d %d", q.FormatOrDefault(), q.DepthOrDefault(), q.OffsetOrDefault(), q.LimitOrDefault())
	}
	if !q.AllowsCategory("chart") {
		t.Error("no categories filter must allow every category")
	}
	u, _ = Parse("dpe://h/d?format=text&depth=pages&offset=3&limit=7&categories=table")
	q = u.Query
	if q.FormatOrDefault() != "text" || q.DepthOrDefault() != "pages" || q.OffsetOrDefault() != 3 || q.LimitOrDefault() != 7 {
		t.Errorf("explicit: %q %q %d %d", q.FormatOrDefault(), q.DepthOrDefault(), q.OffsetOrDefault(), q.LimitOrDefault())
	}
	if !q.AllowsCategory("table") || q.AllowsCategory("chart") {
		t.Error("categories filter")
	}
}

func TestPercentEncoding(t *testing.T) {
	tests := []struct {
		raw  string
		want URI
		str  string
	}{
		{"dpe://h/a%2Fb", Document("h", "a/b"), "dpe://h/a%2Fb"},
		{"dpe://h/%E5%B9%B4%E6%8A%A5", Document("h", "年报"), "dpe://h/%E5%B9%B4%E6%8A%A5"},
		{"dpe://h/年报", Document("h", "年报"), "dpe://h/%E5%B9%B4%E6%8A%A5"},
		{"dpe://h/file%20name.pdf/elements/a%3Fb%23c", Element("h", "file name.pdf", "a?b#c"), "dpe://h/file%20name.pdf/elements/a%3Fb%23c"},
		{"dpe://h/a+b/elements/x%2By", Element("h", "a+b", "x+y"), "dpe://h/a+b/elements/x+y"},
		{"dpe://h/Q1:report@2026/pages/3", Page("h", "Q1:report@2026", 3), "dpe://h/Q1:report@2026/pages/3"},
		{"dpe://localhost:8080/d", Document("localhost:8080", "d"), "dpe://localhost:8080/d"},
		{"dpe://my%20host/d", Document("my host", "d"), "dpe://my%20host/d"},
		{"dpe://h/100%25", Document("h", "100%"), "dpe://h/100%25"},
	}
	for _, tc := range tests {
		u, err := Parse(tc.raw)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.raw, err)
		}
		if !reflect.DeepEqual(u, tc.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.raw, u, tc.want)
		}
		if got := u.String(); got != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.raw, got, tc.str)
		}
	}
}

func TestBuild(t *testing.T) {
	good := []struct {
		u    URI
		want string
	}{
		{Catalogue("com.example.docs"), "dpe://com.example.docs"},
		{Document("h", "rpt-2026"), "dpe://h/rpt-2026"},
		{Page("h", "rpt", 0), "dpe://h/rpt/pages/0"},
		{Element("h", "a/b", "x y"), "dpe://h/a%2Fb/elements/x%20y"},
		{URI{Host: "h", DocRef: "d", Query: Query{Depth: DepthPages, Offset: new(0), Limit: new(10)}}, "dpe://h/d?depth=pages&offset=0&limit=10"},
	}
	for _, tc := range good {
		got, err := Build(tc.u)
		if err != nil || got != tc.want {
			t.Errorf("Build(%+v) = %q, %v; want %q", tc.u, got, err, tc.want)
		}
	}
	bad := []struct {
		u    URI
		rule Rule
	}{
		{URI{}, RuleHost},
		{URI{Host: "\xff"}, RuleHost},
		{URI{Host: "h", HasPage: true}, RuleDocRef},
		{URI{Host: "h", ElementID: "e"}, RuleDocRef},
		{URI{Host: "h", DocRef: "d", HasPage: true, ElementID: "e"}, RuleSubPath},
		{Page("h", "d", -1), RuleSubPath},
		{URI{Host: "h", DocRef: "d", Query: Query{Format: "xml"}}, RuleFormat},
		{URI{Host: "h", DocRef: "d", Query: Query{Depth: "deep"}}, RuleDepth},
		{URI{Host: "h", DocRef: "d", Query: Query{Offset: new(-1)}}, RuleOffset},
		{URI{Host: "h", DocRef: "d", Query: Query{Limit: new(0)}}, RuleLimit},
		{URI{Host: "h", DocRef: "d", Query: Query{Categories: []string{"table", "bogus"}}}, RuleCategories},
		{URI{Host: "h", DocRef: "d", Query: Query{Extra: url.Values{"limit": {"5"}}}}, RuleQuery},
	}
	for _, tc := range bad {
		_, err := Build(tc.u)
		if rule, _ := RuleOf(err); rule != tc.rule {
			t.Errorf("Build(%+v) error %v, want rule %s", tc.u, err, tc.rule)
		}
	}
}

func TestIsDPE(t *testing.T) {
	for raw, want := range map[string]bool{
		"dpe://h": true, "DPE://h/d": true, "dpe://": true,
		"dpe:/h": false, "window://h": false, "dpe": false, "": false, "dpex://h": false,
	} {
		if got := IsDPE(raw); got != want {
			t.Errorf("IsDPE(%q) = %v", raw, got)
		}
	}
}

func TestDetailsURIBounded(t *testing.T) {
	raw := "dpe://h/d?format=" + strings.Repeat("x", 10000)
	_, err := Parse(raw)
	e, _ := smcp.AsError(err)
	if e == nil || len(e.Details["uri"].(string)) > maxDetailURI+3 {
		t.Fatalf("details uri not bounded: %v", err)
	}
	if e.Proto().GetDetails() == nil {
		t.Error("details must survive conversion to the wire form")
	}
}

// roundTrip is the property FuzzParse checks: an accepted URI renders to a
// string that parses back to the same value, and rendering is idempotent.
func roundTrip(t *testing.T, raw string) {
	u, err := Parse(raw)
	if err != nil {
		if _, ok := RuleOf(err); !ok {
			t.Fatalf("Parse(%q) error without a rule: %v", raw, err)
		}
		return
	}
	s, err := Build(u)
	if err != nil {
		t.Fatalf("Parse(%q) accepted but Build refused %+v: %v", raw, u, err)
	}
	u2, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q) -> %q refused: %v", raw, s, err)
	}
	u.RawQuery, u2.RawQuery = "", ""
	if !reflect.DeepEqual(u, u2) {
		t.Fatalf("round trip of %q via %q:\n got %+v\nwant %+v", raw, s, u2, u)
	}
	if s2 := u2.String(); s2 != s {
		t.Fatalf("String not canonical: %q then %q", s, s2)
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"dpe://com.example.docs",
		"dpe://com.example.docs/rpt-2026?depth=pages&offset=0&limit=10",
		"dpe://com.example.docs/rpt-2026/pages/0?categories=table,pivot_table&format=markdown",
		"dpe://com.example.docs/rpt-2026/elements/tbl-001?format=json",
		"dpe://h/a%2Fb/elements/x%20y?note=a+b&x=1&x=2",
		"DPE://h/", "dpe://", "dpe:", "", "dpe://h/d#f", "dpe://h/d?a;b", "dpe://h//pages/1",
	} {
		f.Add(seed)
	}
	f.Fuzz(roundTrip)
}

func TestRoundTripSeeds(t *testing.T) {
	for _, raw := range []string{
		"dpe://h/d?categories=table&categories=chart", "dpe://h/d?=v", "dpe://h/d?k", "dpe://%2F/%2F/elements/%2F",
	} {
		roundTrip(t, raw)
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("dpe://com.example.docs/rpt-2026"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFirstFailingRuleIsDeterministic(t *testing.T) {
	for range 50 {
		_, err := Parse("dpe://h/d?categories=bogus&limit=0&offset=-1&depth=x&format=xml")
		if rule, _ := RuleOf(err); rule != RuleFormat {
			t.Fatalf("rule = %q, want format (checked first)", rule)
		}
	}
}
