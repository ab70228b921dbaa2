// Package dpe is the Document-Page-Element model of seed 004 as the document
// server builds it: documents parsed from files, their stable element ids, and
// the four read shapes (levels 0-3) rendered as JSON, Markdown or plain text.
package dpe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// Element categories this server produces (a subset of the 19 of seed 004).
const (
	CategoryHeading   = dpeuri.CategoryHeading
	CategoryText      = dpeuri.CategoryText
	CategoryList      = dpeuri.CategoryList
	CategoryCode      = dpeuri.CategoryCode
	CategoryTable     = dpeuri.CategoryTable
	CategoryImage     = dpeuri.CategoryImage
	CategoryLink      = dpeuri.CategoryLink
	CategoryFormula   = dpeuri.CategoryFormula
	CategorySeparator = dpeuri.CategorySeparator
	CategoryHeader    = dpeuri.CategoryHeader
	CategoryFooter    = dpeuri.CategoryFooter
)

// Document is one parsed file: its metadata and pages. Parsers fill Title,
// Keywords, Summary and Pages; the server fills the rest.
type Document struct {
	Title    string
	FileType string
	Keywords []string
	Summary  string
	Pages    []Page

	DocRef       string
	FileURI      string
	LastModified time.Time
}

// Page is a logical page: a section, a sheet, a chunk of rows, a PDF page.
type Page struct {
	Title    string
	Elements []Element
}

// Element is one content unit. Content is one of the content types below; it is
// what Level 2 shows. Metadata is extra information shown at Level 3 only.
type Element struct {
	ID       string
	Category string
	Summary  string
	Content  any
	Metadata map[string]any
}

// Heading content: {"level": 1, "text": "..."}.
type Heading struct {
	Level int    `json:"level"`
	Text  string `json:"text"`
}

// Text content: a paragraph with its line breaks kept.
type Text struct {
	Text string `json:"text"`
}

// List content. Nested lists are folded into their item's text, indented, so
// that a list stays one element.
type List struct {
	Ordered bool     `json:"ordered"`
	Start   int      `json:"start,omitempty"`
	Items   []string `json:"items"`
}

// Code content: a fenced or indented code block.
type Code struct {
	Language string `json:"language,omitempty"`
	Code     string `json:"code"`
}

// Table content: a header row and data rows of strings.
type Table struct {
	Headers []string   `json:"headers"`
	Rows    [][]string `json:"rows"`
}

// tableDetail is the Level 3 form of a table: the seed adds the totals.
type tableDetail struct {
	Headers      []string   `json:"headers"`
	Rows         [][]string `json:"rows"`
	TotalRows    int        `json:"total_rows"`
	TotalColumns int        `json:"total_columns"`
}

// Link content.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Image content.
type Image struct {
	Alt   string `json:"alt"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// Formula content: a spreadsheet formula and its cached value.
type Formula struct {
	Expression string `json:"expression"`
	Cell       string `json:"cell,omitempty"`
	Value      string `json:"value,omitempty"`
}

// Separator content: a thematic break.
type Separator struct{}

// detailContent is the Content shown at Level 3.
func (e *Element) detailContent() any {
	if t, ok := e.Content.(Table); ok {
		cols := len(t.Headers)
		for _, r := range t.Rows {
			cols = max(cols, len(r))
		}
		return tableDetail{Headers: t.Headers, Rows: t.Rows, TotalRows: len(t.Rows), TotalColumns: cols}
	}
	return e.Content
}

var idPrefixes = map[string]string{
	CategoryHeading:   "h",
	CategoryText:      "txt",
	CategoryList:      "lst",
	CategoryCode:      "code",
	CategoryTable:     "tbl",
	CategoryImage:     "img",
	CategoryLink:      "lnk",
	CategoryFormula:   "fx",
	CategorySeparator: "sep",
	CategoryHeader:    "hdr",
	CategoryFooter:    "ftr",
}

// AssignIDs gives every element an id derived from its category and content:
// "tbl-3f2a91c0". The same content gets the same id across restarts and across
// edits elsewhere in the document, so an agent's element URI keeps pointing at
// the same table after someone fixes a typo two pages away. Repeated content
// (two identical separators) is numbered in document order: "sep-…", "sep-…-2".
func (d *Document) AssignIDs() {
	seen := map[string]int{}
	for p := range d.Pages {
		for i := range d.Pages[p].Elements {
			e := &d.Pages[p].Elements[i]
			prefix, ok := idPrefixes[e.Category]
			if !ok {
				prefix = e.Category
			}
			h := sha256.New()
			fmt.Fprintf(h, "%s\x00", e.Category)
			// Content types are plain structs of strings, ints and slices:
			// encoding cannot fail.
			b, _ := json.Marshal(e.Content)
			h.Write(b)
			id := prefix + "-" + hex.EncodeToString(h.Sum(nil))[:8]
			seen[id]++
			if n := seen[id]; n > 1 {
				id = fmt.Sprintf("%s-%d", id, n)
			}
			e.ID = id
		}
	}
}

// FindElement returns the element with id and the index of its page.
func (d *Document) FindElement(id string) (*Element, int, bool) {
	for p := range d.Pages {
		for i := range d.Pages[p].Elements {
			if d.Pages[p].Elements[i].ID == id {
				return &d.Pages[p].Elements[i], p, true
			}
		}
	}
	return nil, 0, false
}
