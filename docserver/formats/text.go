package formats

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// parseText cuts plain text into paragraphs (blocks separated by blank lines),
// each a text element, and fills pages with whole paragraphs up to
// LinesPerPage lines. A paragraph longer than a page is cut at line
// boundaries; a form feed always starts a new page. Pages are titled by the
// lines they hold ("Lines 1-58"), so a reader can cite them.
func parseText(name string, data []byte, opts Options) (*dpe.Document, error) {
	s, err := textContent(data)
	if err != nil {
		return nil, err
	}
	type para struct {
		first int // 1-based line number
		lines []string
	}
	var paras []para
	var cur *para
	breakBefore := map[int]bool{} // paragraph index that must start a page
	for i, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.Contains(line, "\f") {
			for j, part := range strings.Split(line, "\f") {
				if j > 0 {
					cur = nil
					breakBefore[len(paras)] = true
				}
				if strings.TrimSpace(part) != "" {
					paras = append(paras, para{first: i + 1, lines: []string{part}})
					cur = &paras[len(paras)-1]
				}
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			cur = nil
			continue
		}
		if cur == nil {
			paras = append(paras, para{first: i + 1})
			cur = &paras[len(paras)-1]
		}
		cur.lines = append(cur.lines, strings.TrimRight(line, " \t"))
	}

	doc := &dpe.Document{Title: titleFromName(name)}
	if len(paras) > 0 {
		if first := paras[0].lines[0]; len(paras[0].lines) == 1 && utf8.RuneCountInString(first) <= 100 {
			doc.Title = strings.TrimSpace(first)
		}
		summarySource := paras[0]
		if len(paras) > 1 && len(paras[0].lines) == 1 {
			summarySource = paras[1]
		}
		doc.Summary = dpe.Truncate(strings.Join(strings.Fields(strings.Join(summarySource.lines, " ")), " "), 200)
	}

	var page *dpe.Page
	pageLines, firstLine, lastLine := 0, 0, 0
	flush := func() {
		if page != nil && len(page.Elements) > 0 {
			page.Title = fmt.Sprintf("Lines %d-%d", firstLine, lastLine)
			doc.Pages = append(doc.Pages, *page)
		}
		page, pageLines = nil, 0
	}
	for i, p := range paras {
		if breakBefore[i] {
			flush()
		}
		for start := 0; start < len(p.lines); {
			if page != nil && pageLines+len(p.lines)-start > opts.LinesPerPage && pageLines > 0 {
				flush()
			}
			if page == nil {
				page = &dpe.Page{}
				firstLine = p.first + start
			}
			n := min(len(p.lines)-start, opts.LinesPerPage-pageLines)
			chunk := p.lines[start : start+n]
			page.Elements = append(page.Elements, dpe.Element{
				Category: dpe.CategoryText,
				Content:  dpe.Text{Text: strings.Join(chunk, "\n")},
				Metadata: map[string]any{"lines": lineRange(p.first+start, p.first+start+n-1)},
			})
			pageLines += n
			lastLine = p.first + start + n - 1
			start += n
		}
	}
	flush()
	return doc, nil
}

func lineRange(from, to int) string {
	if from == to {
		return fmt.Sprint(from)
	}
	return fmt.Sprintf("%d-%d", from, to)
}
