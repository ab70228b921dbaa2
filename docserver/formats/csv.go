package formats

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// parseCSV reads CSV (or TSV by extension). The first record is the header;
// each page is one table element holding RowsPerPage data rows under that
// header, with its spreadsheet-style source range ("A2:D51") as metadata.
func parseCSV(name string, data []byte, opts Options) (*dpe.Document, error) {
	s, err := textContent(data)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	kind := "CSV"
	if strings.EqualFold(filepath.Ext(name), ".tsv") {
		r.Comma = '\t'
		kind = "TSV"
	}
	var records [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", kind, err)
		}
		records = append(records, rec)
	}
	doc := &dpe.Document{Title: titleFromName(name)}
	if len(records) == 0 {
		return doc, nil
	}
	headers, rows := records[0], records[1:]
	cols := len(headers)
	for _, row := range rows {
		cols = max(cols, len(row))
	}
	doc.Summary = dpe.Truncate(fmt.Sprintf("%s table, %d rows × %d columns: %s", kind, len(rows), cols, strings.Join(headers, ", ")), 200)
	for start := 0; ; start += opts.RowsPerPage {
		end := min(start+opts.RowsPerPage, len(rows))
		page := dpe.Page{Title: fmt.Sprintf("Rows %d-%d", start+1, end)}
		if end == start {
			page.Title = "Header only"
		}
		page.Elements = []dpe.Element{{
			Category: dpe.CategoryTable,
			Content:  dpe.Table{Headers: headers, Rows: nonNil(rows[start:end])},
			Metadata: map[string]any{"source_range": sourceRange(1, start+2, cols, end+1), "header_row": 1},
		}}
		doc.Pages = append(doc.Pages, page)
		if end == len(rows) {
			break
		}
	}
	return doc, nil
}

func nonNil(rows [][]string) [][]string {
	if rows == nil {
		return [][]string{}
	}
	return rows
}

// sourceRange is an A1-style range from (col1,row1) to (col2,row2), 1-based.
func sourceRange(col1, row1, col2, row2 int) string {
	if row2 < row1 {
		row2 = row1
	}
	return fmt.Sprintf("%s%d:%s%d", columnName(col1), row1, columnName(max(col2, col1)), row2)
}

// columnName is the spreadsheet name of 1-based column n: 1 → A, 27 → AA.
func columnName(n int) string {
	var b []byte
	for n > 0 {
		n--
		b = append([]byte{byte('A' + n%26)}, b...)
		n /= 26
	}
	return string(b)
}
