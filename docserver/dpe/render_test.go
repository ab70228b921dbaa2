package dpe

import (
	"strings"
	"testing"
)

// TestElementMarkdown covers the rendering rules of seed 004, one per category.
func TestElementMarkdown(t *testing.T) {
	tests := []struct {
		name     string
		el       Element
		markdown string
		text     string
	}{
		{"heading", Element{Category: CategoryHeading, Content: Heading{Level: 3, Text: "Costs"}}, "### Costs\n", "Costs\n"},
		{"heading level clamps", Element{Category: CategoryHeading, Content: Heading{Level: 9, Text: "Deep"}}, "###### Deep\n", "Deep\n"},
		{"text keeps line breaks", Element{Category: CategoryText, Content: Text{Text: "line one\nline two"}}, "line one\nline two\n", "line one\nline two\n"},
		{"table", Element{Category: CategoryTable, Content: Table{Headers: []string{"a", "b|c"}, Rows: [][]string{{"1"}, {"2", "x\ny", "extra"}}}},
			"| a | b\\|c |  |\n| --- | --- | --- |\n| 1 |  |  |\n| 2 | x<br>y | extra |\n", "a\tb|c\n1\n2\tx\ny\textra\n"},
		{"unordered list", Element{Category: CategoryList, Content: List{Items: []string{"a", "b\n  - c"}}}, "- a\n- b\n    - c\n", "- a\n- b\n    - c\n"},
		{"ordered list", Element{Category: CategoryList, Content: List{Ordered: true, Start: 7, Items: []string{"x", "y"}}}, "7. x\n8. y\n", "7. x\n8. y\n"},
		{"code", Element{Category: CategoryCode, Content: Code{Language: "go", Code: "x := 1\n"}}, "```go\nx := 1\n```\n", "x := 1\n"},
		{"code with fences inside", Element{Category: CategoryCode, Content: Code{Code: "```\nin\n```"}}, "````\n```\nin\n```\n````\n", "```\nin\n```\n"},
		{"image", Element{Category: CategoryImage, Content: Image{Alt: "chart [1]", URL: "c.png"}}, "![chart \\[1\\]](c.png)\n", "[image: chart [1]] c.png\n"},
		{"image without url", Element{Category: CategoryImage, Content: Image{Alt: "scanned logo"}}, "[图片: scanned logo]\n", "[image: scanned logo] \n"},
		{"link", Element{Category: CategoryLink, Content: Link{Text: "docs", URL: "https://d.example"}}, "[docs](https://d.example)\n", "docs <https://d.example>\n"},
		{"formula", Element{Category: CategoryFormula, Content: Formula{Expression: "=SUM(A1:A3)", Cell: "A4", Value: "6"}}, "$ =SUM(A1:A3) $\n", "A4: =SUM(A1:A3) → 6\n"},
		{"other categories", Element{Category: CategorySeparator, Summary: "Separator", Content: Separator{}}, "[separator: Separator]\n", "[separator: Separator]\n"},
		{"header", Element{Category: CategoryHeader, Summary: "ACME confidential", Content: Text{Text: "ACME confidential"}}, "[header: ACME confidential]\n", "ACME confidential\n"},
		{"unknown content", Element{Category: "chart", Summary: "Revenue trend", Content: map[string]any{"chart_type": "line"}}, "[chart: Revenue trend]\n", "[chart: Revenue trend]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var md, txt strings.Builder
			tc.el.markdown(&md)
			tc.el.text(&txt)
			if md.String() != tc.markdown {
				t.Errorf("markdown %q, want %q", md.String(), tc.markdown)
			}
			if txt.String() != tc.text {
				t.Errorf("text %q, want %q", txt.String(), tc.text)
			}
		})
	}
}

func TestAssignIDs(t *testing.T) {
	d := &Document{Pages: []Page{
		{Elements: []Element{{Category: CategorySeparator, Content: Separator{}}, {Category: CategoryText, Content: Text{Text: "a"}}}},
		{Elements: []Element{{Category: CategorySeparator, Content: Separator{}}, {Category: "widget", Content: Text{Text: "a"}}}},
	}}
	d.Finalize()
	ids := []string{d.Pages[0].Elements[0].ID, d.Pages[0].Elements[1].ID, d.Pages[1].Elements[0].ID, d.Pages[1].Elements[1].ID}
	if ids[2] != ids[0]+"-2" || !strings.HasPrefix(ids[0], "sep-") || !strings.HasPrefix(ids[1], "txt-") || !strings.HasPrefix(ids[3], "widget-") {
		t.Errorf("ids %v", ids)
	}
	if ids[1][4:] == ids[3][7:] {
		t.Error("the category is not part of the id hash")
	}
	if d.Pages[0].Elements[1].Summary != "a" || d.Pages[0].Elements[0].Summary != "Separator" {
		t.Errorf("summaries not filled: %+v", d.Pages[0].Elements)
	}
	e, page, ok := d.FindElement(ids[3])
	if !ok || page != 1 || e.Category != "widget" {
		t.Errorf("FindElement(%s) = %v, %d, %v", ids[3], e, page, ok)
	}
}

func TestTruncate(t *testing.T) {
	for in, want := range map[string]string{"short": "short", "exactly10!": "exactly10!", "this is too long": "this is t…", "二〇二六年度财务报告全文": "二〇二六年度财务报…"} {
		if got := Truncate(in, 10); got != want {
			t.Errorf("Truncate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderUnknownFormat(t *testing.T) {
	if _, err := Render(Catalog{}, "xml"); err == nil {
		t.Error("format xml accepted")
	}
	out, err := Render(Catalog{Documents: []DocumentSummary{}}, "")
	if err != nil || out != "{\n  \"documents\": [],\n  \"total_count\": 0\n}" {
		t.Errorf("empty catalog %q %v", out, err)
	}
}
