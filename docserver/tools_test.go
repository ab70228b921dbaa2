package docserver

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
)

// callTool calls a tool through the client and decodes its structured
// result into out. It fails the test on a protocol error or a tool error.
func (c *testClient) callTool(name string, args map[string]any, out any) string {
	c.t.Helper()
	res := c.callToolResult(name, args)
	if res.IsError {
		c.t.Fatalf("%s %v: tool error %s", name, args, contentText(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		c.t.Fatalf("%s: structured content %s: %v", name, raw, err)
	}
	return contentText(res)
}

func (c *testClient) callToolResult(name string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %v: %v", name, args, err)
	}
	return res
}

func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (c *testClient) search(args map[string]any) (SearchOutput, string) {
	c.t.Helper()
	var out SearchOutput
	text := c.callTool("search_documents", args, &out)
	return out, text
}

func TestToolsListed(t *testing.T) {
	_, c := startServer(t, copyDocs(t), Options{}, false)
	if c.cs.InitializeResult().Capabilities.Tools == nil {
		t.Fatal("tools capability not advertised")
	}
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"search_documents", "list_documents"} {
		tool := tools[name]
		if tool == nil {
			t.Fatalf("%s not listed (got %v)", name, res.Tools)
		}
		if tool.Description == "" || tool.OutputSchema == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: description %q, output schema %v, annotations %+v", name, tool.Description, tool.OutputSchema, tool.Annotations)
		}
	}
	// The published input schema carries the bounds, defaults and enums
	// that agents build their calls from.
	var in struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type    string   `json:"type"`
			Minimum *float64 `json:"minimum"`
			Maximum *float64 `json:"maximum"`
			Default any      `json:"default"`
			Enum    []string `json:"enum"`
		} `json:"properties"`
	}
	raw, _ := json.Marshal(tools["search_documents"].InputSchema)
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	limit := in.Properties["limit"]
	if !slices.Equal(in.Required, []string{"query"}) || limit.Minimum == nil || *limit.Minimum != 1 ||
		limit.Maximum == nil || *limit.Maximum != MaxSearchLimit || limit.Default != float64(DefaultSearchLimit) ||
		!slices.Contains(in.Properties["file_type"].Enum, "xlsx") {
		t.Errorf("search_documents input schema %s", raw)
	}
	raw, _ = json.Marshal(tools["search_documents"].OutputSchema)
	for _, field := range []string{"hits", "total_hits", "element_uri", "snippet", "page_index"} {
		if !strings.Contains(string(raw), `"`+field+`"`) {
			t.Errorf("output schema lacks %s: %s", field, raw)
		}
	}
}

func TestSearchDocuments(t *testing.T) {
	srv, c := startServer(t, copyDocs(t), Options{}, false)
	budget := refOf(t, srv, "budget-2026.xlsx")
	contract := refOf(t, srv, "service-contract.pdf")
	report := refOf(t, srv, "quarterly-report.md")

	tests := []struct {
		name string
		args map[string]any
		// the first hit
		docRef, match, category, snippet string
		page                             int // -1: no page
		hits                             int // total hits; 0: at least one
	}{
		{
			name:   "xlsx sheet cell",
			args:   map[string]any{"query": "ENGINEERING"},
			docRef: budget, match: matchBody, category: "table", page: 0,
			snippet: "Department: Engineering | Q1: 120000 | Q2: 125000 | Q3: 130000 | Q4: 140000",
			hits:    1,
		},
		{
			name:   "pdf page",
			args:   map[string]any{"query": "planned maintenance"},
			docRef: contract, match: matchBody, category: "text", page: 1,
			snippet: "Planned maintenance is announced five working days ahead and does not count against availability.",
			hits:    1,
		},
		{
			name:   "markdown table row",
			args:   map[string]any{"query": "east", "file_type": "md"},
			docRef: report, match: matchBody, category: "table", page: 1,
			snippet: "Region: East | Q2: 1,120 | Q3: 1,310 | Change: +17.0%",
			hits:    2, // the table and the sentence below it
		},
		{
			name:   "document title ranks first",
			args:   map[string]any{"query": "budget"},
			docRef: budget, match: matchTitle, page: -1, snippet: "Budget 2026",
		},
		{
			name:   "keywords",
			args:   map[string]any{"query": "finance"},
			docRef: budget, match: matchMetadata, page: -1,
			snippet: "budget, finance, 2026, Planned spending per department and quarter, with totals computed by formulas.",
		},
		{
			name:   "title before the rest",
			args:   map[string]any{"query": "Platform"},
			docRef: refOf(t, srv, "meeting-notes.txt"), match: matchTitle, page: -1,
			snippet: "Platform team meeting, 3 November 2026",
		},
		{
			name:   "sheet name",
			args:   map[string]any{"query": "headcount"},
			docRef: budget, match: matchHeading, page: 1, snippet: "Headcount",
			hits: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, text := c.search(tc.args)
			if len(out.Hits) == 0 {
				t.Fatalf("no hits: %s", text)
			}
			if tc.hits > 0 && out.TotalHits != tc.hits {
				t.Errorf("%d hits, want %d: %s", out.TotalHits, tc.hits, text)
			}
			h := out.Hits[0]
			if h.DocRef != tc.docRef || h.Match != tc.match || h.Category != tc.category || h.Snippet != tc.snippet {
				t.Errorf("first hit %+v\nwant doc %s match %s category %q snippet %q", h, tc.docRef, tc.match, tc.category, tc.snippet)
			}
			if h.DocumentURI != "dpe://"+host+"/"+h.DocRef || h.Title == "" || h.FileType == "" {
				t.Errorf("first hit document fields %+v", h)
			}
			switch {
			case tc.page < 0:
				if h.PageIndex != nil || h.PageURI != "" || h.ElementURI != "" {
					t.Errorf("document-level hit has page or element: %+v", h)
				}
			case h.PageIndex == nil || *h.PageIndex != tc.page:
				t.Errorf("page %v, want %d", h.PageIndex, tc.page)
			default:
				if want := h.DocumentURI + "/pages/" + strconv.Itoa(tc.page); h.PageURI != want {
					t.Errorf("page uri %s, want %s", h.PageURI, want)
				}
				if tc.category != "" {
					// The element URI reads back the element that matched.
					var el struct {
						Category  string `json:"category"`
						PageIndex int    `json:"page_index"`
					}
					c.readJSON(h.ElementURI, &el)
					if el.Category != tc.category || el.PageIndex != tc.page {
						t.Errorf("element %s is %+v", h.ElementURI, el)
					}
				} else if h.ElementURI != "" {
					t.Errorf("page-title hit has an element: %s", h.ElementURI)
				}
			}
			if !strings.Contains(text, h.Snippet) || !strings.Contains(text, cmp.Or(h.ElementURI, h.PageURI, h.DocumentURI)) {
				t.Errorf("text content does not show the first hit:\n%s", text)
			}
		})
	}
}

func TestSearchRankingAndLimit(t *testing.T) {
	_, c := startServer(t, copyDocs(t), Options{}, false)
	out, text := c.search(map[string]any{"query": "platform"})
	rank := map[string]int{matchTitle: 0, matchMetadata: 1, matchHeading: 2, matchBody: 3}
	seen := map[string]bool{}
	for i, h := range out.Hits {
		if i > 0 && rank[h.Match] < rank[out.Hits[i-1].Match] {
			t.Errorf("hit %d (%s) ranks after a %s hit:\n%s", i, h.Match, out.Hits[i-1].Match, text)
		}
		// A Markdown section's title is its heading: one hit, not two.
		key := h.DocRef + "|" + strconv.Itoa(deref(h.PageIndex)) + "|" + h.Snippet
		if seen[key] {
			t.Errorf("duplicate hit %+v", h)
		}
		seen[key] = true
	}
	// The meeting notes' title; the report's summary; its section heading
	// (once, not again as the page title); then body text.
	var matches []string
	for _, h := range out.Hits[:min(3, len(out.Hits))] {
		matches = append(matches, h.Match+":"+h.Snippet)
	}
	want := []string{
		"title:Platform team meeting, 3 November 2026",
		"metadata:operations, quarterly, report, Revenue, incidents and the platform roadmap for the third quarter of 2026.",
		"heading:Platform roadmap",
	}
	if !slices.Equal(matches, want) || out.TotalHits < 5 {
		t.Fatalf("platform: first hits %q, want %q, then body hits:\n%s", matches, want, text)
	}

	limited, _ := c.search(map[string]any{"query": "platform", "limit": 1})
	if len(limited.Hits) != 1 || limited.TotalHits != out.TotalHits || limited.Hits[0] != out.Hits[0] {
		t.Errorf("limit 1: %+v, want the first of %d", limited, out.TotalHits)
	}

	// The header of a CSV split into pages is one hit, not one per page.
	csv, text := c.search(map[string]any{"query": "revenue_eur", "file_type": "csv"})
	if csv.TotalHits != 2 || csv.Hits[0].Match != matchMetadata || csv.Hits[1].Snippet != "columns: month | region | product | units | revenue_eur" ||
		*csv.Hits[1].PageIndex != 0 {
		t.Errorf("revenue_eur in csv: want the summary and the header of page 0:\n%s", text)
	}

	// Every word must occur in a hit.
	both, _ := c.search(map[string]any{"query": "checkout latency"})
	for _, h := range both.Hits {
		l := strings.ToLower(h.Snippet)
		if !strings.Contains(l, "checkout") || !strings.Contains(l, "latency") {
			t.Errorf("hit without both words: %+v", h)
		}
	}
	if both.TotalHits == 0 {
		t.Error("checkout latency: no hits")
	}
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func TestSearchMissAndBadArguments(t *testing.T) {
	_, c := startServer(t, copyDocs(t), Options{}, false)
	out, text := c.search(map[string]any{"query": "zebracorn"})
	if out.TotalHits != 0 || out.Hits == nil || len(out.Hits) != 0 {
		t.Errorf("miss: %+v", out)
	}
	if !strings.Contains(text, `No match for "zebracorn"`) {
		t.Errorf("miss text %q", text)
	}
	out, _ = c.search(map[string]any{"query": "engineering", "file_type": "pdf"})
	if out.TotalHits != 0 {
		t.Errorf("file_type pdf still finds the xlsx: %+v", out)
	}

	bad := []struct {
		name string
		args map[string]any
		want string
	}{
		{"no query", map[string]any{}, "query"},
		{"empty query", map[string]any{"query": ""}, "query"},
		{"blank query", map[string]any{"query": "  \t "}, "no words"},
		{"query not a string", map[string]any{"query": 42}, "query"},
		{"limit zero", map[string]any{"query": "a", "limit": 0}, "limit"},
		{"limit too big", map[string]any{"query": "a", "limit": 51}, "limit"},
		{"limit not integer", map[string]any{"query": "a", "limit": 2.5}, "limit"},
		{"unknown file_type", map[string]any{"query": "a", "file_type": "docx"}, "file_type"},
		{"unknown argument", map[string]any{"query": "a", "page": 2}, "page"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			res := c.callToolResult("search_documents", tc.args)
			if !res.IsError {
				t.Fatalf("%v: no tool error: %s", tc.args, contentText(res))
			}
			if msg := contentText(res); !strings.Contains(msg, tc.want) {
				t.Errorf("%v: error %q does not name %q", tc.args, msg, tc.want)
			}
		})
	}
	res := c.callToolResult("list_documents", map[string]any{"file_type": "docx"})
	if !res.IsError || !strings.Contains(contentText(res), "file_type") {
		t.Errorf("list_documents with file_type docx: %+v", res)
	}
}

func TestListDocuments(t *testing.T) {
	srv, c := startServer(t, copyDocs(t), Options{}, false)
	var all ListOutput
	text := c.callTool("list_documents", nil, &all)
	if all.TotalCount != 7 || len(all.Documents) != 7 {
		t.Fatalf("list_documents: %d documents (total %d), want the 7 examples", len(all.Documents), all.TotalCount)
	}
	for _, d := range all.Documents {
		if d.Title == "" || d.PageCount == 0 || d.URI != "dpe://"+host+"/"+d.DocRef || d.FileType == "" {
			t.Errorf("document %+v", d)
		}
		if !strings.Contains(text, d.URI) {
			t.Errorf("text content lacks %s:\n%s", d.URI, text)
		}
	}
	var pdfs ListOutput
	c.callTool("list_documents", map[string]any{"file_type": "pdf"}, &pdfs)
	if pdfs.TotalCount != 1 || pdfs.Documents[0].DocRef != refOf(t, srv, "service-contract.pdf") || pdfs.Documents[0].PageCount != 3 {
		t.Errorf("pdf documents: %+v", pdfs)
	}
	var none ListOutput
	c.callTool("list_documents", map[string]any{"file_type": "tsv"}, &none)
	if none.TotalCount != 0 || none.Documents == nil {
		t.Errorf("tsv documents: %+v", none)
	}
}

// TestSearchFollowsWatcher edits, adds and removes files under a watched
// root: search answers from the new content once the change is announced.
func TestSearchFollowsWatcher(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{Debounce: 20 * time.Millisecond}, true)
	report := refOf(t, srv, "quarterly-report.md")
	catalog := "dpe://" + host
	c.subscribe(catalog)
	c.subscribe(catalog + "/" + report)

	testfiles.Write(t, filepath.Join(root, "quarterly-report.md"), "# Q3 2026 Operations Report\n\n## Outlook\n\nThe zebracorn project starts in October.\n")
	c.updatesUntil(catalog + "/" + report)
	out, text := c.search(map[string]any{"query": "zebracorn"})
	if out.TotalHits != 1 || out.Hits[0].DocRef != report || out.Hits[0].Snippet != "The zebracorn project starts in October." {
		t.Fatalf("after the edit: %s", text)
	}
	if old, _ := c.search(map[string]any{"query": "circuit breaker"}); old.TotalHits != 0 {
		t.Errorf("old content still found: %+v", old)
	}

	testfiles.Write(t, filepath.Join(root, "new", "plan.txt"), "Zebracorn launch plan.\n")
	c.updatesUntil(catalog)
	plan := refOf(t, srv, "new/plan.txt")
	out, text = c.search(map[string]any{"query": "zebracorn"})
	// The new file's title (its first line) and text, and the report.
	if out.TotalHits != 3 || out.Hits[0].DocRef != plan || out.Hits[0].Match != matchTitle {
		t.Fatalf("after adding a file: %s", text)
	}

	if err := os.Remove(filepath.Join(root, "quarterly-report.md")); err != nil {
		t.Fatal(err)
	}
	c.updatesUntil(catalog)
	out, text = c.search(map[string]any{"query": "zebracorn"})
	if out.TotalHits != 2 || out.Hits[0].DocRef != plan || out.Hits[1].DocRef != plan {
		t.Fatalf("after removing the report: %s", text)
	}
}
