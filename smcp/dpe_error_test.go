package smcp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// The 4204 fixture is what dpeuri actually answers for a bad limit.
func TestDPEErrorMatchesGolden(t *testing.T) {
	_, err := dpeuri.Parse("dpe://com.example.docs/rpt?limit=500")
	e, ok := smcp.AsError(err)
	if !ok {
		t.Fatalf("Parse error %v is not an *smcp.Error", err)
	}
	got, err := smcp.Marshal(e.Proto())
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden/error.details.json")
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil {
		t.Fatal("invalid JSON")
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("got %s\nwant %s", gb, wb)
	}
}
