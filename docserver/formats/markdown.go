package formats

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// parseMarkdown reads CommonMark + GFM tables. Pages follow the top-level
// sections: the smallest heading level that occurs at least twice splits the
// document, and whatever comes before the first such heading (a title, an
// introduction) is page 0. A document without a repeated heading level is one
// page. YAML front matter (---) gives title, keywords and summary.
func parseMarkdown(name string, data []byte, _ Options) (*dpe.Document, error) {
	s, err := textContent(data)
	if err != nil {
		return nil, err
	}
	fm, body, bodyLine := splitFrontMatter(s)
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
	root := md.Parser().Parse(text.NewReader(body))

	lines := newLineIndex(body, bodyLine)
	c := mdConverter{src: body, lines: lines}
	var blocks []mdBlock
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		els := c.convert(n)
		if len(els) == 0 {
			continue
		}
		b := mdBlock{elements: els}
		if h, ok := n.(*ast.Heading); ok {
			b.headingLevel = h.Level
		}
		blocks = append(blocks, b)
	}

	doc := &dpe.Document{Title: fm.title, Keywords: fm.keywords, Summary: fm.summary}
	for _, b := range blocks {
		if h, ok := b.elements[0].Content.(dpe.Heading); ok && h.Level == 1 && doc.Title == "" {
			doc.Title = h.Text
		}
		if t, ok := b.elements[0].Content.(dpe.Text); ok && doc.Summary == "" {
			doc.Summary = dpe.Truncate(strings.Join(strings.Fields(t.Text), " "), 200)
		}
	}
	if doc.Title == "" {
		doc.Title = titleFromName(name)
	}
	doc.Pages = paginateSections(blocks, doc.Title)
	return doc, nil
}

type mdBlock struct {
	headingLevel int // 0 when the block is not a heading
	elements     []dpe.Element
}

func paginateSections(blocks []mdBlock, docTitle string) []dpe.Page {
	counts := map[int]int{}
	for _, b := range blocks {
		if b.headingLevel > 0 {
			counts[b.headingLevel]++
		}
	}
	split := 0
	for level := 1; level <= 6; level++ {
		if counts[level] >= 2 {
			split = level
			break
		}
	}
	var pages []dpe.Page
	cur := dpe.Page{Title: docTitle}
	for _, b := range blocks {
		if split > 0 && b.headingLevel == split {
			if len(cur.Elements) > 0 {
				pages = append(pages, cur)
			}
			cur = dpe.Page{Title: b.elements[0].Content.(dpe.Heading).Text}
		}
		cur.Elements = append(cur.Elements, b.elements...)
	}
	if len(cur.Elements) > 0 || len(pages) == 0 {
		pages = append(pages, cur)
	}
	return pages
}

type mdConverter struct {
	src   []byte
	lines *lineIndex
}

// convert maps one top-level block to elements. A paragraph yields a text
// element followed by one link or image element per link or image in it, so
// that categories=link finds them; a paragraph that is only an image or only a
// link yields just that element.
func (c *mdConverter) convert(n ast.Node) []dpe.Element {
	meta := func() map[string]any { return c.lines.metadata(n) }
	switch n := n.(type) {
	case *ast.Heading:
		return []dpe.Element{{Category: dpe.CategoryHeading, Content: dpe.Heading{Level: n.Level, Text: c.inline(n)}, Metadata: meta()}}
	case *ast.Paragraph, *ast.TextBlock:
		return c.paragraph(n, meta())
	case *ast.List:
		l := dpe.List{Ordered: n.IsOrdered(), Items: []string{}}
		if l.Ordered && n.Start != 1 {
			l.Start = n.Start
		}
		for item := n.FirstChild(); item != nil; item = item.NextSibling() {
			l.Items = append(l.Items, c.listItem(item))
		}
		return []dpe.Element{{Category: dpe.CategoryList, Content: l, Metadata: meta()}}
	case *ast.FencedCodeBlock:
		return []dpe.Element{{Category: dpe.CategoryCode, Content: dpe.Code{Language: string(n.Language(c.src)), Code: c.rawLines(n)}, Metadata: meta()}}
	case *ast.CodeBlock:
		return []dpe.Element{{Category: dpe.CategoryCode, Content: dpe.Code{Code: c.rawLines(n)}, Metadata: meta()}}
	case *east.Table:
		return []dpe.Element{{Category: dpe.CategoryTable, Content: c.table(n), Metadata: meta()}}
	case *ast.ThematicBreak:
		return []dpe.Element{{Category: dpe.CategorySeparator, Content: dpe.Separator{}, Metadata: meta()}}
	case *ast.Blockquote:
		var parts []string
		for ch := n.FirstChild(); ch != nil; ch = ch.NextSibling() {
			if t := c.blockText(ch); t != "" {
				parts = append(parts, t)
			}
		}
		if len(parts) == 0 {
			return nil
		}
		return []dpe.Element{{Category: dpe.CategoryText, Content: dpe.Text{Text: "> " + strings.ReplaceAll(strings.Join(parts, "\n\n"), "\n", "\n> ")}, Metadata: meta()}}
	case *ast.HTMLBlock:
		raw := strings.TrimSpace(c.rawLines(n))
		if raw == "" || n.HTMLBlockType == ast.HTMLBlockType2 { // comments carry nothing for a reader
			return nil
		}
		return []dpe.Element{{Category: dpe.CategoryCode, Content: dpe.Code{Language: "html", Code: raw}, Metadata: meta()}}
	}
	return nil
}

func (c *mdConverter) paragraph(n ast.Node, meta map[string]any) []dpe.Element {
	var media []dpe.Element
	onlyMedia := true
	_ = ast.Walk(n, func(ch ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || ch == n {
			return ast.WalkContinue, nil
		}
		switch ch := ch.(type) {
		case *ast.Image:
			media = append(media, dpe.Element{Category: dpe.CategoryImage, Content: dpe.Image{Alt: c.inline(ch), URL: string(ch.Destination), Title: string(ch.Title)}, Metadata: meta})
		case *ast.Link:
			media = append(media, dpe.Element{Category: dpe.CategoryLink, Content: dpe.Link{Text: c.inline(ch), URL: string(ch.Destination)}, Metadata: meta})
		case *ast.AutoLink:
			media = append(media, dpe.Element{Category: dpe.CategoryLink, Content: dpe.Link{Text: string(ch.Label(c.src)), URL: c.autoLinkURL(ch)}, Metadata: meta})
		case *ast.Text:
			if ch.Parent() == n && len(bytes.TrimSpace(ch.Value(c.src))) > 0 {
				onlyMedia = false
			}
			return ast.WalkContinue, nil
		default:
			if ch.Parent() == n {
				onlyMedia = false // emphasis, code spans: links inside them still count
			}
			return ast.WalkContinue, nil
		}
		return ast.WalkSkipChildren, nil
	})
	if onlyMedia && len(media) > 0 {
		return media
	}
	t := c.inline(n)
	if t == "" {
		return media
	}
	return append([]dpe.Element{{Category: dpe.CategoryText, Content: dpe.Text{Text: t}, Metadata: meta}}, media...)
}

func (c *mdConverter) autoLinkURL(l *ast.AutoLink) string {
	u := string(l.URL(c.src))
	if l.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
		return "mailto:" + u
	}
	return u
}

// listItem is the text of an item: its paragraphs, then nested lists indented.
func (c *mdConverter) listItem(item ast.Node) string {
	var parts []string
	for ch := item.FirstChild(); ch != nil; ch = ch.NextSibling() {
		if l, ok := ch.(*ast.List); ok {
			var sub []string
			for i, it := 0, l.FirstChild(); it != nil; i, it = i+1, it.NextSibling() {
				marker := "- "
				if l.IsOrdered() {
					marker = fmt.Sprintf("%d. ", l.Start+i)
				}
				sub = append(sub, "  "+marker+strings.ReplaceAll(c.listItem(it), "\n", "\n  "+strings.Repeat(" ", len(marker))))
			}
			parts = append(parts, strings.Join(sub, "\n"))
			continue
		}
		if t := c.blockText(ch); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

func (c *mdConverter) blockText(n ast.Node) string {
	switch n := n.(type) {
	case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock:
		return strings.TrimRight(c.rawLines(n), "\n")
	case *ast.List:
		return c.listItem(n)
	}
	return c.inline(n)
}

func (c *mdConverter) table(t *east.Table) dpe.Table {
	out := dpe.Table{Headers: []string{}, Rows: [][]string{}}
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, c.inline(cell))
		}
		if _, ok := row.(*east.TableHeader); ok {
			out.Headers = cells
		} else {
			out.Rows = append(out.Rows, cells)
		}
	}
	return out
}

// inline is the plain text of n's inline content: markup dropped, soft line
// breaks kept as newlines (the seed keeps a paragraph's line breaks).
func (c *mdConverter) inline(n ast.Node) string {
	var b strings.Builder
	_ = ast.Walk(n, func(ch ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch ch := ch.(type) {
		case *ast.Text:
			v := ch.Value(c.src)
			if _, code := ch.Parent().(*ast.CodeSpan); !code && !ch.IsRaw() {
				v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
			}
			b.Write(v)
			if ch.SoftLineBreak() || ch.HardLineBreak() {
				b.WriteByte('\n')
			}
		case *ast.String:
			b.Write(ch.Value)
		case *ast.AutoLink:
			b.Write(ch.Label(c.src))
			return ast.WalkSkipChildren, nil
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return strings.TrimSpace(b.String())
}

func (c *mdConverter) rawLines(n ast.Node) string {
	var b strings.Builder
	l := n.Lines()
	for i := 0; i < l.Len(); i++ {
		seg := l.At(i)
		b.Write(seg.Value(c.src))
	}
	return b.String()
}

// lineIndex maps byte offsets of the parsed body to 1-based line numbers of
// the original file (front matter included).
type lineIndex struct {
	starts []int
	first  int
}

func newLineIndex(body []byte, firstLine int) *lineIndex {
	li := &lineIndex{starts: []int{0}, first: firstLine}
	for i, b := range body {
		if b == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) line(offset int) int {
	return sort.Search(len(li.starts), func(i int) bool { return li.starts[i] > offset }) - 1 + li.first
}

// metadata gives the source lines an element came from ("lines": "12-18").
func (li *lineIndex) metadata(n ast.Node) map[string]any {
	lo, hi := -1, -1
	see := func(start, stop int) {
		if lo < 0 || start < lo {
			lo = start
		}
		hi = max(hi, stop)
	}
	_ = ast.Walk(n, func(ch ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if t, ok := ch.(*ast.Text); ok {
			see(t.Segment.Start, t.Segment.Stop)
		} else if ch.Type() == ast.TypeBlock {
			if l := ch.Lines(); l != nil && l.Len() > 0 {
				see(l.At(0).Start, l.At(l.Len()-1).Stop)
			}
		}
		return ast.WalkContinue, nil
	})
	if lo < 0 {
		return nil
	}
	from, to := li.line(lo), li.line(max(hi-1, lo))
	if from == to {
		return map[string]any{"lines": fmt.Sprint(from)}
	}
	return map[string]any{"lines": fmt.Sprintf("%d-%d", from, to)}
}

type frontMatter struct {
	title    string
	keywords []string
	summary  string
}

// splitFrontMatter separates a leading "---" block of YAML (closed by
// "---" or "...") from the body, and reads title, summary (or description,
// abstract) and keywords (or tags) from it with a YAML parser, so that
// folded and literal scalars, quoting and both list forms mean what YAML
// says. Keys are case-insensitive. A block that is not a YAML mapping gives
// no metadata (the block is still not body text). It returns the body and
// the 1-based line number the body starts at.
func splitFrontMatter(s string) (frontMatter, []byte, int) {
	var fm frontMatter
	if !strings.HasPrefix(s, "---\n") {
		return fm, []byte(s), 1
	}
	lines := strings.Split(s, "\n")
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t\r"); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return fm, []byte(s), 1
	}
	values := frontMatterValues(strings.Join(lines[1:end], "\n"))
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := values[k]; len(v) > 0 {
				return strings.Join(strings.Fields(v[0]), " ")
			}
		}
		return ""
	}
	fm.title = first("title")
	fm.summary = first("summary", "description", "abstract")
	fm.keywords = values["keywords"]
	if len(fm.keywords) == 0 {
		fm.keywords = values["tags"]
	}
	if len(fm.keywords) == 1 && strings.Contains(fm.keywords[0], ",") {
		// "keywords: a, b" is one YAML string; writers mean a list.
		fm.keywords = strings.Split(fm.keywords[0], ",")
	}
	var kws []string
	for _, k := range fm.keywords {
		if k = strings.TrimSpace(k); k != "" {
			kws = append(kws, k)
		}
	}
	fm.keywords = kws
	body := strings.Join(lines[end+1:], "\n")
	return fm, []byte(body), end + 2
}

// frontMatterValues reads the top-level keys of a YAML mapping as lists of
// strings: a scalar is a one-element list (its text as YAML reads it, so a
// folded "summary: >" block is its folded text), a sequence lists its
// scalars. Nested mappings and aliases are ignored.
func frontMatterValues(src string) map[string][]string {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	values := map[string][]string{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(k.Value))
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag != "!!null" {
				values[key] = []string{v.Value}
			}
		case yaml.SequenceNode:
			for _, item := range v.Content {
				if item.Kind == yaml.ScalarNode && item.Tag != "!!null" {
					values[key] = append(values[key], item.Value)
				}
			}
		}
	}
	return values
}
