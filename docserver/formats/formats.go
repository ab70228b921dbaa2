// Package formats parses files into DPE documents. Parsers are pure functions
// of a file's name and bytes; they never touch the file system.
//
//	file       file_type  pages                                 elements
//	.md        md         top-level sections (smallest heading  heading, text, list, code, table (GFM),
//	.markdown             level that occurs twice; preamble =   link, image, separator; blockquotes as
//	                      page 0)                               text, HTML blocks as code
//	.txt       txt        blank-line paragraphs packed into     text (one per paragraph)
//	.text                 pages of LinesPerPage lines; \f
//	                      forces a page break
//	.csv .tsv  csv, tsv   RowsPerPage data rows per page        table (header = first record)
//	.json      json       object: "Fields" page of scalars,     table (objects, arrays of objects),
//	                      then a page per object/array value;   list (arrays of scalars), text
//	                      array: RowsPerPage items per page
//	.xlsx      xlsx       one page per sheet                    table per block of rows, formula
//	.pdf       pdf        one page per PDF page                 text (paragraphs from line spacing),
//	                                                            header, footer (lines repeated on
//	                                                            most pages of a 3+ page document)
//
// Document metadata: Markdown front matter (title, keywords/tags,
// summary/description) or the first H1 and paragraph; JSON top-level
// title/name, description/summary, keywords/tags; XLSX document properties;
// PDF Info dictionary (Title, Keywords, Subject). Otherwise the title comes
// from the file name. Element metadata records where an element came from:
// "lines" (Markdown, text), "source_range" (CSV, XLSX), "path" (JSON),
// "pdf_page".
package formats

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// Options tune how files are cut into pages.
type Options struct {
	// RowsPerPage is the number of CSV/TSV rows or JSON array items per page.
	RowsPerPage int
	// LinesPerPage is the page size of plain text, in lines.
	LinesPerPage int
}

// Defaults for zero Options fields.
const (
	DefaultRowsPerPage  = 50
	DefaultLinesPerPage = 60
)

func (o Options) withDefaults() Options {
	if o.RowsPerPage <= 0 {
		o.RowsPerPage = DefaultRowsPerPage
	}
	if o.LinesPerPage <= 0 {
		o.LinesPerPage = DefaultLinesPerPage
	}
	return o
}

type parser func(name string, data []byte, opts Options) (*dpe.Document, error)

// byExt maps a lower-case file extension to its file_type and parser.
var byExt = map[string]struct {
	fileType string
	parse    parser
}{
	".md":       {"md", parseMarkdown},
	".markdown": {"md", parseMarkdown},
	".txt":      {"txt", parseText},
	".text":     {"txt", parseText},
	".csv":      {"csv", parseCSV},
	".tsv":      {"tsv", parseCSV},
	".json":     {"json", parseJSON},
	".xlsx":     {"xlsx", parseXLSX},
	".pdf":      {"pdf", parsePDF},
}

// Supported reports whether name has an extension this package parses.
func Supported(name string) bool {
	_, ok := byExt[strings.ToLower(filepath.Ext(name))]
	return ok
}

// ErrUnsupported is returned by Parse for a file type it does not know.
var ErrUnsupported = errors.New("unsupported file type")

// Parse turns the bytes of the file called name into a document with
// file_type, pages, element ids and summaries set. A panic inside a
// third-party parser (malformed PDFs can cause them) is returned as an error:
// one bad file must not take the server down.
func Parse(name string, data []byte, opts Options) (doc *dpe.Document, err error) {
	f, ok := byExt[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrUnsupported)
	}
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("parsing %s: parser panicked: %v", name, r)
		}
	}()
	doc, err = f.parse(name, data, opts.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	doc.FileType = f.fileType
	doc.Finalize()
	return doc, nil
}

// titleFromName makes a title of a file name: "q3-sales_report.csv" → "q3 sales report".
func titleFromName(name string) string {
	base := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	t := strings.Join(strings.FieldsFunc(base, func(r rune) bool { return r == '-' || r == '_' || unicode.IsSpace(r) }), " ")
	if t == "" {
		return filepath.Base(name)
	}
	return t
}

// textContent validates that data is text and returns it as valid UTF-8 with
// "\n" line ends.
func textContent(data []byte) (string, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return "", errors.New("binary content (NUL bytes) in a text file")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	s := string(data)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n"), nil
}
