package formats

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

func mustParse(t *testing.T, name, data string, opts Options) *dpe.Document {
	t.Helper()
	doc, err := Parse(name, []byte(data), opts)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return doc
}

// outline is a compact view of a document: page titles and, per page, the
// element categories.
func outline(d *dpe.Document) string {
	var b strings.Builder
	for i, p := range d.Pages {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(p.Title + ":")
		for _, e := range p.Elements {
			b.WriteString(" " + e.Category)
		}
	}
	return b.String()
}

func TestMarkdownPages(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"no headings", "Just text.\n\nMore text.\n", "notes: text text"},
		{"one title", "# Title\n\nBody.\n", "Title: heading text"},
		{"title and sections", "# T\n\nIntro.\n\n## A\n\na\n\n## B\n\nb\n", "T: heading text | A: heading text | B: heading text"},
		{"repeated h1", "# A\n\na\n\n## a1\n\n# B\n\nb\n", "A: heading text heading | B: heading text"},
		{"preamble before sections", "Preamble.\n\n## A\n\na\n\n## B\n\nb\n", "notes: text | A: heading text | B: heading text"},
		{"single h2 does not split", "# T\n\n## Only\n\ntext\n", "T: heading heading text"},
		{"empty", "", "notes:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := outline(mustParse(t, "notes.md", tc.src, Options{})); got != tc.want {
				t.Errorf("pages %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMarkdownElements(t *testing.T) {
	src := "---\ntitle: \"Front\"\ntags:\n  - a\n  - b\ndescription: From the front matter.\n---\n" +
		"# Heading\n\n" +
		"Some *emphasis* and a [link](https://x.example) inside **bold [two](https://y.example)**.\n\n" +
		"![alt text](pic.png \"Pic\")\n\n" +
		"<https://auto.example> <me@example.com>\n\n" +
		"<!-- a comment -->\n\n" +
		"| h1 | h2 |\n|----|----|\n| a \\| b | `c` |\n\n" +
		"3. three\n4. four\n   - nested\n\n" +
		"Para &amp; more.\n\n" +
		"    indented code\n\n" +
		"> quoted\n> text\n\n" +
		"***\n"
	doc := mustParse(t, "x.md", src, Options{})
	if doc.Title != "Front" || !reflect.DeepEqual(doc.Keywords, []string{"a", "b"}) || doc.Summary != "From the front matter." {
		t.Errorf("metadata: title %q keywords %v summary %q", doc.Title, doc.Keywords, doc.Summary)
	}
	var got []any
	var lines []any
	for _, e := range doc.Pages[0].Elements {
		got = append(got, e.Content)
		lines = append(lines, e.Metadata["lines"])
	}
	want := []any{
		dpe.Heading{Level: 1, Text: "Heading"},
		dpe.Text{Text: "Some emphasis and a link inside bold two."},
		dpe.Link{Text: "link", URL: "https://x.example"},
		dpe.Link{Text: "two", URL: "https://y.example"},
		dpe.Image{Alt: "alt text", URL: "pic.png", Title: "Pic"},
		dpe.Link{Text: "https://auto.example", URL: "https://auto.example"},
		dpe.Link{Text: "me@example.com", URL: "mailto:me@example.com"},
		dpe.Table{Headers: []string{"h1", "h2"}, Rows: [][]string{{"a | b", "c"}}},
		dpe.List{Ordered: true, Start: 3, Items: []string{"three", "four\n  - nested"}},
		dpe.Text{Text: "Para & more."},
		dpe.Code{Code: "indented code\n"},
		dpe.Text{Text: "> quoted\n> text"},
		dpe.Separator{},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w any
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("element %d: %#v, want %#v", i, g, w)
			}
		}
	}
	// Line numbers count the front matter (7 lines).
	if lines[0] != "8" || lines[7] != "18-20" {
		t.Errorf("source lines %v", lines)
	}
}

func TestMarkdownMetadataFallbacks(t *testing.T) {
	doc := mustParse(t, "my_report-v2.md", "Intro paragraph here.\n\n## A\n\nx\n\n## B\n\ny\n", Options{})
	if doc.Title != "my report v2" || doc.Summary != "Intro paragraph here." {
		t.Errorf("title %q summary %q", doc.Title, doc.Summary)
	}
	doc = mustParse(t, "k.md", "---\nkeywords: x, y\n---\n# Real title\n", Options{})
	if doc.Title != "Real title" || !reflect.DeepEqual(doc.Keywords, []string{"x", "y"}) {
		t.Errorf("title %q keywords %v", doc.Title, doc.Keywords)
	}
	doc = mustParse(t, "k.md", "---\nnot closed\n# Title\n", Options{})
	if doc.Title != "Title" || len(doc.Keywords) != 0 {
		t.Errorf("unclosed front matter is body text: title %q keywords %v", doc.Title, doc.Keywords)
	}
}

func TestTextPages(t *testing.T) {
	src := "Title line\n\np1 a\np1 b\n\np2 a\np2 b\np2 c\n\r\np3\n\fp4 after form feed\n"
	doc := mustParse(t, "t.txt", src, Options{LinesPerPage: 4})
	var pages []string
	for _, p := range doc.Pages {
		var texts []string
		for _, e := range p.Elements {
			texts = append(texts, e.Content.(dpe.Text).Text)
		}
		pages = append(pages, p.Title+"="+strings.Join(texts, "/"))
	}
	want := []string{
		"Lines 1-4=Title line/p1 a\np1 b",
		"Lines 6-10=p2 a\np2 b\np2 c/p3",
		"Lines 11-11=p4 after form feed",
	}
	if !reflect.DeepEqual(pages, want) {
		t.Errorf("pages\n%q\nwant\n%q", pages, want)
	}
	if doc.Title != "Title line" || doc.Summary != "p1 a p1 b" {
		t.Errorf("title %q summary %q", doc.Title, doc.Summary)
	}

	// A paragraph longer than a page is cut at line boundaries.
	long := strings.Repeat("line\n", 7)
	doc = mustParse(t, "long.txt", long, Options{LinesPerPage: 3})
	if got := outline(doc); got != "Lines 1-3: text | Lines 4-6: text | Lines 7-7: text" {
		t.Errorf("long paragraph pages %q", got)
	}
	if doc := mustParse(t, "empty.txt", "", Options{}); len(doc.Pages) != 0 {
		t.Errorf("empty file has %d pages", len(doc.Pages))
	}
	if _, err := Parse("bin.txt", []byte("a\x00b"), Options{}); err == nil {
		t.Error("binary text file parsed")
	}
}

func TestCSV(t *testing.T) {
	doc := mustParse(t, "d.csv", "a,b\n1,2\n3,\"4,5\"\n6\n7,8,9\n", Options{RowsPerPage: 2})
	if got := outline(doc); got != "Rows 1-2: table | Rows 3-4: table" {
		t.Fatalf("pages %q", got)
	}
	second := doc.Pages[1].Elements[0]
	if !reflect.DeepEqual(second.Content, dpe.Table{Headers: []string{"a", "b"}, Rows: [][]string{{"6"}, {"7", "8", "9"}}}) {
		t.Errorf("second chunk %#v", second.Content)
	}
	if second.Metadata["source_range"] != "A4:C5" {
		t.Errorf("source range %v", second.Metadata["source_range"])
	}
	if doc.Summary != "CSV table, 4 rows × 3 columns: a, b" {
		t.Errorf("summary %q", doc.Summary)
	}
	tsv := mustParse(t, "d.tsv", "x\ty\n1\t2\n", Options{})
	if !reflect.DeepEqual(tsv.Pages[0].Elements[0].Content, dpe.Table{Headers: []string{"x", "y"}, Rows: [][]string{{"1", "2"}}}) {
		t.Errorf("tsv %#v", tsv.Pages[0].Elements[0].Content)
	}
	if got := outline(mustParse(t, "h.csv", "only,header\n", Options{})); got != "Header only: table" {
		t.Errorf("header-only csv %q", got)
	}
	if doc := mustParse(t, "e.csv", "", Options{}); len(doc.Pages) != 0 {
		t.Errorf("empty csv has pages")
	}
}

func TestJSON(t *testing.T) {
	src := `{"name":"Inv","tags":["a","b"],"n":1.50,"ok":true,"none":null,
		"rows":[{"x":1,"y":"a"},{"y":"b","z":[1,2]}],
		"cfg":{"a":{"b":1},"list":[1,2],"objs":[{"k":1}],"empty":{}}}`
	doc := mustParse(t, "i.json", src, Options{})
	if doc.Title != "Inv" || !reflect.DeepEqual(doc.Keywords, []string{"a", "b"}) {
		t.Errorf("title %q keywords %v", doc.Title, doc.Keywords)
	}
	if got := outline(doc); got != "Fields: table | tags: list | rows: table | cfg: table" {
		t.Fatalf("pages %q", got)
	}
	wantFields := dpe.Table{Headers: []string{"key", "value"}, Rows: [][]string{{"name", "Inv"}, {"n", "1.50"}, {"ok", "true"}, {"none", "null"}}}
	if got := doc.Pages[0].Elements[0].Content; !reflect.DeepEqual(got, wantFields) {
		t.Errorf("fields %#v", got)
	}
	wantRows := dpe.Table{Headers: []string{"x", "y", "z"}, Rows: [][]string{{"1", "a", ""}, {"", "b", "[1,2]"}}}
	if got := doc.Pages[2].Elements[0].Content; !reflect.DeepEqual(got, wantRows) {
		t.Errorf("rows %#v", got)
	}
	wantCfg := dpe.Table{Headers: []string{"path", "value"}, Rows: [][]string{{"a.b", "1"}, {"list", "[1,2]"}, {"objs[0].k", "1"}, {"empty", "{}"}}}
	if got := doc.Pages[3].Elements[0].Content; !reflect.DeepEqual(got, wantCfg) {
		t.Errorf("cfg %#v", got)
	}

	arr := mustParse(t, "a.json", `[1,2,3,4,5]`, Options{RowsPerPage: 2})
	if got := outline(arr); got != "Items 0-1: list | Items 2-3: list | Items 4-4: list" {
		t.Errorf("array pages %q", got)
	}
	long := mustParse(t, "o.json", `{"k":[1,2,3]}`, Options{RowsPerPage: 2})
	if got := outline(long); got != "k [0-1]: list | k [2-2]: list" {
		t.Errorf("long value pages %q", got)
	}
	if got := outline(mustParse(t, "s.json", `"hi"`, Options{})); got != "Value: text" {
		t.Errorf("scalar %q", got)
	}
	for _, bad := range []string{`{"a":`, `[1] [2]`, `{"a" 1}`, strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if _, err := Parse("bad.json", []byte(bad), Options{}); err == nil {
			t.Errorf("invalid JSON %.20q parsed", bad)
		}
	}
}

func TestXLSX(t *testing.T) {
	f := excelize.NewFile()
	_ = f.SetDocProps(&excelize.DocProperties{Title: "Book", Keywords: "k1; k2", Subject: "Subject line"})
	_ = f.SetSheetName("Sheet1", "Data")
	_ = f.SetSheetRow("Data", "B2", &[]any{"name", "qty"})
	_ = f.SetSheetRow("Data", "B3", &[]any{"a", 1})
	_ = f.SetSheetRow("Data", "B4", &[]any{"b", 2})
	_ = f.SetCellFormula("Data", "C5", "SUM(C3:C4)")
	_ = f.SetSheetRow("Data", "A8", &[]any{"note"})
	_, _ = f.NewSheet("Empty")
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	doc := mustParse(t, "b.xlsx", buf.String(), Options{})
	if doc.Title != "Book" || !reflect.DeepEqual(doc.Keywords, []string{"k1", "k2"}) || doc.Summary != "Subject line" {
		t.Errorf("metadata %q %v %q", doc.Title, doc.Keywords, doc.Summary)
	}
	if got := outline(doc); got != "Data: table table formula | Empty:" {
		t.Fatalf("pages %q", got)
	}
	first := doc.Pages[0].Elements[0]
	if !reflect.DeepEqual(first.Content, dpe.Table{Headers: []string{"name", "qty"}, Rows: [][]string{{"a", "1"}, {"b", "2"}, {"", "3"}}}) {
		t.Errorf("first table %#v", first.Content)
	}
	if first.Metadata["source_range"] != "B2:C5" || first.Metadata["has_formulas"] != true {
		t.Errorf("first table metadata %v", first.Metadata)
	}
	if fx := doc.Pages[0].Elements[2].Content.(dpe.Formula); fx.Expression != "=SUM(C3:C4)" || fx.Cell != "C5" {
		t.Errorf("formula %#v", fx)
	}
}

func makePDF(t *testing.T, pages ...[]string) []byte {
	t.Helper()
	p := fpdf.New("P", "mm", "A4", "")
	p.SetTitle("PDF title", true)
	p.SetKeywords("one, two", true)
	for _, paras := range pages {
		p.AddPage()
		p.SetFont("Helvetica", "", 11)
		for _, para := range paras {
			p.MultiCell(0, 6, para, "", "L", false)
			p.Ln(6)
		}
	}
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPDF(t *testing.T) {
	data := makePDF(t, []string{"Heading", "A first paragraph that is long enough to be a summary of the file."}, []string{}, []string{"Last page."})
	doc := mustParse(t, "p.pdf", string(data), Options{})
	if doc.Title != "PDF title" || !reflect.DeepEqual(doc.Keywords, []string{"one", "two"}) ||
		doc.Summary != "A first paragraph that is long enough to be a summary of the file." {
		t.Errorf("metadata %q %v %q", doc.Title, doc.Keywords, doc.Summary)
	}
	if got := outline(doc); got != "Page 1: Heading: text text | Page 2: | Page 3: Last page.: text" {
		t.Errorf("pages %q", got)
	}
	// Cells on one line stay apart.
	p := fpdf.New("P", "mm", "A4", "")
	p.AddPage()
	p.SetFont("Helvetica", "", 11)
	for _, cell := range []string{"Country", "Capital", "Area"} {
		p.CellFormat(40, 7, cell, "1", 0, "L", false, 0, "")
	}
	var buf bytes.Buffer
	if err := p.Output(&buf); err != nil {
		t.Fatal(err)
	}
	cells := mustParse(t, "cells.pdf", buf.String(), Options{})
	if got := cells.Pages[0].Elements[0].Content.(dpe.Text).Text; got != "Country Capital Area" {
		t.Errorf("table cells read as %q", got)
	}

	// Broken PDFs are errors, never panics.
	for i, bad := range [][]byte{[]byte("%PDF-1.4 garbage"), data[:len(data)/2], bytes.ReplaceAll(data, []byte("obj"), []byte("jbo"))} {
		if _, err := Parse("bad.pdf", bad, Options{}); err == nil {
			t.Errorf("broken PDF %d parsed", i)
		}
	}
}

func TestUnsupported(t *testing.T) {
	if _, err := Parse("x.docx", nil, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("docx: %v", err)
	}
	for name, want := range map[string]bool{"a.MD": true, "b.markdown": true, "c.TSV": true, "d.pdf": true, "e.xls": false, "f": false} {
		if Supported(name) != want {
			t.Errorf("Supported(%q) = %v", name, !want)
		}
	}
}

// fuzzDoc checks what every parsed document must satisfy: unique element
// ids, and every view renders in every format.
func fuzzDoc(t *testing.T, doc *dpe.Document, err error) {
	if err != nil {
		return
	}
	doc.DocRef = "d"
	ids := map[string]bool{}
	for i, p := range doc.Pages {
		for _, e := range p.Elements {
			if ids[e.ID] || e.ID == "" {
				t.Fatalf("duplicate or empty id %q", e.ID)
			}
			ids[e.ID] = true
		}
		for _, format := range []string{"json", "markdown", "text"} {
			if _, err := dpe.Render(doc.PageView("h", i, nil), format); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, format := range []string{"json", "markdown", "text"} {
		if _, err := dpe.Render(doc.PagesView("h", 0, 100), format); err != nil {
			t.Fatal(err)
		}
	}
}

// The fuzz targets call the parsers directly: Parse would turn a panic into
// an error and hide the bug.
func fuzzParser(f *testing.F, name string, parse parser, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parse(name, data, Options{}.withDefaults())
		if err == nil {
			doc.Finalize()
		}
		fuzzDoc(t, doc, err)
	})
}

func FuzzMarkdown(f *testing.F) {
	fuzzParser(f, "f.md", parseMarkdown, "# a\n\ntext [l](u)\n\n| a |\n|---|\n| b |\n", "---\ntitle: x\n---\n- a\n  - b\n", "```\ncode\n```\n")
}

func FuzzText(f *testing.F) {
	fuzzParser(f, "f.txt", parseText, "a\n\nb\fc\n", "\r\n\r\n")
}

func FuzzCSV(f *testing.F) {
	fuzzParser(f, "f.csv", parseCSV, "a,b\n1,2\n", "\"a\n")
}

func FuzzJSON(f *testing.F) {
	fuzzParser(f, "f.json", parseJSON, `{"a":[{"b":1}],"c":{"d":[1,{"e":null}]}}`, `[1,"x",true]`, `"s"`)
}

func ExampleParse() {
	doc, err := Parse("notes.md", []byte("# Notes\n\nHello.\n"), Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(doc.FileType, doc.Title, len(doc.Pages), doc.Pages[0].Elements[1].ID)
	// Output: md Notes 1 txt-4f66015b
}

func TestPDFRunningHeadersAndFooters(t *testing.T) {
	build := func(pages int) []byte {
		p := fpdf.New("P", "mm", "A4", "")
		p.SetHeaderFunc(func() {
			p.SetFont("Helvetica", "", 8)
			p.CellFormat(0, 8, "ACME confidential", "", 1, "L", false, 0, "")
			p.Ln(6)
		})
		p.SetFooterFunc(func() {
			p.SetY(-15)
			p.SetFont("Helvetica", "", 8)
			p.CellFormat(0, 10, fmt.Sprintf("Page %d", p.PageNo()), "", 0, "C", false, 0, "")
		})
		for i := range pages {
			p.AddPage()
			p.SetFont("Helvetica", "", 11)
			p.MultiCell(0, 6, fmt.Sprintf("Body of page %d.", i+1), "", "L", false)
		}
		var b bytes.Buffer
		if err := p.Output(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	doc := mustParse(t, "h.pdf", string(build(3)), Options{})
	if got := outline(doc); got != "Page 1: Body of page 1.: header text footer | Page 2: Body of page 2.: header text footer | Page 3: Body of page 3.: header text footer" {
		t.Fatalf("pages %q", got)
	}
	if h, f := doc.Pages[1].Elements[0].Content.(dpe.Text).Text, doc.Pages[1].Elements[2].Content.(dpe.Text).Text; h != "ACME confidential" || f != "Page 2" {
		t.Errorf("header %q footer %q", h, f)
	}
	// Two pages are too few to tell a running line from content.
	if got := outline(mustParse(t, "h2.pdf", string(build(2)), Options{})); strings.Contains(got, "header") {
		t.Errorf("two-page document got running lines: %q", got)
	}
}

// TestMarkdownFrontMatterYAML: front matter is YAML, read by a YAML parser:
// folded and literal scalars, quoting, comments, flow and block lists.
func TestMarkdownFrontMatterYAML(t *testing.T) {
	for _, tc := range []struct {
		name, fm string
		title    string
		keywords []string
		summary  string
	}{
		{"folded", "title: Plan\nsummary: >\n  Spending per\n  department.\nkeywords: [budget, \"2026\"]\n", "Plan", []string{"budget", "2026"}, "Spending per department."},
		{"literal", "Title: 'It''s: quoted'\ndescription: |\n  line one\n  line two\ntags:\n  - a # a comment\n  - 'b, c'\n", "It's: quoted", []string{"a", "b, c"}, "line one line two"},
		{"comma string", "keywords: x, y ,z\nabstract: \"a \\\"quoted\\\" word\"\n", "", []string{"x", "y", "z"}, `a "quoted" word`},
		{"numbers and nulls", "title: 2026\nsummary: ~\nkeywords: [1, true, null]\n", "2026", []string{"1", "true"}, "First paragraph."},
		{"not a mapping", "- just\n- a list\n", "", nil, "First paragraph."},
		{"invalid YAML", "title: [unclosed\n", "", nil, "First paragraph."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := mustParse(t, "x.md", "---\n"+tc.fm+"---\nFirst paragraph.\n", Options{})
			title := tc.title
			if title == "" {
				title = "x"
			}
			if doc.Title != title || !reflect.DeepEqual(doc.Keywords, tc.keywords) || doc.Summary != tc.summary {
				t.Errorf("title %q keywords %q summary %q; want %q %q %q", doc.Title, doc.Keywords, doc.Summary, title, tc.keywords, tc.summary)
			}
		})
	}
}
