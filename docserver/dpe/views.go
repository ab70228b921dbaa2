package dpe

import (
	"slices"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// The read shapes of seed 004, field order as the seed shows them.

// DocumentSummary is one entry of Level 0 and the body of Level 1 (depth=metadata).
type DocumentSummary struct {
	DocRef       string   `json:"doc_ref"`
	URI          string   `json:"uri"`
	FileURI      string   `json:"file_uri"`
	FileType     string   `json:"file_type"`
	Title        string   `json:"title"`
	PageCount    int      `json:"page_count"`
	Keywords     []string `json:"keywords,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	LastModified string   `json:"last_modified,omitempty"`
}

// Catalog is Level 0.
type Catalog struct {
	Documents  []DocumentSummary `json:"documents"`
	TotalCount int               `json:"total_count"`
}

// DocumentPages is Level 1 with depth=pages.
type DocumentPages struct {
	DocumentSummary
	Pages      []PageSummary `json:"pages"`
	PageOffset int           `json:"page_offset"`
	PageLimit  int           `json:"page_limit"`
	PageTotal  int           `json:"page_total"`
}

// PageSummary is one entry of DocumentPages.Pages.
type PageSummary struct {
	PageIndex    int    `json:"page_index"`
	Title        string `json:"title"`
	ElementCount int    `json:"element_count"`
	URI          string `json:"uri"`
	DocRef       string `json:"doc_ref,omitempty"`
}

// PageContent is Level 2.
type PageContent struct {
	PageIndex    int            `json:"page_index"`
	Title        string         `json:"title"`
	DocRef       string         `json:"doc_ref"`
	URI          string         `json:"uri"`
	Elements     []PageElement  `json:"elements"`
	ElementCount int            `json:"element_count"`
	shown        []shownElement // the elements in Elements, for Markdown and text
}

// shownElement is an element as a page shows it: a long table is cut to its
// first MaxPageTableRows rows, and the reader is pointed to the element.
type shownElement struct {
	Element
	hiddenRows int
	uri        string
}

// MaxPageTableRows is the most table rows a page shows; Level 3 has them all.
const MaxPageTableRows = 200

// tablePreview is a table cut for a page: the first rows and the total.
type tablePreview struct {
	Headers   []string   `json:"headers"`
	Rows      [][]string `json:"rows"`
	TotalRows int        `json:"total_rows"`
	Truncated bool       `json:"truncated"`
}

// PageElement is one element as Level 2 shows it.
type PageElement struct {
	ElementID string `json:"element_id"`
	Category  string `json:"category"`
	Summary   string `json:"summary,omitempty"`
	Content   any    `json:"content"`
}

// ElementDetail is Level 3.
type ElementDetail struct {
	ElementID string         `json:"element_id"`
	Category  string         `json:"category"`
	DocRef    string         `json:"doc_ref,omitempty"`
	PageIndex int            `json:"page_index"`
	URI       string         `json:"uri,omitempty"`
	Summary   string         `json:"summary,omitempty"`
	Content   any            `json:"content"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	element   *Element
}

// DocURI is the Level 1 URI of a document.
func DocURI(host, docRef string) string { return dpeuri.Document(host, docRef).String() }

// PageURI is the Level 2 URI of page i.
func PageURI(host, docRef string, i int) string { return dpeuri.Page(host, docRef, i).String() }

// ElementURI is the Level 3 URI of an element.
func ElementURI(host, docRef, id string) string {
	return dpeuri.Element(host, docRef, id).String()
}

// SummaryView is d's entry in the catalog and its Level 1 body.
func (d *Document) SummaryView(host string) DocumentSummary {
	s := DocumentSummary{
		DocRef:    d.DocRef,
		URI:       DocURI(host, d.DocRef),
		FileURI:   d.FileURI,
		FileType:  d.FileType,
		Title:     d.Title,
		PageCount: len(d.Pages),
		Keywords:  d.Keywords,
		Summary:   d.Summary,
	}
	if !d.LastModified.IsZero() {
		s.LastModified = d.LastModified.UTC().Format(time.RFC3339)
	}
	return s
}

// CatalogView is Level 0 over docs, in the order given.
func CatalogView(host string, docs []*Document) Catalog {
	c := Catalog{Documents: make([]DocumentSummary, 0, len(docs)), TotalCount: len(docs)}
	for _, d := range docs {
		c.Documents = append(c.Documents, d.SummaryView(host))
	}
	return c
}

// PagesView is Level 1 with depth=pages: the page index from offset, at most
// limit pages. An offset past the end gives an empty page list, not an error:
// page_total tells the caller where the end is.
func (d *Document) PagesView(host string, offset, limit int) DocumentPages {
	v := DocumentPages{
		DocumentSummary: d.SummaryView(host),
		Pages:           []PageSummary{},
		PageOffset:      offset,
		PageLimit:       limit,
		PageTotal:       len(d.Pages),
	}
	for i := offset; i < len(d.Pages) && i < offset+limit; i++ {
		v.Pages = append(v.Pages, PageSummary{
			PageIndex:    i,
			Title:        d.Pages[i].Title,
			ElementCount: len(d.Pages[i].Elements),
			URI:          PageURI(host, d.DocRef, i),
			DocRef:       d.DocRef,
		})
	}
	return v
}

// PageView is Level 2 of page i (which must be in range), keeping only the
// given categories when categories is not empty. element_count counts the
// elements returned. A table longer than MaxPageTableRows shows its first
// rows with "total_rows" and "truncated": true; its element has them all.
func (d *Document) PageView(host string, i int, categories []string) PageContent {
	p := &d.Pages[i]
	v := PageContent{
		PageIndex: i,
		Title:     p.Title,
		DocRef:    d.DocRef,
		URI:       PageURI(host, d.DocRef, i),
		Elements:  []PageElement{},
	}
	for j := range p.Elements {
		e := &p.Elements[j]
		if len(categories) > 0 && !slices.Contains(categories, e.Category) {
			continue
		}
		se := shownElement{Element: *e, uri: ElementURI(host, d.DocRef, e.ID)}
		content := e.Content
		if t, ok := e.Content.(Table); ok && len(t.Rows) > MaxPageTableRows {
			cut := Table{Headers: t.Headers, Rows: t.Rows[:MaxPageTableRows]}
			se.Content, se.hiddenRows = cut, len(t.Rows)-MaxPageTableRows
			content = tablePreview{Headers: t.Headers, Rows: cut.Rows, TotalRows: len(t.Rows), Truncated: true}
		}
		v.shown = append(v.shown, se)
		v.Elements = append(v.Elements, PageElement{
			ElementID: e.ID, Category: e.Category, Summary: e.Summary, Content: content,
		})
	}
	v.ElementCount = len(v.Elements)
	return v
}

// ElementView is Level 3 of element id.
func (d *Document) ElementView(host, id string) (ElementDetail, bool) {
	e, page, ok := d.FindElement(id)
	if !ok {
		return ElementDetail{}, false
	}
	return ElementDetail{
		ElementID: e.ID,
		Category:  e.Category,
		DocRef:    d.DocRef,
		PageIndex: page,
		URI:       ElementURI(host, d.DocRef, e.ID),
		Summary:   e.Summary,
		Content:   e.detailContent(),
		Metadata:  e.Metadata,
		element:   e,
	}, true
}
