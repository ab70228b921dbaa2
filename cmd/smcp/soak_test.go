package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSoakReturnsToBaseline is the short soak of `make test`: steady
// Socket.IO tool_call traffic through a spawned gateway (this test binary
// re-executed as `smcp gateway`), then every client gone. The gateway's
// goroutines must come back to their starting count and its heap (after a
// GC) must not have grown beyond a small allowance: a per-call or
// per-connection leak over tens of thousands of calls would exceed it. The
// longer runs and their figures are in docs/RELIABILITY.md.
func TestSoakReturnsToBaseline(t *testing.T) {
	t.Setenv("SMCP_TEST_MAIN", "argv")
	var out bytes.Buffer
	err := benchMain(t.Context(), []string{
		"-mode", "sio", "-offices", "4", "-warmup", "1s", "-duration", "12s", "-json",
	}, &out)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out.String())
	}
	var rep benchReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	const goroutineSlack, heapSlack = 3, 8 << 20
	found := false
	for _, row := range rep.Rows {
		if row.Server != "gateway" {
			continue
		}
		found = true
		t.Logf("%d calls (%d errors); goroutines %d → %d; heap in use %.1f → %.1f MiB",
			row.Calls, row.Errors, row.GoroutinesStart, row.GoroutinesEnd,
			float64(row.HeapStart)/(1<<20), float64(row.HeapEnd)/(1<<20))
		if row.Calls < 1000 || row.Errors != 0 {
			t.Errorf("the soak drove too little or failing traffic: %d calls, %d errors (%s)", row.Calls, row.Errors, row.FirstError)
		}
		if row.GoroutinesEnd > row.GoroutinesStart+goroutineSlack {
			t.Errorf("goroutines grew: %d at start, %d after every client left", row.GoroutinesStart, row.GoroutinesEnd)
		}
		if row.HeapEnd > row.HeapStart+heapSlack {
			t.Errorf("heap grew: %d bytes at start, %d after every client left", row.HeapStart, row.HeapEnd)
		}
	}
	if !found {
		t.Fatalf("no gateway row in the report:\n%s", out.String())
	}
}
