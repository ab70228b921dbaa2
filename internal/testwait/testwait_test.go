package testwait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fatalRecorder keeps Fatalf's message instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	r := &fatalRecorder{TB: t}
	Within(r, time.Minute, "the third look", func() bool { return n.Add(1) == 3 })
	if r.msg != "" || n.Load() != 3 {
		t.Fatalf("after %d looks: %q", n.Load(), r.msg)
	}
}

func TestUntilFailsNamingWhatWasAwaited(t *testing.T) {
	r := &fatalRecorder{TB: t}
	start := time.Now()
	Within(r, 50*time.Millisecond, "the impossible", func() bool { return false })
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the deadline", took)
	}
	if !strings.Contains(r.msg, "waiting for the impossible") || !strings.Contains(r.msg, "50ms") {
		t.Errorf("message %q does not say what was awaited, or how long", r.msg)
	}
}

func TestPollPausesAsLongAsAnExpensiveCondition(t *testing.T) {
	var n atomic.Int32
	Poll(200*time.Millisecond, func() bool {
		n.Add(1)
		time.Sleep(40 * time.Millisecond)
		return false
	})
	// 40 ms looks with 40 ms pauses: about 3, at most 4 in 200 ms; with
	// only the 5 ms interval there would be 5.
	if got := n.Load(); got > 4 {
		t.Errorf("%d looks at a 40 ms condition in 200 ms", got)
	}
}
