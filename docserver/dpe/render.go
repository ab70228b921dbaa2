package dpe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// Response formats (the format query parameter).
const (
	FormatJSON     = dpeuri.FormatJSON
	FormatMarkdown = dpeuri.FormatMarkdown
	FormatText     = dpeuri.FormatText
)

// MIMEType is the MIME type of a response in format.
func MIMEType(format string) string {
	switch format {
	case FormatMarkdown:
		return "text/markdown"
	case FormatText:
		return "text/plain"
	default:
		return "application/json"
	}
}

// Renderable is a read shape that can be written in each format.
type Renderable interface {
	markdown(*strings.Builder)
	text(*strings.Builder)
}

// Render writes v in format (json, markdown or text; empty means json).
func Render(v Renderable, format string) (string, error) {
	var b strings.Builder
	switch format {
	case FormatMarkdown:
		v.markdown(&b)
	case FormatText:
		v.text(&b)
	case FormatJSON, "":
		out, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "", fmt.Errorf("encoding response: %w", err)
		}
		return string(out), nil
	default:
		return "", fmt.Errorf("unknown format %q", format)
	}
	return strings.TrimRight(b.String(), "\n") + "\n", nil
}

// Level 0.

func (c Catalog) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "# Documents (%d)\n\n", c.TotalCount)
	for _, d := range c.Documents {
		fmt.Fprintf(b, "- [%s](%s) — %s, %s", escapeInline(d.Title), d.URI, d.FileType, plural(d.PageCount, "page"))
		if d.LastModified != "" {
			fmt.Fprintf(b, ", modified %s", d.LastModified)
		}
		if d.Summary != "" {
			fmt.Fprintf(b, ": %s", oneLine(d.Summary))
		}
		b.WriteString("\n")
	}
}

func (c Catalog) text(b *strings.Builder) {
	fmt.Fprintf(b, "Documents (%d)\n\n", c.TotalCount)
	for _, d := range c.Documents {
		fmt.Fprintf(b, "%s\n  %s\n  %s, %s", d.Title, d.URI, d.FileType, plural(d.PageCount, "page"))
		if d.LastModified != "" {
			fmt.Fprintf(b, ", modified %s", d.LastModified)
		}
		b.WriteString("\n")
		if d.Summary != "" {
			fmt.Fprintf(b, "  %s\n", oneLine(d.Summary))
		}
	}
}

// Level 1.

func (s DocumentSummary) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "# %s\n\n", escapeInline(s.Title))
	fmt.Fprintf(b, "- doc_ref: `%s`\n- uri: %s\n- file: %s\n- type: %s\n- pages: %d\n", s.DocRef, s.URI, s.FileURI, s.FileType, s.PageCount)
	if len(s.Keywords) > 0 {
		fmt.Fprintf(b, "- keywords: %s\n", strings.Join(s.Keywords, ", "))
	}
	if s.LastModified != "" {
		fmt.Fprintf(b, "- last modified: %s\n", s.LastModified)
	}
	if s.Summary != "" {
		fmt.Fprintf(b, "\n%s\n", s.Summary)
	}
}

func (s DocumentSummary) text(b *strings.Builder) {
	fmt.Fprintf(b, "%s\n\ndoc_ref: %s\nuri: %s\nfile: %s\ntype: %s\npages: %d\n", s.Title, s.DocRef, s.URI, s.FileURI, s.FileType, s.PageCount)
	if len(s.Keywords) > 0 {
		fmt.Fprintf(b, "keywords: %s\n", strings.Join(s.Keywords, ", "))
	}
	if s.LastModified != "" {
		fmt.Fprintf(b, "last modified: %s\n", s.LastModified)
	}
	if s.Summary != "" {
		fmt.Fprintf(b, "\n%s\n", s.Summary)
	}
}

func (d DocumentPages) pageRange() string {
	if len(d.Pages) == 0 {
		return fmt.Sprintf("none from offset %d of %d", d.PageOffset, d.PageTotal)
	}
	return fmt.Sprintf("%d-%d of %d", d.PageOffset, d.PageOffset+len(d.Pages)-1, d.PageTotal)
}

func (d DocumentPages) markdown(b *strings.Builder) {
	d.DocumentSummary.markdown(b)
	fmt.Fprintf(b, "\n## Pages (%s)\n\n", d.pageRange())
	for _, p := range d.Pages {
		fmt.Fprintf(b, "%d. [%s](%s) — %s\n", p.PageIndex, escapeInline(p.Title), p.URI, plural(p.ElementCount, "element"))
	}
}

func (d DocumentPages) text(b *strings.Builder) {
	d.DocumentSummary.text(b)
	fmt.Fprintf(b, "\nPages (%s)\n", d.pageRange())
	for _, p := range d.Pages {
		fmt.Fprintf(b, "  %d  %s (%s)  %s\n", p.PageIndex, p.Title, plural(p.ElementCount, "element"), p.URI)
	}
}

// Level 2: the elements of the page, one after the other.

func (p PageContent) markdown(b *strings.Builder) {
	for i, e := range p.shown {
		if i > 0 {
			b.WriteString("\n")
		}
		e.markdown(b)
		if e.hiddenRows > 0 {
			fmt.Fprintf(b, "\n_%s: %s_\n", moreRows(e.hiddenRows), e.uri)
		}
	}
}

func (p PageContent) text(b *strings.Builder) {
	for i, e := range p.shown {
		if i > 0 {
			b.WriteString("\n")
		}
		e.text(b)
		if e.hiddenRows > 0 {
			fmt.Fprintf(b, "(%s: %s)\n", moreRows(e.hiddenRows), e.uri)
		}
	}
}

// Level 3.

func (d ElementDetail) markdown(b *strings.Builder) { d.element.markdown(b) }
func (d ElementDetail) text(b *strings.Builder)     { d.element.text(b) }

// markdownRules are the categories seed 004 gives a Markdown form; every
// other category renders as [{category}: {summary}].
var markdownRules = map[string]bool{
	CategoryHeading: true, CategoryText: true, CategoryTable: true, CategoryList: true,
	CategoryCode: true, CategoryImage: true, CategoryLink: true, CategoryFormula: true,
}

// markdown renders one element by the rules of seed 004, ending in a newline.
func (e *Element) markdown(b *strings.Builder) {
	if !markdownRules[e.Category] {
		fmt.Fprintf(b, "[%s: %s]\n", e.Category, e.Summary)
		return
	}
	switch c := e.Content.(type) {
	case Heading:
		fmt.Fprintf(b, "%s %s\n", strings.Repeat("#", min(max(c.Level, 1), 6)), c.Text)
	case Text:
		fmt.Fprintf(b, "%s\n", c.Text)
	case Table:
		markdownTable(b, c)
	case List:
		writeList(b, c)
	case Code:
		fence := "```"
		for strings.Contains(c.Code, fence) {
			fence += "`"
		}
		fmt.Fprintf(b, "%s%s\n%s\n%s\n", fence, c.Language, strings.TrimRight(c.Code, "\n"), fence)
	case Image:
		if c.URL != "" {
			fmt.Fprintf(b, "![%s](%s)\n", escapeInline(c.Alt), c.URL)
		} else {
			fmt.Fprintf(b, "[图片: %s]\n", c.Alt)
		}
	case Link:
		fmt.Fprintf(b, "[%s](%s)\n", escapeInline(c.Text), c.URL)
	case Formula:
		fmt.Fprintf(b, "$ %s $\n", c.Expression)
	default:
		fmt.Fprintf(b, "[%s: %s]\n", e.Category, e.Summary)
	}
}

// PlainText is the element as plain text (a table: one tab-separated line per
// row, headers first), the form search matches against.
func (e *Element) PlainText() string {
	var b strings.Builder
	e.text(&b)
	return strings.TrimSuffix(b.String(), "\n")
}

// text renders one element as plain text, ending in a newline.
func (e *Element) text(b *strings.Builder) {
	switch c := e.Content.(type) {
	case Heading:
		fmt.Fprintf(b, "%s\n", c.Text)
	case Text:
		fmt.Fprintf(b, "%s\n", c.Text)
	case Table:
		b.WriteString(strings.Join(c.Headers, "\t") + "\n")
		for _, r := range c.Rows {
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
	case List:
		writeList(b, c)
	case Code:
		fmt.Fprintf(b, "%s\n", strings.TrimRight(c.Code, "\n"))
	case Image:
		fmt.Fprintf(b, "[image: %s] %s\n", c.Alt, c.URL)
	case Link:
		fmt.Fprintf(b, "%s <%s>\n", c.Text, c.URL)
	case Formula:
		if c.Cell != "" {
			b.WriteString(c.Cell + ": ")
		}
		b.WriteString(c.Expression)
		if c.Value != "" {
			b.WriteString(" → " + c.Value)
		}
		b.WriteString("\n")
	default:
		fmt.Fprintf(b, "[%s: %s]\n", e.Category, e.Summary)
	}
}

func markdownTable(b *strings.Builder, t Table) {
	cols := len(t.Headers)
	for _, r := range t.Rows {
		cols = max(cols, len(r))
	}
	if cols == 0 {
		return
	}
	row := func(cells []string) {
		b.WriteString("|")
		for i := range cols {
			cell := ""
			if i < len(cells) {
				cell = cells[i]
			}
			b.WriteString(" " + escapeCell(cell) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Headers)
	b.WriteString("|" + strings.Repeat(" --- |", cols) + "\n")
	for _, r := range t.Rows {
		row(r)
	}
}

func escapeCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r\n", "<br>")
	return strings.ReplaceAll(s, "\n", "<br>")
}

// escapeInline keeps a title from closing the link text it sits in.
func escapeInline(s string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`, "\n", " ").Replace(s)
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func moreRows(n int) string {
	if n == 1 {
		return "1 more row"
	}
	return strconv.Itoa(n) + " more rows"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// writeList writes a list's items, one per line, as Markdown and plain text
// both show it.
func writeList(b *strings.Builder, c List) {
	for i, item := range c.Items {
		marker := "- "
		if c.Ordered {
			marker = strconv.Itoa(max(c.Start, 1)+i) + ". "
		}
		b.WriteString(marker + indentRest(item, strings.Repeat(" ", len(marker))) + "\n")
	}
}
