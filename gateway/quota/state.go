package quota

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Tokens is how many calls principal (tool empty) or one of its tools may
// make at once now under b's rate: its bucket's tokens left, up to the
// burst. It spends nothing. With Redis it is the bucket every node
// shares, read with a call of no cost (the GCRA script sets nothing new);
// when Redis fails, the error says so and nothing is guessed. ok is false
// when b has no rate.
func (q *Quotas) Tokens(ctx context.Context, principal, tool string, b Bound) (tokens float64, ok bool, err error) {
	if b.CallsPerSecond <= 0 {
		return 0, false, nil
	}
	k := key{principal: principal, tool: tool, perTool: tool != ""}
	if r := q.redis; r != nil {
		ctx, cancel := context.WithTimeout(ctx, r.timeout)
		defer cancel()
		res, err := r.lim.AllowN(ctx, redisKey(k), redisLimit(b), 0)
		if err != nil {
			return 0, false, fmt.Errorf("quota: read the Redis bucket: %w", err)
		}
		return float64(res.Remaining), true, nil
	}
	return q.tokens(k, b), true, nil
}

// Shared reports whether the rates are kept in Redis, shared by the nodes.
func (q *Quotas) Shared() bool { return q.redis != nil }

// tokens is the bucket's tokens now, without spending: a bucket not made
// yet (or swept, being full) has the whole burst; one of a bound since
// reloaded, at most the new burst.
func (q *Quotas) tokens(k key, b Bound) float64 {
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	bk := q.lookup(k)
	if bk == nil || bk.lim == nil {
		return float64(b.burst())
	}
	return min(max(bk.lim.TokensAt(now), 0), float64(b.burst()))
}

// Flying lists the principals with calls in flight on this node, and
// how many each has.
func (q *Quotas) Flying() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]int{}
	for p, bs := range q.principals {
		if bs.own.flying > 0 {
			out[p] = bs.own.flying
		}
	}
	return out
}

// Principals are the ids of the keys with limits of their own, sorted.
func (t *Table) Principals() []string {
	if t == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(t.Keys))
}

// EffectiveBurst is the burst b allows: Burst, or the rate rounded up (at
// least 1) when Burst is 0.
func (b Bound) EffectiveBurst() int { return b.burst() }
