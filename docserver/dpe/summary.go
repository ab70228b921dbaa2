package dpe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// summaryRunes bounds element summaries: they are for deciding whether to look
// closer, not for reading.
const summaryRunes = 80

// Finalize assigns element ids and fills the summaries parsers left empty.
func (d *Document) Finalize() {
	for p := range d.Pages {
		for i := range d.Pages[p].Elements {
			e := &d.Pages[p].Elements[i]
			if e.Summary == "" {
				e.Summary = summarize(e.Content)
			}
		}
	}
	d.AssignIDs()
}

func summarize(content any) string {
	switch c := content.(type) {
	case Heading:
		return Truncate(c.Text, summaryRunes)
	case Text:
		return Truncate(oneLine(c.Text), summaryRunes)
	case Table:
		cols := len(c.Headers)
		for _, r := range c.Rows {
			cols = max(cols, len(r))
		}
		s := fmt.Sprintf("Table (%s, %s)", plural(len(c.Rows), "row"), plural(cols, "column"))
		if len(c.Headers) > 0 {
			s += ": " + strings.Join(c.Headers, ", ")
		}
		return Truncate(s, summaryRunes)
	case List:
		kind := "List"
		if c.Ordered {
			kind = "Numbered list"
		}
		s := fmt.Sprintf("%s (%s)", kind, plural(len(c.Items), "item"))
		if len(c.Items) > 0 {
			s += ": " + oneLine(c.Items[0])
		}
		return Truncate(s, summaryRunes)
	case Code:
		lang := c.Language
		if lang == "" {
			lang = "Code"
		}
		return fmt.Sprintf("%s block (%s)", lang, plural(strings.Count(strings.TrimRight(c.Code, "\n"), "\n")+1, "line"))
	case Image:
		return Truncate("Image: "+c.Alt, summaryRunes)
	case Link:
		return Truncate("Link: "+c.Text, summaryRunes)
	case Formula:
		return Truncate(strings.TrimPrefix(c.Cell+": ", ": ")+c.Expression, summaryRunes)
	case Separator:
		return "Separator"
	}
	return ""
}

// Truncate shortens s to at most n runes, marking the cut with an ellipsis.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
