package utils

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// settledGoroutines waits for the goroutine count to come down to want.
func settledGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// A timeout cleared at once, before its goroutine reaches its select, ends
// that goroutine (upstream's non-blocking send was lost then, and the
// goroutine waited forever).
func TestClearedTimersLeaveNoGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	var fired atomic.Int64
	for range 2000 {
		ClearTimeout(SetTimeout(func() { fired.Add(1) }, time.Hour))
		ClearInterval(SetInterval(func() { fired.Add(1) }, time.Hour))
	}
	if n := settledGoroutines(base); n > base {
		t.Fatalf("%d goroutines left by 4,000 cleared timers", n-base)
	}
	if fired.Load() != 0 {
		t.Fatalf("cleared timers fired %d times", fired.Load())
	}
}

// An interval cleared while it ticks stops ticking.
func TestClearedIntervalStops(t *testing.T) {
	base := runtime.NumGoroutine()
	var ticks atomic.Int64
	for range 50 {
		iv := SetInterval(func() { ticks.Add(1) }, time.Microsecond)
		time.Sleep(time.Millisecond)
		ClearInterval(iv)
	}
	if n := settledGoroutines(base); n > base {
		t.Fatalf("%d goroutines left by 50 cleared intervals", n-base)
	}
	before := ticks.Load()
	time.Sleep(20 * time.Millisecond)
	if after := ticks.Load(); after != before {
		t.Fatalf("cleared intervals still tick: %d -> %d", before, after)
	}
}

func TestTimeoutFires(t *testing.T) {
	done := make(chan struct{})
	SetTimeout(func() { close(done) }, time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("timeout did not fire")
	}
}
