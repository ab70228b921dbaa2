package formats

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/ledongthuc/pdf"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// parsePDF makes one page per PDF page. The text of a page is read line by
// line (by baseline) and lines are grouped into paragraphs where the vertical
// gap is clearly larger than the line spacing; each paragraph is a text
// element. A line repeated at the top (bottom) of most pages, page numbers
// aside, is a running header (footer): it becomes a header (footer) element. Title, keywords and summary (Subject) come from the Info
// dictionary. Scanned pages without a text layer are pages with no elements.
func parsePDF(name string, data []byte, _ Options) (*dpe.Document, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("opening PDF: %w", err)
	}
	doc := &dpe.Document{Title: titleFromName(name)}
	info := r.Trailer().Key("Info")
	if t := strings.TrimSpace(info.Key("Title").Text()); t != "" {
		doc.Title = t
	}
	doc.Keywords = splitKeywords(info.Key("Keywords").Text())
	doc.Summary = strings.TrimSpace(info.Key("Subject").Text())

	var paras [][]string
	for i := 1; i <= r.NumPage(); i++ {
		var pp []string
		if p := r.Page(i); !p.V.IsNull() {
			pp = paragraphs(p.Content().Text)
		}
		paras = append(paras, pp)
	}
	headers, footers := runningLines(paras)
	for i, pp := range paras {
		page := dpe.Page{Title: fmt.Sprintf("Page %d", i+1), Elements: []dpe.Element{}}
		meta := map[string]any{"pdf_page": i + 1}
		if headers[i] != "" {
			page.Elements = append(page.Elements, dpe.Element{Category: dpe.CategoryHeader, Content: dpe.Text{Text: headers[i]}, Metadata: meta})
		}
		for _, para := range pp {
			page.Elements = append(page.Elements, dpe.Element{Category: dpe.CategoryText, Content: dpe.Text{Text: para}, Metadata: meta})
		}
		if footers[i] != "" {
			page.Elements = append(page.Elements, dpe.Element{Category: dpe.CategoryFooter, Content: dpe.Text{Text: footers[i]}, Metadata: meta})
		}
		// A short first line reads as the page's heading.
		if len(pp) > 0 && !strings.Contains(pp[0], "\n") && utf8.RuneCountInString(pp[0]) <= 80 {
			page.Title += ": " + pp[0]
		}
		doc.Pages = append(doc.Pages, page)
	}
	if doc.Summary == "" {
		doc.Summary = firstParagraph(doc)
	}
	return doc, nil
}

// firstParagraph is the first text long enough to be a sentence rather than a
// title or a page header, shortened for a summary.
func firstParagraph(doc *dpe.Document) string {
	for _, p := range doc.Pages {
		for _, e := range p.Elements {
			if t, ok := e.Content.(dpe.Text); ok && len(t.Text) >= 40 {
				return dpe.Truncate(strings.Join(strings.Fields(t.Text), " "), 200)
			}
		}
	}
	return ""
}

// paragraphs rebuilds lines from the glyphs of a page (a new line where the
// baseline moves) and joins lines into paragraphs. A paragraph ends where the
// gap to the next line is more than 1.8 times the font size (normal leading
// is 1.2-1.6), or where the text jumps upwards (a new column or box).
func paragraphs(glyphs []pdf.Text) []string {
	type line struct {
		y, size float64
		text    string
	}
	var lines []line
	var cur strings.Builder
	var y, size float64
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			lines = append(lines, line{y: y, size: size, text: strings.Join(strings.Fields(t), " ")})
		}
		cur.Reset()
	}
	for i, g := range glyphs {
		if i == 0 || math.Abs(g.Y-y) > 0.5 {
			flush()
			y, size = g.Y, g.FontSize
		} else if prev := glyphs[i-1]; math.Abs(g.X-(prev.X+prev.W)) > 0.25*max(g.FontSize, 1) &&
			!strings.HasSuffix(cur.String(), " ") && g.S != " " {
			// A glyph that does not continue the previous one is a new run
			// of text on the same line (a table cell, a column): keep the
			// runs apart. (Fonts without widths give W = 0 and a constant X
			// within a run, which this also handles.)
			cur.WriteByte(' ')
		}
		size = max(size, g.FontSize)
		cur.WriteString(g.S)
	}
	flush()
	if len(lines) == 0 {
		return nil
	}
	var paras []string
	block := []string{lines[0].text}
	for i := 1; i < len(lines); i++ {
		gap := lines[i-1].y - lines[i].y
		fontSize := max(lines[i-1].size, lines[i].size)
		if fontSize <= 0 {
			fontSize = 10 // no font information: assume body text
		}
		if gap <= 0 || gap > 1.8*fontSize {
			paras = append(paras, strings.Join(block, "\n"))
			block = nil
		}
		block = append(block, lines[i].text)
	}
	return append(paras, strings.Join(block, "\n"))
}

// runningLines takes out of the pages' paragraphs the lines that repeat at the
// top or the bottom of at least 60% of the pages (digits compared as one
// class, so "Page 3 of 9" repeats) in documents of three pages or more, and
// returns them per page.
func runningLines(paras [][]string) (headers, footers []string) {
	headers, footers = make([]string, len(paras)), make([]string, len(paras))
	if len(paras) < 3 {
		return headers, footers
	}
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return '#'
			}
			return r
		}, s)
	}
	type edge struct {
		line func(pp []string) string
		cut  func(pp []string) []string
		out  []string
	}
	edges := []edge{
		{ // top: the first line of the first paragraph
			line: func(pp []string) string { first, _, _ := strings.Cut(pp[0], "\n"); return first },
			cut: func(pp []string) []string {
				if _, rest, ok := strings.Cut(pp[0], "\n"); ok {
					return append([]string{rest}, pp[1:]...)
				}
				return pp[1:]
			},
			out: headers,
		},
		{ // bottom: the last line of the last paragraph
			line: func(pp []string) string { return pp[len(pp)-1][strings.LastIndex(pp[len(pp)-1], "\n")+1:] },
			cut: func(pp []string) []string {
				last := pp[len(pp)-1]
				if i := strings.LastIndex(last, "\n"); i >= 0 {
					return append(pp[:len(pp)-1:len(pp)-1], last[:i])
				}
				return pp[:len(pp)-1]
			},
			out: footers,
		},
	}
	for _, e := range edges {
		counts := map[string]int{}
		for _, pp := range paras {
			if len(pp) > 0 {
				counts[norm(e.line(pp))]++
			}
		}
		best, n := "", 0
		for k, c := range counts {
			if c > n || c == n && k < best {
				best, n = k, c
			}
		}
		if n*10 < len(paras)*6 {
			continue
		}
		for i, pp := range paras {
			// A page whose only text is that line keeps it as text.
			if len(pp) > 0 && norm(e.line(pp)) == best && (len(pp) > 1 || strings.Contains(pp[0], "\n")) {
				e.out[i] = e.line(pp)
				paras[i] = e.cut(pp)
			}
		}
	}
	return headers, footers
}
