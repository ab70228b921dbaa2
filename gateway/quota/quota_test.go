package quota_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestCodeIsTooManyRequests: a refusal's code is the one the front ends
// already answer as too many requests.
func TestCodeIsTooManyRequests(t *testing.T) {
	if quota.Code != core.CodeTooManyPending {
		t.Fatalf("quota.Code %d, core.CodeTooManyPending %d", quota.Code, core.CodeTooManyPending)
	}
}

// TestLimitsYAML reads the keys file's form.
func TestLimitsYAML(t *testing.T) {
	var f struct {
		Quota quota.Limits `yaml:"quota"`
	}
	src := `quota: {calls_per_second: 5, burst: 5, in_flight: 10, tools: {echo: {calls_per_second: 1, burst: 2}}}`
	if err := yaml.Unmarshal([]byte(src), &f); err != nil {
		t.Fatal(err)
	}
	want := quota.Limits{Bound: quota.Bound{CallsPerSecond: 5, Burst: 5, InFlight: 10},
		Tools: map[string]quota.Bound{"echo": {CallsPerSecond: 1, Burst: 2}}}
	if f.Quota.Bound != want.Bound || f.Quota.Tools["echo"] != want.Tools["echo"] || len(f.Quota.Tools) != 1 {
		t.Fatalf("got %+v, want %+v", f.Quota, want)
	}
	if err := f.Quota.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestLimitsValidate names the bad bound.
func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		l    quota.Limits
		want string
	}{
		{quota.Limits{Bound: quota.Bound{CallsPerSecond: -1}}, "calls_per_second -1"},
		{quota.Limits{Bound: quota.Bound{Burst: -1}}, "burst -1"},
		{quota.Limits{Tools: map[string]quota.Bound{"echo": {InFlight: -2}}}, "tools: echo: in_flight -2"},
		{quota.Limits{Tools: map[string]quota.Bound{"": {InFlight: 1}}}, "empty tool name"},
	} {
		err := c.l.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error with %q", c.l, err, c.want)
		}
	}
}

// burstThenRefuse spends a burst-5 allowance of rate per second and checks
// the next call is refused with a wait of at most one interval.
func burstThenRefuse(t *testing.T, q *quota.Quotas, principal string, rate float64) {
	t.Helper()
	l := &quota.Limits{Bound: quota.Bound{CallsPerSecond: rate, Burst: 5}}
	ctx := context.Background()
	for i := range 5 {
		if _, err := q.Admit(ctx, principal, "echo", l, time.Now()); err != nil {
			t.Fatalf("call %d of the burst: %v", i, err)
		}
	}
	_, err := q.Admit(ctx, principal, "echo", l, time.Now())
	e, ok := smcp.AsError(err)
	if !ok || e.Code != quota.Code {
		t.Fatalf("6th call: want a 429, got %v", err)
	}
	wait, ok := core.RetryAfter(e)
	if interval := time.Duration(float64(time.Second) / rate); !ok || wait <= 0 || wait > interval {
		t.Fatalf("retry after %v (%v), want in (0, %v]", wait, ok, interval)
	}
}

// TestRedisMiniredis: the GCRA in Redis (miniredis) admits the burst and
// refuses with the wait, shared by two Quotas (two nodes).
func TestRedisMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	burstThenRefuse(t, quota.New(quota.Options{Redis: rdb}), "slow", 5)
	// Another node sees the same spent allowance.
	other := quota.New(quota.Options{Redis: rdb})
	_, err := other.Admit(context.Background(), "slow", "echo", &quota.Limits{Bound: quota.Bound{CallsPerSecond: 5, Burst: 5}}, time.Now())
	if e, ok := smcp.AsError(err); !ok || e.Code != quota.Code {
		t.Fatalf("second node: want a 429, got %v", err)
	}
}

// TestRedisDownFallsBackToNode: while Redis fails, each node counts on its
// own (the limit still holds per node), with one WARN. The rate is low
// enough that the failed dials' time refills nothing.
func TestRedisDownFallsBackToNode(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	var logs bytes.Buffer
	q := quota.New(quota.Options{Redis: rdb, Timeout: time.Second,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	mr.Close()
	burstThenRefuse(t, q, "slow", 0.1)
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines, want 1:\n%s", n, logs.String())
	}
}

// TestSharedLimitRedisServer: three Quotas on one real redis-server, as
// three nodes, hammer one principal's limit; in every 1 s window the calls
// admitted are at most rate + burst, plus one per node for the edges of
// the window (admission is decided on Redis's clock, seen here on the
// test's).
func TestSharedLimitRedisServer(t *testing.T) {
	url := systest.RedisServer(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	const (
		nodes   = 3
		workers = 4
		rate    = 20
		burst   = 5
		run     = 2500 * time.Millisecond
	)
	l := &quota.Limits{Bound: quota.Bound{CallsPerSecond: rate, Burst: burst}}
	var (
		mu       sync.Mutex
		admitted []time.Time
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	for range nodes {
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		q := quota.New(quota.Options{Redis: rdb})
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					_, err := q.Admit(context.Background(), "shared", "echo", l, time.Now())
					at := time.Now()
					if err == nil {
						mu.Lock()
						admitted = append(admitted, at)
						mu.Unlock()
						continue
					}
					if e, ok := smcp.AsError(err); !ok || e.Code != quota.Code {
						t.Errorf("want a 429, got %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
	if len(admitted) <= burst {
		t.Fatalf("only %d calls admitted in %v", len(admitted), run)
	}
	most := 0
	for i, start := range admitted {
		j, _ := slices.BinarySearchFunc(admitted[i:], start.Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
		most = max(most, j)
	}
	if most > rate+burst+nodes {
		t.Fatalf("%d calls admitted in one 1 s window, want at most %d+%d+%d (of %d in all)", most, rate, burst, nodes, len(admitted))
	}
	t.Logf("%d admitted in %v; at most %d in a 1 s window", len(admitted), run, most)
}

// TestTable: a key's own quota, then a token's claim value's, then the
// default; a bad entry is refused by name.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/keys.yaml"
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`
quota: {calls_per_second: 20}
quota_by_claim: {claim: groups, values: {interns: {calls_per_second: 1}}}
keys:
  - {id: slow, key: a, quota: {calls_per_second: 5, burst: 5}}
  - {key: b, quota: {in_flight: 2}}
  - {id: plain, key: c}
`)
	tb, err := quota.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id     string
		claims map[string]any
		want   quota.Bound
	}{
		{"slow", nil, quota.Bound{CallsPerSecond: 5, Burst: 5}},
		{"key#1", nil, quota.Bound{InFlight: 2}},
		{"plain", nil, quota.Bound{CallsPerSecond: 20}},
		{"oidc:x", map[string]any{"groups": []any{"staff", "interns"}}, quota.Bound{CallsPerSecond: 1}},
		{"oidc:y", map[string]any{"groups": "staff"}, quota.Bound{CallsPerSecond: 20}},
	} {
		if got := tb.For(c.id, c.claims); got == nil || got.Bound != c.want {
			t.Errorf("%s %v: got %+v, want %+v", c.id, c.claims, got, c.want)
		}
	}
	write("keys:\n  - {id: bad, key: a, quota: {burst: -1}}\n")
	if _, err := quota.LoadFile(path); err == nil || !strings.Contains(err.Error(), "key bad: quota: burst -1") {
		t.Fatalf("bad quota: %v", err)
	}
}

// TestTokens: the calls a principal may make at once are its bucket's
// tokens, read without spending any: a fresh bucket has the whole burst,
// each call admitted takes one; with Redis, every node reads the shared
// bucket. Calls in flight are listed by principal.
func TestTokens(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	// A rate slow enough that no token comes back during the test.
	l := &quota.Limits{Bound: quota.Bound{CallsPerSecond: 0.01, Burst: 3, InFlight: 5}}
	ctx := context.Background()
	for name, q := range map[string]*quota.Quotas{"memory": quota.New(quota.Options{}), "redis": quota.New(quota.Options{Redis: rdb})} {
		t.Run(name, func(t *testing.T) {
			tokens := func(q *quota.Quotas) float64 {
				n, ok, err := q.Tokens(ctx, "p-"+name, "", l.Bound)
				if err != nil || !ok {
					t.Fatalf("tokens: %v %v", ok, err)
				}
				return n
			}
			for range 3 { // reading spends nothing
				if n := tokens(q); n != 3 {
					t.Fatalf("fresh bucket: %v tokens, want 3", n)
				}
			}
			tk, err := q.Admit(ctx, "p-"+name, "echo", l, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if n := tokens(q); n < 1.99 || n > 2.01 {
				t.Fatalf("after a call: %v tokens, want 2", n)
			}
			if got := q.Flying(); got["p-"+name] != 1 || len(got) != 1 {
				t.Fatalf("flying: %v", got)
			}
			tk.Release()
			if got := q.Flying(); len(got) != 0 {
				t.Fatalf("flying after release: %v", got)
			}
			if name == "redis" {
				if n := tokens(quota.New(quota.Options{Redis: rdb})); n != 2 {
					t.Fatalf("another node reads %v tokens, want 2", n)
				}
			}
			if _, ok, _ := q.Tokens(ctx, "p", "", quota.Bound{InFlight: 1}); ok {
				t.Fatal("tokens of a bound without a rate")
			}
		})
	}
}
