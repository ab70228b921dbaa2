package quota

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Code is the SMCP code of a refusal: 429, which every front end already
// answers as too many requests (HTTP 429, ResourceExhausted).
const Code = 429

// Bound names, in a refusal's details.bound and in metrics.
const (
	BoundRate     = "calls_per_second"
	BoundInFlight = "in_flight"
)

// Options configure Quotas.
type Options struct {
	// Redis, when set, holds the rates, shared by every node using it;
	// nil keeps them in this process.
	Redis redis.UniversalClient
	// Timeout bounds each Redis call (default 1 s). A Redis that fails or
	// is slower falls back to this node's own count, so that an outage
	// neither stops calls nor lifts the limit (each node then allows the
	// limit on its own).
	Timeout time.Duration
	Log     *slog.Logger
}

// Quotas admits calls within their Limits. Safe for concurrent use.
type Quotas struct {
	rates   rater
	flights flights
}

// rater spends one call's allowance of the bucket k, or reports how long
// until there is one.
type rater interface {
	allow(ctx context.Context, k key, b Bound) (wait time.Duration)
}

// key is a bucket: a principal's own (tool empty) or one of its tools'.
type key struct {
	principal, tool string
	perTool         bool
}

// New returns Quotas on memory or, with opts.Redis, on Redis.
func New(opts Options) *Quotas {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	mem := newMemRates()
	q := &Quotas{rates: mem, flights: flights{n: map[key]int{}}}
	if opts.Redis != nil {
		if opts.Timeout <= 0 {
			opts.Timeout = time.Second
		}
		q.rates = &redisRates{lim: redis_rate.NewLimiter(opts.Redis), timeout: opts.Timeout, fallback: mem, log: opts.Log}
	}
	return q
}

// Ticket is an admitted call's hold on its in-flight bounds, given back
// by Release. The zero Ticket holds nothing.
type Ticket struct {
	f            *flights
	principal    key
	tool         key
	holdP, holdT bool
}

// Release gives back what the call held. Call it once, when the call ends.
func (t Ticket) Release() {
	if t.holdT {
		t.f.release(t.tool)
	}
	if t.holdP {
		t.f.release(t.principal)
	}
}

// Admit admits one call of principal to tool within l, or refuses it with
// a 429 *smcp.Error naming the bound that was hit and, for a rate, the
// wait (details.retry_after_ms; core.RetryAfter reads it). The caller releases the
// ticket when the call ends. A nil or unlimited l admits at no cost.
//
// The tool's bound is checked before the principal's, and the in-flight
// bounds before the rates: a call refused by a later bound has spent the
// earlier rates' allowance (the GCRA scripts cannot take one back), which
// errs on the side of fewer calls; the tool's first, because a call the
// principal's rate refuses comes when the principal is at its limit
// anyway.
func (q *Quotas) Admit(ctx context.Context, principal, tool string, l *Limits) (Ticket, error) {
	if l.Unlimited() {
		return Ticket{}, nil
	}
	tb, hasTool := l.Tools[tool]
	t := Ticket{f: &q.flights, principal: key{principal: principal}, tool: key{principal: principal, tool: tool, perTool: true}}
	if hasTool && tb.InFlight > 0 {
		if !q.flights.acquire(t.tool, tb.InFlight) {
			return Ticket{}, refusal(BoundInFlight, tool, tb, 0)
		}
		t.holdT = true
	}
	if l.InFlight > 0 {
		if !q.flights.acquire(t.principal, l.InFlight) {
			t.Release()
			return Ticket{}, refusal(BoundInFlight, "", l.Bound, 0)
		}
		t.holdP = true
	}
	if hasTool && tb.CallsPerSecond > 0 {
		if wait := q.rates.allow(ctx, t.tool, tb); wait > 0 {
			t.Release()
			return Ticket{}, refusal(BoundRate, tool, tb, wait)
		}
	}
	if l.CallsPerSecond > 0 {
		if wait := q.rates.allow(ctx, t.principal, l.Bound); wait > 0 {
			t.Release()
			return Ticket{}, refusal(BoundRate, "", l.Bound, wait)
		}
	}
	return t, nil
}

// refusal is the 429 of a bound hit: the message says which bound, the
// details carry it for programs (bound, tool, limit, retry_after_ms).
func refusal(bound, tool string, b Bound, wait time.Duration) *smcp.Error {
	scope := "this key"
	if tool != "" {
		scope = fmt.Sprintf("this key's calls of tool %q", tool)
	}
	details := map[string]any{"bound": bound}
	if tool != "" {
		details["tool"] = tool
	}
	var e *smcp.Error
	switch bound {
	case BoundInFlight:
		details["limit"] = b.InFlight
		// No wait is known: room comes back when one of the calls ends.
		e = smcp.Errorf(Code, "quota: %s may have %d calls in flight", scope, b.InFlight)
	default:
		ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
		details["limit"] = b.CallsPerSecond
		details["burst"] = b.burst()
		details["retry_after_ms"] = ms
		e = smcp.Errorf(Code, "quota: %s may make %s calls per second (burst %d); retry after %dms",
			scope, strconv.FormatFloat(b.CallsPerSecond, 'f', -1, 64), b.burst(), ms)
	}
	return e.WithDetails(details)
}

// flights counts calls in flight per bucket, on this node.
type flights struct {
	mu sync.Mutex
	n  map[key]int
}

func (f *flights) acquire(k key, limit int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[k] >= limit {
		return false
	}
	f.n[k]++
	return true
}

func (f *flights) release(k key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := f.n[k] - 1; n > 0 {
		f.n[k] = n
	} else {
		delete(f.n, k)
	}
}

// InFlight returns the calls in flight of principal (tool empty) or of
// one of its tools, on this node.
func (q *Quotas) InFlight(principal, tool string) int {
	q.flights.mu.Lock()
	defer q.flights.mu.Unlock()
	return q.flights.n[key{principal: principal, tool: tool, perTool: tool != ""}]
}

// memRates keeps each bucket in a rate.Limiter, dropping those that are
// full again (they are as good as new) once a minute, so that principals
// and tools that come and go do not grow the map for ever.
type memRates struct {
	mu        sync.Mutex
	buckets   map[key]*memBucket
	lastSweep time.Time
	now       func() time.Time
}

type memBucket struct {
	bound Bound
	lim   *rate.Limiter
}

// sweepEvery is how often full buckets are dropped.
const sweepEvery = time.Minute

func newMemRates() *memRates {
	return &memRates{buckets: map[key]*memBucket{}, now: time.Now}
}

func (m *memRates) allow(_ context.Context, k key, b Bound) time.Duration {
	now := m.now()
	m.mu.Lock()
	// Held to the end: a sweep must not drop the bucket being spent.
	bk := m.buckets[k]
	if bk == nil {
		if now.Sub(m.lastSweep) >= sweepEvery {
			m.sweep(now)
		}
		bk = &memBucket{bound: b, lim: rate.NewLimiter(rate.Every(b.interval()), b.burst())}
		m.buckets[k] = bk
	} else if bk.bound != b { // the keys were reloaded
		bk.bound = b
		bk.lim.SetLimitAt(now, rate.Every(b.interval()))
		bk.lim.SetBurstAt(now, b.burst())
	}
	defer m.mu.Unlock()
	r := bk.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

func (m *memRates) sweep(now time.Time) {
	m.lastSweep = now
	for k, bk := range m.buckets {
		if bk.lim.TokensAt(now) >= float64(bk.lim.Burst()) {
			delete(m.buckets, k)
		}
	}
}

// redisRates runs the GCRA in Redis (redis_rate), falling back to this
// node's memory while Redis fails, with one WARN a minute.
type redisRates struct {
	lim      *redis_rate.Limiter
	timeout  time.Duration
	fallback *memRates
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds
}

// keyPrefix namespaces the buckets in Redis (redis_rate adds "rate:").
const keyPrefix = "smcp:quota:"

func (r *redisRates) allow(ctx context.Context, k key, b Bound) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	res, err := r.lim.Allow(ctx, redisKey(k), redisLimit(b))
	cancel()
	if err != nil {
		r.warn(err)
		return r.fallback.allow(ctx, k, b)
	}
	if res.Allowed > 0 {
		return 0
	}
	return max(res.RetryAfter, time.Millisecond)
}

func (r *redisRates) warn(err error) {
	now := time.Now().UnixNano()
	last := r.lastWarn.Load()
	if now-last < int64(time.Minute) || !r.lastWarn.CompareAndSwap(last, now) {
		return
	}
	r.log.Warn("quota: Redis failed; each node counts calls on its own until it answers", "err", err)
}

// redisKey names a bucket; "p:" and "t:" keep a principal's bucket from
// meeting a tool's, the principal's length a principal with a ":" from
// meeting another's tool.
func redisKey(k key) string {
	if !k.perTool {
		return keyPrefix + "p:" + k.principal
	}
	return keyPrefix + "t:" + strconv.Itoa(len(k.principal)) + ":" + k.principal + ":" + k.tool
}

// redisLimit is b in redis_rate's terms, whose rate is a whole number per
// period: a whole rate per second as is, any other as one per interval.
func redisLimit(b Bound) redis_rate.Limit {
	if r := b.CallsPerSecond; r >= 1 && r == math.Trunc(r) && r < math.MaxInt32 {
		return redis_rate.Limit{Rate: int(r), Burst: b.burst(), Period: time.Second}
	}
	return redis_rate.Limit{Rate: 1, Burst: b.burst(), Period: b.interval()}
}
