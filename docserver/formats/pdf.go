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

// parsePDF makes one page per PDF page. The text of a page is read row by row
// (by baseline) and rows are grouped into paragraphs where the vertical gap is
// clearly larger than the page's usual line spacing; each paragraph is a text
// element. Title, keywords and summary (Subject) come from the Info
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

	for i := 1; i <= r.NumPage(); i++ {
		page := dpe.Page{Title: fmt.Sprintf("Page %d", i), Elements: []dpe.Element{}}
		p := r.Page(i)
		if p.V.IsNull() {
			doc.Pages = append(doc.Pages, page)
			continue
		}
		for _, para := range paragraphs(p.Content().Text) {
			page.Elements = append(page.Elements, dpe.Element{
				Category: dpe.CategoryText,
				Content:  dpe.Text{Text: para},
				Metadata: map[string]any{"pdf_page": i},
			})
		}
		// A short first line reads as the page's heading.
		if len(page.Elements) > 0 {
			if first := page.Elements[0].Content.(dpe.Text).Text; !strings.Contains(first, "\n") && utf8.RuneCountInString(first) <= 80 {
				page.Title += ": " + first
			}
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
