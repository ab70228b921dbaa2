package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// The committed docs/PROTOCOL.md holds what the protocol table says: a change
// to smcp/protocol.go without `make generate` fails here (and in
// check-generated).
func TestProtocolDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "PROTOCOL.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := fill(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(doc) {
		t.Fatalf("%s is stale: run 'make generate' (or go run ./internal/cmd/protocoldoc docs/PROTOCOL.md)", path)
	}
}

// Each event of the table is a row, with the ack form of each profile and
// "—" where the profile lacks it: checked against smcp's own answers, not
// against the generator's text.
func TestEventsTableRows(t *testing.T) {
	table := eventsTable()
	rows := map[string][]string{}
	for line := range strings.SplitSeq(table, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) < 5 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		rows[strings.Trim(cells[0], "| `")] = cells
	}
	n := 0
	for _, k := range []smcp.Kind{smcp.Server, smcp.Routed, smcp.Notify} {
		for _, e := range smcp.Events(k) {
			n++
			cells, ok := rows[e.Name]
			if !ok {
				t.Errorf("no row for %s", e.Name)
				continue
			}
			for i, v := range smcp.Versions() {
				got := cells[2+i]
				if e.In(v) != (got != "—") {
					t.Errorf("%s in %s: %v, cell %q", e.Name, v, e.In(v), got)
				}
			}
		}
	}
	if n != len(rows) || n < 20 {
		t.Errorf("%d events, %d rows", n, len(rows))
	}
	// Spot checks of known answers, from the specification.
	if c := rows["server:tool_call_cancel"]; c[2] != "`[]` if asked" || c[3] != "no ack" {
		t.Errorf("server:tool_call_cancel: %q", c)
	}
	if c := rows["client:put_blob"]; c[2] != "—" || c[3] != "—" || c[4] != "answer / flat error" {
		t.Errorf("client:put_blob: %q", c)
	}
}

func TestFillNeedsMarkers(t *testing.T) {
	if _, err := fill([]byte("# no markers\n")); err == nil {
		t.Fatal("a page without the markers was filled")
	}
	twice := "<!-- protocoldoc:events begin -->\n<!-- protocoldoc:events end -->\n"
	if _, err := fill([]byte(twice + twice)); err == nil {
		t.Fatal("a section given twice was filled")
	}
}
