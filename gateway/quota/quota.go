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
//
// The buckets of this node (the calls in flight, and the rates when they
// are not in Redis or while it fails) are kept per principal under one
// lock: an admission is one lock and one lookup, a release one lock.
type Quotas struct {
	mu         sync.Mutex
	principals map[string]*buckets
	lastSweep  time.Time
	now        func() time.Time // Tokens' clock
	redis      *redisRates      // nil: the rates are counted here
}

// buckets are a principal's: its own, and those of its tools that have
// bounds of their own.
type buckets struct {
	own   bucket
	tools map[string]*bucket
}

// bucket counts the calls of one bound: in flight on this node, and its
// rate when counted here.
type bucket struct {
	flying int
	bound  Bound         // lim's, to see a reload
	lim    *rate.Limiter // nil until a call spends the rate here
}

// key names a bucket: a principal's own (tool empty) or one of its tools'.
type key struct {
	principal, tool string
	perTool         bool
}

// sweepEvery is how often idle buckets are dropped: those with no call in
// flight and their rate's allowance whole again (as good as new), so that
// principals and tools that come and go do not grow the map for ever.
const sweepEvery = time.Minute

// New returns Quotas on memory or, with opts.Redis, on Redis.
func New(opts Options) *Quotas {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	q := &Quotas{principals: map[string]*buckets{}, now: time.Now}
	if opts.Redis != nil {
		if opts.Timeout <= 0 {
			opts.Timeout = time.Second
		}
		q.redis = &redisRates{lim: redis_rate.NewLimiter(opts.Redis), timeout: opts.Timeout, fallback: q.spendHere, log: opts.Log}
	}
	return q
}

// Ticket is an admitted call's hold on its in-flight bounds, given back
// by Release. The zero Ticket holds nothing.
type Ticket struct {
	q         *Quotas
	own, tool *bucket // nil: not held
}

// Release gives back what the call held. Call it once, when the call ends.
func (t Ticket) Release() {
	if t.own == nil && t.tool == nil {
		return
	}
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	if t.tool != nil {
		t.tool.flying--
	}
	if t.own != nil {
		t.own.flying--
	}
}

// Admit admits one call of principal to tool within l at now (the call's
// time: a clock read less per call), or refuses it with a 429
// *smcp.Error naming the bound that was hit and, for a rate, the wait
// (details.retry_after_ms; core.RetryAfter reads it). The caller releases
// the ticket when the call ends. A nil or unlimited l admits at no cost.
//
// The tool's bound is checked before the principal's, and the in-flight
// bounds before the rates: a call refused by a later bound has spent the
// earlier rates' allowance (the GCRA scripts cannot take one back), which
// errs on the side of fewer calls; the tool's first, because a call the
// principal's rate refuses comes when the principal is at its limit
// anyway.
func (q *Quotas) Admit(ctx context.Context, principal, tool string, l *Limits, now time.Time) (Ticket, error) {
	if l.Unlimited() {
		return Ticket{}, nil
	}
	tb, hasTool := l.Tools[tool]
	hasTool = hasTool && !tb.unlimited()
	if !hasTool && l.Bound.unlimited() {
		return Ticket{}, nil // bounds on other tools only: nothing of this call is counted
	}
	q.mu.Lock()
	bs := q.bucketsOf(principal, now)
	var tk *bucket
	if hasTool {
		tk = bs.tool(tool)
		if tb.InFlight > 0 && tk.flying >= tb.InFlight {
			q.mu.Unlock()
			return Ticket{}, refusal(BoundInFlight, tool, tb, 0)
		}
	}
	if l.InFlight > 0 && bs.own.flying >= l.InFlight {
		q.mu.Unlock()
		return Ticket{}, refusal(BoundInFlight, "", l.Bound, 0)
	}
	if q.redis == nil {
		if hasTool && tb.CallsPerSecond > 0 {
			if wait := tk.spend(now, tb); wait > 0 {
				q.mu.Unlock()
				return Ticket{}, refusal(BoundRate, tool, tb, wait)
			}
		}
		if l.CallsPerSecond > 0 {
			if wait := bs.own.spend(now, l.Bound); wait > 0 {
				q.mu.Unlock()
				return Ticket{}, refusal(BoundRate, "", l.Bound, wait)
			}
		}
	}
	t := Ticket{q: q}
	if hasTool && tb.InFlight > 0 {
		tk.flying++
		t.tool = tk
	}
	if l.InFlight > 0 {
		bs.own.flying++
		t.own = &bs.own
	}
	q.mu.Unlock()
	if q.redis == nil {
		return t, nil
	}
	// Redis is asked outside the lock: the calls in flight are held
	// meanwhile, and given back if a rate refuses.
	if hasTool && tb.CallsPerSecond > 0 {
		if wait := q.redis.allow(ctx, key{principal: principal, tool: tool, perTool: true}, tb, now); wait > 0 {
			t.Release()
			return Ticket{}, refusal(BoundRate, tool, tb, wait)
		}
	}
	if l.CallsPerSecond > 0 {
		if wait := q.redis.allow(ctx, key{principal: principal}, l.Bound, now); wait > 0 {
			t.Release()
			return Ticket{}, refusal(BoundRate, "", l.Bound, wait)
		}
	}
	return t, nil
}

// bucketsOf are principal's buckets, made if need be (and then, once a
// minute, the idle ones dropped). q.mu is held.
func (q *Quotas) bucketsOf(principal string, now time.Time) *buckets {
	bs := q.principals[principal]
	if bs == nil {
		q.maybeSweep(now)
		bs = &buckets{}
		q.principals[principal] = bs
	}
	return bs
}

// tool is the bucket of one of the principal's tools, made if need be.
func (bs *buckets) tool(name string) *bucket {
	bk := bs.tools[name]
	if bk == nil {
		if bs.tools == nil {
			bs.tools = map[string]*bucket{}
		}
		bk = &bucket{}
		bs.tools[name] = bk
	}
	return bk
}

// lookup is k's bucket, nil if there is none. q.mu is held.
func (q *Quotas) lookup(k key) *bucket {
	bs := q.principals[k.principal]
	switch {
	case bs == nil:
		return nil
	case k.perTool:
		return bs.tools[k.tool]
	}
	return &bs.own
}

// spend spends one call's allowance of b at now, or reports how long
// until there is one. q.mu is held.
func (bk *bucket) spend(now time.Time, b Bound) time.Duration {
	if bk.lim == nil {
		bk.bound = b
		bk.lim = rate.NewLimiter(rate.Every(b.interval()), b.burst())
	} else if bk.bound != b { // the keys were reloaded
		bk.bound = b
		bk.lim.SetLimitAt(now, rate.Every(b.interval()))
		bk.lim.SetBurstAt(now, b.burst())
	}
	r := bk.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d
	}
	return 0
}

// spendHere spends k's rate on this node: Redis' fallback.
func (q *Quotas) spendHere(k key, b Bound, now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	bs := q.bucketsOf(k.principal, now)
	if k.perTool {
		return bs.tool(k.tool).spend(now, b)
	}
	return bs.own.spend(now, b)
}

// idle reports whether bk is as good as new at now.
func (bk *bucket) idle(now time.Time) bool {
	return bk.flying == 0 && (bk.lim == nil || bk.lim.TokensAt(now) >= float64(bk.lim.Burst()))
}

// maybeSweep drops the idle buckets once every sweepEvery. q.mu is held.
func (q *Quotas) maybeSweep(now time.Time) {
	if now.Sub(q.lastSweep) < sweepEvery {
		return
	}
	q.lastSweep = now
	for p, bs := range q.principals {
		for t, bk := range bs.tools {
			if bk.idle(now) {
				delete(bs.tools, t)
			}
		}
		if len(bs.tools) == 0 && bs.own.idle(now) {
			delete(q.principals, p)
		}
	}
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

// InFlight returns the calls in flight of principal (tool empty) or of
// one of its tools, on this node.
func (q *Quotas) InFlight(principal, tool string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if bk := q.lookup(key{principal: principal, tool: tool, perTool: tool != ""}); bk != nil {
		return bk.flying
	}
	return 0
}

// redisRates runs the GCRA in Redis (redis_rate), falling back to this
// node's memory while Redis fails, with one WARN a minute.
type redisRates struct {
	lim      *redis_rate.Limiter
	timeout  time.Duration
	fallback func(k key, b Bound, now time.Time) time.Duration
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds
}

// keyPrefix namespaces the buckets in Redis (redis_rate adds "rate:").
const keyPrefix = "smcp:quota:"

func (r *redisRates) allow(ctx context.Context, k key, b Bound, now time.Time) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	res, err := r.lim.Allow(ctx, redisKey(k), redisLimit(b))
	cancel()
	if err != nil {
		r.warn(err)
		return r.fallback(k, b, now)
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
