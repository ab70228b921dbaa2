//go:build unix

package organize

import (
	"syscall"
	"testing"
	"time"
)

// cpuTimer reports the process CPU time (user + system, all threads, GC
// included) per operation as "cpu-ns/op". On a machine shared with other
// work, wall-clock ns/op also counts time spent waiting for a core; CPU time
// is the cost of the code itself.
func cpuTimer(b *testing.B) func() {
	start := cpuNow(b)
	return func() {
		b.ReportMetric(float64(cpuNow(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
