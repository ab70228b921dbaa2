package soak

import (
	"context"
	"os"
	"testing"
	"time"
)

// A short soak: steady calls over four offices and a reconnecting computer
// must not grow goroutines or heap between the first and second half, and
// everything must be released once the gateway and clients are closed.
func TestShortSoak(t *testing.T) {
	d := 16 * time.Second
	if testing.Short() {
		d = 6 * time.Second
	}
	var progress *os.File
	if testing.Verbose() {
		progress = os.Stderr
	}
	o := Options{Duration: d, Interval: time.Second}
	if progress != nil {
		o.Progress = progress
	}
	rep, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	last := rep.Samples[len(rep.Samples)-1]
	if last.Calls == 0 {
		t.Fatal("no calls were made")
	}
	if rep.Errors > 0 {
		t.Errorf("%d calls failed", rep.Errors)
	}
	g, h := rep.Growth()
	t.Logf("calls %d, goroutine growth %d, heap growth %d KiB, goroutines baseline %d after %d",
		last.Calls, g, h>>10, rep.Baseline.Goroutines, rep.After.Goroutines)
	// Tolerances: a few goroutines of connections being set up at a sample,
	// and 8 MiB of heap (buffers and pools), are not a leak.
	if g > 20 {
		t.Errorf("goroutines grew by %d between the halves of the run", g)
	}
	if h > 8<<20 {
		t.Errorf("heap grew by %d KiB between the halves of the run", h>>10)
	}
	if leaked := rep.After.Goroutines - rep.Baseline.Goroutines; leaked > 5 {
		t.Errorf("%d goroutines left after everything was closed", leaked)
	}
}
