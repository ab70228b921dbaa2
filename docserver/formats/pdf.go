package formats

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

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
		rows, err := p.GetTextByRow()
		if err != nil {
			return nil, fmt.Errorf("reading text of page %d: %w", i, err)
		}
		for _, para := range paragraphs(rows) {
			page.Elements = append(page.Elements, dpe.Element{
				Category: dpe.CategoryText,
				Content:  dpe.Text{Text: para},
				Metadata: map[string]any{"pdf_page": i},
			})
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

// paragraphs joins rows (top to bottom) into paragraphs, cutting where the gap
// to the previous row exceeds 1.5 times the median gap.
func paragraphs(rows pdf.Rows) []string {
	type line struct {
		y    int64
		text string
	}
	var lines []line
	for _, row := range rows {
		var b strings.Builder
		prev := ""
		for _, t := range row.Content {
			s := t.S
			if s == "" {
				continue
			}
			// Fragments of one word come glyph by glyph; whole words or
			// phrases come as strings and need a space between them.
			if prev != "" && len([]rune(prev)) > 1 && len([]rune(s)) > 1 &&
				!strings.HasSuffix(prev, " ") && !strings.HasPrefix(s, " ") {
				b.WriteByte(' ')
			}
			b.WriteString(s)
			prev = s
		}
		if txt := strings.TrimSpace(b.String()); txt != "" {
			lines = append(lines, line{y: row.Position, text: txt})
		}
	}
	if len(lines) == 0 {
		return nil
	}
	var gaps []int64
	for i := 1; i < len(lines); i++ {
		gaps = append(gaps, lines[i-1].y-lines[i].y)
	}
	var median int64
	if len(gaps) > 0 {
		sorted := slices.Clone(gaps)
		slices.Sort(sorted)
		median = sorted[len(sorted)/2]
	}
	var paras []string
	cur := []string{lines[0].text}
	for i := 1; i < len(lines); i++ {
		if median > 0 && gaps[i-1]*2 > median*3 {
			paras = append(paras, strings.Join(cur, "\n"))
			cur = nil
		}
		cur = append(cur, lines[i].text)
	}
	return append(paras, strings.Join(cur, "\n"))
}
