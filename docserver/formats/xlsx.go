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
// cell (up to 100 per sheet) also becomes a formula element, after the tables. Title, keywords
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
		page, err := sheetPage(f, sheet)
		if err != nil {
			return nil, err
		}
		doc.Pages = append(doc.Pages, page)
	}
	return doc, nil
}

// formulaCell is a cell holding a formula.
type formulaCell struct {
	col, row int // 1-based
	name     string
	formula  string
}

func sheetPage(f *excelize.File, sheet string) (dpe.Page, error) {
	rows, err := f.GetRows(sheet)
	if err != nil {
		return dpe.Page{}, fmt.Errorf("reading sheet %q: %w", sheet, err)
	}
	formulas, scanned := sheetFormulas(f, sheet, rows)
	// A formula without a cached value (files written by programs rather
	// than by Excel) is computed, so that its row is not taken for empty.
	for _, fc := range formulas {
		for len(rows) < fc.row {
			rows = append(rows, nil)
		}
		r := rows[fc.row-1]
		if fc.col <= len(r) && r[fc.col-1] != "" {
			continue
		}
		v, err := f.CalcCellValue(sheet, fc.name)
		if err != nil || v == "" {
			v = "=" + fc.formula
		}
		for len(r) < fc.col {
			r = append(r, "")
		}
		r[fc.col-1] = v
		rows[fc.row-1] = r
	}

	page := dpe.Page{Title: sheet, Elements: []dpe.Element{}}
	for _, b := range rowBlocks(rows) {
		meta := map[string]any{
			"sheet":        sheet,
			"source_range": sourceRange(b.col0+1, b.row0+1, b.col0+b.cols, b.row0+len(b.rows)),
		}
		if scanned {
			has := false
			for _, fc := range formulas {
				if fc.row > b.row0 && fc.row <= b.row0+len(b.rows) && fc.col > b.col0 && fc.col <= b.col0+b.cols {
					has = true
					break
				}
			}
			meta["has_formulas"] = has
		}
		page.Elements = append(page.Elements, dpe.Element{
			Category: dpe.CategoryTable,
			Content:  dpe.Table{Headers: b.rows[0], Rows: nonNil(b.rows[1:])},
			Metadata: meta,
		})
	}
	for i, fc := range formulas {
		if i == maxFormulasPerSheet {
			break
		}
		value, _ := f.GetCellValue(sheet, fc.name)
		if value == "" {
			value, _ = f.CalcCellValue(sheet, fc.name)
		}
		page.Elements = append(page.Elements, dpe.Element{
			Category: dpe.CategoryFormula,
			Content:  dpe.Formula{Expression: "=" + strings.TrimPrefix(fc.formula, "="), Cell: fc.name, Value: value},
			Metadata: map[string]any{"sheet": sheet},
		})
	}
	return page, nil
}

// sheetFormulas finds the formula cells of a sheet, row by row, looking at
// its recorded dimension (or, failing that, the area holding values). Lookups
// go cell by cell, so a sheet larger than maxFormulaScanCells is not scanned
// and scanned is false.
func sheetFormulas(f *excelize.File, sheet string, rows [][]string) (cells []formulaCell, scanned bool) {
	cols, nrows := 0, len(rows)
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	if dim, err := f.GetSheetDimension(sheet); err == nil {
		if _, to, ok := strings.Cut(dim, ":"); ok {
			if c, r, err := excelize.CellNameToCoordinates(to); err == nil {
				cols, nrows = max(cols, c), max(nrows, r)
			}
		}
	}
	if cols*nrows > maxFormulaScanCells {
		return nil, false
	}
	for r := 1; r <= nrows; r++ {
		for c := 1; c <= cols; c++ {
			name := fmt.Sprintf("%s%d", columnName(c), r)
			if formula, err := f.GetCellFormula(sheet, name); err == nil && formula != "" {
				cells = append(cells, formulaCell{col: c, row: r, name: name, formula: formula})
			}
		}
	}
	return cells, true
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
