package quota

import (
	"context"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// clocked returns memory Quotas on a clock the test moves.
func clocked() (*Quotas, *time.Time) {
	q := New(Options{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q.now = func() time.Time { return now }
	return q, &now
}

// refused checks err is the 429 of bound (and tool), returning its details.
func refused(t *testing.T, err error, bound, tool string) map[string]any {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok || e.Code != Code {
		t.Fatalf("want a %d refusal of %s, got %v", Code, bound, err)
	}
	if e.Details["bound"] != bound {
		t.Fatalf("refusal names bound %v, want %s (%v)", e.Details["bound"], bound, e)
	}
	if got, _ := e.Details["tool"].(string); got != tool {
		t.Fatalf("refusal names tool %q, want %q (%v)", got, tool, e)
	}
	return e.Details
}

// TestRateBurstThenWait: 5/s with a burst of 5 admits 5 at once, refuses
// the 6th with the wait until the next (200 ms), and admits one when that
// time has come.
func TestRateBurstThenWait(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{CallsPerSecond: 5, Burst: 5}}
	ctx := context.Background()
	for i := range 5 {
		if _, err := q.Admit(ctx, "slow", "echo", l, *now); err != nil {
			t.Fatalf("call %d of the burst: %v", i, err)
		}
	}
	_, err := q.Admit(ctx, "slow", "echo", l, *now)
	d := refused(t, err, BoundRate, "")
	if d["retry_after_ms"] != int64(200) {
		t.Fatalf("retry_after_ms = %v, want 200", d["retry_after_ms"])
	}
	*now = now.Add(199 * time.Millisecond)
	if _, err := q.Admit(ctx, "slow", "echo", l, *now); err == nil {
		t.Fatal("admitted 1 ms before the wait it announced")
	}
	*now = now.Add(time.Millisecond)
	if _, err := q.Admit(ctx, "slow", "echo", l, *now); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
	// Another principal has its own allowance.
	if _, err := q.Admit(ctx, "other", "echo", l, *now); err != nil {
		t.Fatalf("another principal: %v", err)
	}
}

// TestToolBoundBesidePrincipal: a tool's bound refuses that tool only,
// naming it; the principal's other tools go on within its own bound.
func TestToolBoundBesidePrincipal(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{CallsPerSecond: 10, Burst: 10},
		Tools: map[string]Bound{"echo": {CallsPerSecond: 1, Burst: 2}}}
	ctx := context.Background()
	for range 2 {
		if _, err := q.Admit(ctx, "k", "echo", l, *now); err != nil {
			t.Fatal(err)
		}
	}
	_, err := q.Admit(ctx, "k", "echo", l, *now)
	if d := refused(t, err, BoundRate, "echo"); d["retry_after_ms"] != int64(1000) {
		t.Fatalf("retry_after_ms = %v, want 1000", d["retry_after_ms"])
	}
	for i := range 8 {
		if _, err := q.Admit(ctx, "k", "add", l, *now); err != nil {
			t.Fatalf("call %d of another tool: %v", i, err)
		}
	}
	// The principal's 10 are spent (2 echo, 8 add): its own bound now.
	_, err = q.Admit(ctx, "k", "add", l, *now)
	refused(t, err, BoundRate, "")
}

// TestInFlight: the principal's and a tool's calls in flight are bounded;
// a released ticket makes room, and a refusal holds nothing.
func TestInFlight(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{InFlight: 3}, Tools: map[string]Bound{"slow": {InFlight: 1}}}
	ctx := context.Background()
	slow, err := q.Admit(ctx, "k", "slow", l, *now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Admit(ctx, "k", "slow", l, *now)
	if d := refused(t, err, BoundInFlight, "slow"); d["retry_after_ms"] != nil {
		t.Fatalf("an in-flight refusal announces a wait it cannot know: %v", d)
	}
	a, err := q.Admit(ctx, "k", "echo", l, *now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := q.Admit(ctx, "k", "echo", l, *now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Admit(ctx, "k", "echo", l, *now)
	refused(t, err, BoundInFlight, "")
	if n := q.InFlight("k", ""); n != 3 {
		t.Fatalf("in flight %d, want 3 (refusals hold nothing)", n)
	}
	slow.Release()
	if n := q.InFlight("k", "slow"); n != 0 {
		t.Fatalf("tool in flight %d after release, want 0", n)
	}
	if _, err := q.Admit(ctx, "k", "echo", l, *now); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	a.Release()
	b.Release()
	if n := q.InFlight("k", ""); n != 1 {
		t.Fatalf("in flight %d, want 1", n)
	}
}

// TestRateRefusalReleasesInFlight: a call refused by its rate gives back
// the in-flight room it took on the way.
func TestRateRefusalReleasesInFlight(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{CallsPerSecond: 1, Burst: 1, InFlight: 5}}
	ctx := context.Background()
	tk, err := q.Admit(ctx, "k", "t", l, *now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Admit(ctx, "k", "t", l, *now)
	refused(t, err, BoundRate, "")
	if n := q.InFlight("k", ""); n != 1 {
		t.Fatalf("in flight %d after a rate refusal, want 1", n)
	}
	tk.Release()
}

// TestUnlimited: no limits, or all zero, admit everything and hold
// nothing.
func TestUnlimited(t *testing.T) {
	q, now := clocked()
	for _, l := range []*Limits{nil, {}, {Tools: map[string]Bound{"echo": {}}}} {
		for range 100 {
			tk, err := q.Admit(context.Background(), "k", "echo", l, *now)
			if err != nil {
				t.Fatalf("%+v: %v", l, err)
			}
			tk.Release()
		}
	}
	if len(q.principals) != 0 {
		t.Fatal("unlimited calls made buckets")
	}
}

// TestReloadedBound: a bucket takes a changed bound (a keys reload) at
// once.
func TestReloadedBound(t *testing.T) {
	q, now := clocked()
	ctx := context.Background()
	l := &Limits{Bound: Bound{CallsPerSecond: 1, Burst: 1}}
	if _, err := q.Admit(ctx, "k", "t", l, *now); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Admit(ctx, "k", "t", l, *now); err == nil {
		t.Fatal("second call admitted at 1/s burst 1")
	}
	// 100 ms in, a tenth of a call came back at 1/s; the rest comes at
	// the new 10/s, in 90 ms (not the old rate's 900 ms).
	*now = now.Add(100 * time.Millisecond)
	l = &Limits{Bound: Bound{CallsPerSecond: 10, Burst: 1}}
	_, err := q.Admit(ctx, "k", "t", l, *now)
	if d := refused(t, err, BoundRate, ""); d["retry_after_ms"] != int64(90) {
		t.Fatalf("retry_after_ms = %v, want 90 (the new rate's)", d["retry_after_ms"])
	}
}

// TestSweepDropsFullBuckets: buckets that filled up again are dropped
// once a minute, so that the map does not keep every principal seen.
func TestSweepDropsFullBuckets(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{CallsPerSecond: 1, Burst: 1}}
	ctx := context.Background()
	for _, p := range []string{"a", "b", "c"} {
		if _, err := q.Admit(ctx, p, "t", l, *now); err != nil {
			t.Fatal(err)
		}
	}
	*now = now.Add(sweepEvery)
	if _, err := q.Admit(ctx, "d", "t", l, *now); err != nil {
		t.Fatal(err)
	}
	if len(q.principals) != 1 {
		t.Fatalf("%d principals' buckets after the sweep, want 1 (d's)", len(q.principals))
	}
}

// TestSweepKeepsCallsInFlight: a bucket with a call in flight is not
// idle, whatever its rate: the sweep keeps it, and the ticket releases
// what the next admission counts.
func TestSweepKeepsCallsInFlight(t *testing.T) {
	q, now := clocked()
	l := &Limits{Bound: Bound{CallsPerSecond: 1, Burst: 1, InFlight: 1}}
	ctx := context.Background()
	held, err := q.Admit(ctx, "a", "t", l, *now)
	if err != nil {
		t.Fatal(err)
	}
	*now = now.Add(sweepEvery) // a's rate is whole again
	if _, err := q.Admit(ctx, "b", "t", l, *now); err != nil {
		t.Fatal(err)
	}
	_, err = q.Admit(ctx, "a", "t", l, *now)
	refused(t, err, BoundInFlight, "")
	held.Release()
	if _, err := q.Admit(ctx, "a", "t", l, *now); err != nil {
		t.Fatalf("after the release: %v", err)
	}
}

// TestRedisLimit: redis_rate's whole-number rates.
func TestRedisLimit(t *testing.T) {
	for _, c := range []struct {
		b           Bound
		rate, burst int
		period      time.Duration
	}{
		{Bound{CallsPerSecond: 5, Burst: 5}, 5, 5, time.Second},
		{Bound{CallsPerSecond: 5}, 5, 5, time.Second},
		{Bound{CallsPerSecond: 0.5}, 1, 1, 2 * time.Second},
		{Bound{CallsPerSecond: 2.5, Burst: 4}, 1, 4, 400 * time.Millisecond},
	} {
		got := redisLimit(c.b)
		if got.Rate != c.rate || got.Burst != c.burst || got.Period != c.period {
			t.Errorf("%+v: got %v, want %d/%v burst %d", c.b, got, c.rate, c.period, c.burst)
		}
	}
	if redisKey(key{principal: "a:1", tool: "x", perTool: true}) == redisKey(key{principal: "a", tool: "1:x", perTool: true}) {
		t.Fatal("two buckets share a Redis key")
	}
}
