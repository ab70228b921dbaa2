package formats

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

const (
	// xlsxUnzipLimit bounds the unpacked size of a workbook: an XLSX is a zip,
	// and a small file can inflate to gigabytes.
	xlsxUnzipLimit = 256 << 20
	// maxFormulasPerSheet bounds the formula elements of one sheet.
	maxFormulasPerSheet = 100
	maxFormulaScanCells = 50_000
)

// parseXLSX makes one page per sheet. Blocks of rows separated by fully empty
// rows become separate table elements (first row of a block = header), with
// their source range and whether they hold formulas as metadata; each formula
// cell (up to 100 per sheet) also becomes a formula element. Title, keywords
// and summary come from the workbook's document properties.
func parseXLSX(name string, data []byte, _ Options) (*dpe.Document, error) {
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    xlsxUnzipLimit,
		UnzipXMLSizeLimit: xlsxUnzipLimit / 4,
	})
	if err != nil {
		return nil, fmt.Errorf("opening workbook: %w", err)
	}
	defer f.Close()

	doc := &dpe.Document{Title: titleFromName(name)}
	if props, err := f.GetDocProps(); err == nil {
		if t := strings.TrimSpace(props.Title); t != "" {
			doc.Title = t
		}
		doc.Keywords = splitKeywords(props.Keywords)
		doc.Summary = strings.TrimSpace(props.Description)
		if doc.Summary == "" {
			doc.Summary = strings.TrimSpace(props.Subject)
		}
	}
	sheets := f.GetSheetList()
	if doc.Summary == "" {
		doc.Summary = fmt.Sprintf("Workbook with %d sheets: %s", len(sheets), strings.Join(sheets, ", "))
	}
	for _, sheet := range sheets {
		rows, err := f.GetRows(sheet)
		if err != nil {
			return nil, fmt.Errorf("reading sheet %q: %w", sheet, err)
		}
		page := dpe.Page{Title: sheet, Elements: []dpe.Element{}}
		var formulas []dpe.Element
		for _, b := range rowBlocks(rows) {
			table := dpe.Table{Headers: b.rows[0], Rows: nonNil(b.rows[1:])}
			hasFormulas := false
			// Formula lookups go cell by cell; past this size a sheet is data,
			// and scanning it would make parsing slow for little gain.
			scan := len(b.rows)*b.cols <= maxFormulaScanCells
			for r := range b.rows {
				if !scan {
					break
				}
				for c := range b.cols {
					cell := fmt.Sprintf("%s%d", columnName(b.col0+c+1), b.row0+r+1)
					formula, err := f.GetCellFormula(sheet, cell)
					if err != nil || formula == "" {
						continue
					}
					hasFormulas = true
					if len(formulas) < maxFormulasPerSheet {
						value, _ := f.GetCellValue(sheet, cell)
						formulas = append(formulas, dpe.Element{
							Category: dpe.CategoryFormula,
							Content:  dpe.Formula{Expression: "=" + strings.TrimPrefix(formula, "="), Cell: cell, Value: value},
							Metadata: map[string]any{"sheet": sheet},
						})
					}
				}
			}
			meta := map[string]any{
				"sheet":        sheet,
				"source_range": sourceRange(b.col0+1, b.row0+1, b.col0+b.cols, b.row0+len(b.rows)),
			}
			if scan {
				meta["has_formulas"] = hasFormulas
			}
			page.Elements = append(page.Elements, dpe.Element{Category: dpe.CategoryTable, Content: table, Metadata: meta})
		}
		page.Elements = append(page.Elements, formulas...)
		doc.Pages = append(doc.Pages, page)
	}
	return doc, nil
}

// block is a run of non-empty rows, trimmed to its used columns.
type block struct {
	row0, col0, cols int
	rows             [][]string
}

// rowBlocks splits a sheet at fully empty rows and trims each block's empty
// leading and trailing columns; rows are padded to the block's width.
func rowBlocks(rows [][]string) []block {
	var blocks []block
	start := -1
	emit := func(end int) {
		if start < 0 {
			return
		}
		lo, hi := -1, -1
		for _, r := range rows[start:end] {
			for c, v := range r {
				if strings.TrimSpace(v) != "" {
					if lo < 0 || c < lo {
						lo = c
					}
					hi = max(hi, c)
				}
			}
		}
		b := block{row0: start, col0: lo, cols: hi - lo + 1}
		for _, r := range rows[start:end] {
			out := make([]string, b.cols)
			for c := range b.cols {
				if lo+c < len(r) {
					out[c] = r[lo+c]
				}
			}
			b.rows = append(b.rows, out)
		}
		blocks = append(blocks, b)
		start = -1
	}
	for i, r := range rows {
		empty := true
		for _, v := range r {
			if strings.TrimSpace(v) != "" {
				empty = false
				break
			}
		}
		switch {
		case empty:
			emit(i)
		case start < 0:
			start = i
		}
	}
	emit(len(rows))
	return blocks
}

func splitKeywords(s string) []string {
	var out []string
	for _, k := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}
