// Command gen writes the binary and tabular sample documents of examples/docs:
// a CSV, an XLSX workbook and a PDF. Output is deterministic (fixed data,
// fixed dates), so regenerating does not change committed files.
//
//	go run ./examples/gen [-out examples/docs]
package main

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"
)

var fixedTime = time.Date(2026, 1, 15, 8, 30, 0, 0, time.UTC)

func main() {
	out := flag.String("out", "examples/docs", "directory to write the documents to")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for name, gen := range map[string]func() ([]byte, error){
		"sales-2026.csv":       salesCSV,
		"budget-2026.xlsx":     budgetXLSX,
		"service-contract.pdf": contractPDF,
	} {
		data, err := gen()
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		path := filepath.Join(*out, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", path)
	}
}

// salesCSV is 120 rows of made-up sales: enough for three pages of 50 rows.
func salesCSV() ([]byte, error) {
	regions := []string{"North", "South", "East", "West"}
	products := []string{"Widget", "Gadget", "Gizmo"}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"month", "region", "product", "units", "revenue_eur"})
	for i := range 120 {
		month := fmt.Sprintf("2026-%02d", i/10%12+1)
		units := 40 + (i*37)%160
		price := []int{12, 25, 40}[i%3]
		_ = w.Write([]string{month, regions[i%4], products[i%3], strconv.Itoa(units), strconv.Itoa(units * price)})
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func budgetXLSX() ([]byte, error) {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetDocProps(&excelize.DocProperties{
		Title:       "Budget 2026",
		Subject:     "Department budget",
		Keywords:    "budget, finance, 2026",
		Description: "Planned spending per department and quarter, with totals computed by formulas.",
		Creator:     "smcp-gateway examples",
		Created:     fixedTime.Format(time.RFC3339),
		Modified:    fixedTime.Format(time.RFC3339),
	}); err != nil {
		return nil, err
	}
	if err := f.SetSheetName("Sheet1", "Summary"); err != nil {
		return nil, err
	}
	rows := [][]any{
		{"Department", "Q1", "Q2", "Q3", "Q4"},
		{"Engineering", 120000, 125000, 130000, 140000},
		{"Sales", 80000, 82000, 90000, 95000},
		{"Operations", 45000, 45000, 47000, 48000},
	}
	for i, r := range rows {
		if err := f.SetSheetRow("Summary", fmt.Sprintf("A%d", i+1), &r); err != nil {
			return nil, err
		}
	}
	if err := f.SetCellValue("Summary", "A5", "Total"); err != nil {
		return nil, err
	}
	for _, col := range []string{"B", "C", "D", "E"} {
		cell := col + "5"
		// Cache the value as Excel would, so readers without a calc engine see it.
		sum := 0
		for _, r := range rows[1:] {
			sum += r[col[0]-'A'].(int)
		}
		if err := f.SetCellValue("Summary", cell, sum); err != nil {
			return nil, err
		}
		if err := f.SetCellFormula("Summary", cell, fmt.Sprintf("SUM(%s2:%s4)", col, col)); err != nil {
			return nil, err
		}
	}

	if _, err := f.NewSheet("Headcount"); err != nil {
		return nil, err
	}
	head := [][]any{
		{"Team", "People", "Open roles"},
		{"Platform", 12, 2},
		{"Apps", 9, 1},
		{"Data", 6, 3},
	}
	for i, r := range head {
		if err := f.SetSheetRow("Headcount", fmt.Sprintf("A%d", i+1), &r); err != nil {
			return nil, err
		}
	}
	// A second block after an empty row: a separate table.
	notes := [][]any{{"Assumption", "Value"}, {"Salary growth", "4%"}, {"Hiring freeze", "no"}}
	for i, r := range notes {
		if err := f.SetSheetRow("Headcount", fmt.Sprintf("A%d", i+7), &r); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func contractPDF() ([]byte, error) {
	p := fpdf.New("P", "mm", "A4", "")
	p.SetCreationDate(fixedTime)
	p.SetModificationDate(fixedTime)
	p.SetCatalogSort(true)
	p.SetCompression(false)
	p.SetTitle("Service Agreement A1", true)
	p.SetSubject("Service agreement between Example Corp and Acme Hosting for project A1", true)
	p.SetKeywords("contract, hosting, A1", true)
	p.SetAuthor("smcp-gateway examples", true)
	p.SetCreator("smcp-gateway examples/gen", true)
	p.SetProducer("go-pdf/fpdf", true)
	p.AliasNbPages("")
	p.SetHeaderFunc(func() {
		p.SetFont("Helvetica", "I", 8)
		p.CellFormat(0, 8, "Example Corp - Acme Hosting - Agreement A1", "", 1, "R", false, 0, "")
		p.Ln(4)
	})
	p.SetFooterFunc(func() {
		p.SetY(-15)
		p.SetFont("Helvetica", "I", 8)
		p.CellFormat(0, 10, fmt.Sprintf("Page %d of {nb}", p.PageNo()), "", 0, "C", false, 0, "")
	})

	pages := []struct {
		heading string
		paras   []string
	}{
		{"Service Agreement A1", []string{
			"This agreement is made between Example Corp (the Customer) and Acme Hosting Ltd (the Provider) for the hosting of project A1.",
			"The agreement starts on 1 February 2026 and runs for twelve months unless terminated earlier under section 5.",
		}},
		{"Service levels", []string{
			"The Provider keeps the service available 99.9 percent of each calendar month, measured at the load balancer.",
			"Planned maintenance is announced five working days ahead and does not count against availability.",
			"For each full 0.1 percent below the target the Customer receives a credit of 5 percent of the monthly fee.",
		}},
		{"Fees and termination", []string{
			"The monthly fee is 4,800 EUR, invoiced at the start of each month and payable within 30 days.",
			"Either party may terminate with 60 days written notice. Data is returned in an open format within 14 days of termination.",
		}},
	}
	for _, pg := range pages {
		p.AddPage()
		p.SetFont("Helvetica", "B", 16)
		p.CellFormat(0, 10, pg.heading, "", 1, "L", false, 0, "")
		p.Ln(6)
		p.SetFont("Helvetica", "", 11)
		for _, para := range pg.paras {
			p.MultiCell(0, 6, para, "", "L", false)
			p.Ln(6)
		}
	}
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
