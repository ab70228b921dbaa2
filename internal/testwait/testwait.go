// Package testwait polls a condition until it holds, for tests that wait on
// something another goroutine or process brings about.
package testwait

import (
	"testing"
	"time"
)

// Timeout bounds Until: a deadline for a broken test, not a timing
// assertion, so it is generous for a loaded machine under -race.
const Timeout = 10 * time.Second

// interval is the least pause between two looks at the condition.
const interval = 5 * time.Millisecond

// Until polls cond until it holds, failing t with what was awaited once
// Timeout has passed.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within is Until with a bound of its own, for a wait that may take longer.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Poll polls cond until it holds (true) or d has passed (false). For a
// caller whose failure message reports the state it saw, or whose wait is
// not Timeout.
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		start := time.Now()
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		// Pausing at least as long as cond took keeps an expensive one (an
		// RPC, a child process) from taking the machine from what it awaits.
		time.Sleep(max(interval, time.Since(start)))
	}
}
