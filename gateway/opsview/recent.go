// Package opsview keeps what the operator's views of the gateway show
// beyond one node's memory: the recent audit records of every node, and
// each node's figures and connections. On one node it is that node's
// memory; in a cluster each node also writes its own to Redis, under keys
// that expire, and any node reads them all.
//
// Nothing here is on a call's path: records reach Recent through the
// audit log's writer goroutine (it is one of its sinks), and Recent's own
// goroutine writes them to Redis, so a slow Redis slows neither the calls
// nor the other sinks.
package opsview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
)

// Defaults of RecentOptions.
const (
	DefaultRecent = 1000
	// DefaultRecentTTL is how long a node's records stay in Redis after
	// its last write: a node gone still shows its last records that long.
	DefaultRecentTTL = time.Hour
	// redisTimeout bounds each Redis call of this package.
	redisTimeout = 2 * time.Second
)

// Redis keys: each node's records, and the nodes that wrote some (scored
// by the time of their last write).
// They share the {ops} slot with the reports (see reportPrefix).
const (
	recentPrefix = "smcp:{ops}:audit:"
	recentNodes  = "smcp:{ops}:audit-nodes"
)

// RecentOptions configure Recent.
type RecentOptions struct {
	// Size is how many records each node keeps (default DefaultRecent).
	Size int
	// Redis, when set, is the cluster's: this node's records are written
	// there as well, and Read reads every node's.
	Redis goredis.UniversalClient
	// Node names this node (records carry their own node, this is the
	// key they are kept under).
	Node string
	// TTL is how long a node's records outlive its last write in Redis
	// (default DefaultRecentTTL).
	TTL time.Duration
	Log *slog.Logger
}

// Recent is an audit.Sink that keeps the last records: in memory, and in
// a cluster in a list per node in Redis, capped at Size (LPUSH, LTRIM)
// and expiring TTL after the node's last write.
type Recent struct {
	opts RecentOptions

	mu   sync.Mutex
	ring []audit.Record // the last Size records, oldest at next when full
	next int
	full bool
	// unsent are the records not written to Redis yet, the last Size.
	unsent []audit.Record

	wake     chan struct{}
	stop     context.CancelFunc
	done     chan struct{}
	closing  sync.Once
	lastWarn atomic.Int64 // unix ns of the last WARN of a failing Redis
}

// NewRecent makes a Recent; with Redis it starts the goroutine that writes
// there, which Close stops.
func NewRecent(opts RecentOptions) *Recent {
	if opts.Size <= 0 {
		opts.Size = DefaultRecent
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultRecentTTL
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	r := &Recent{opts: opts, ring: make([]audit.Record, 0, opts.Size), wake: make(chan struct{}, 1), done: make(chan struct{})}
	if opts.Redis == nil {
		close(r.done)
		r.stop = func() {}
		return r
	}
	ctx, stop := context.WithCancel(context.Background())
	r.stop = stop
	go r.run(ctx)
	return r
}

// Write keeps recs. It never fails: the view is best effort, and must not
// hold the audit's other sinks (nor, when the audit is required, its calls).
func (r *Recent) Write(_ context.Context, recs []audit.Record) error {
	r.mu.Lock()
	for _, rec := range recs {
		if len(r.ring) < r.opts.Size {
			r.ring = append(r.ring, rec)
			continue
		}
		r.ring[r.next] = rec
		r.next = (r.next + 1) % r.opts.Size
		r.full = true
	}
	if r.opts.Redis != nil {
		r.unsent = append(r.unsent, recs...)
		if n := len(r.unsent) - r.opts.Size; n > 0 {
			r.unsent = slices.Delete(r.unsent, 0, n) // only the last Size can be read anyway
		}
	}
	r.mu.Unlock()
	if r.opts.Redis != nil {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Close stops the Redis writer; records not written yet are left.
func (r *Recent) Close(context.Context) error {
	r.closing.Do(r.stop)
	<-r.done
	return nil
}

// local returns this node's records, oldest first.
func (r *Recent) local() []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]audit.Record, 0, len(r.ring))
	if r.full {
		out = append(out, r.ring[r.next:]...)
		return append(out, r.ring[:r.next]...)
	}
	return append(out, r.ring...)
}

// run writes the records Write took to Redis, a batch at a time.
func (r *Recent) run(ctx context.Context) {
	defer close(r.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		batch := r.unsent
		r.unsent = nil
		r.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if err := r.push(ctx, batch); err != nil && ctx.Err() == nil {
			r.warn(err)
		}
	}
}

func (r *Recent) push(ctx context.Context, batch []audit.Record) error {
	vals := make([]any, len(batch))
	for i := range batch {
		b, err := json.Marshal(wire(batch[i]))
		if err != nil {
			return fmt.Errorf("encode audit record: %w", err)
		}
		vals[i] = b
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	key := recentPrefix + r.opts.Node
	_, err := r.opts.Redis.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.LPush(ctx, key, vals...)
		p.LTrim(ctx, key, 0, int64(r.opts.Size-1))
		p.Expire(ctx, key, r.opts.TTL)
		p.ZAdd(ctx, recentNodes, goredis.Z{Score: float64(time.Now().UnixMilli()), Member: r.opts.Node})
		// Nodes whose lists expired leave the index.
		p.ZRemRangeByScore(ctx, recentNodes, "-inf", strconv.FormatInt(time.Now().Add(-r.opts.TTL).UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("write recent audit records to Redis: %w", err)
	}
	return nil
}

func (r *Recent) warn(err error) {
	now := time.Now().UnixNano()
	last := r.lastWarn.Load()
	if now-last < int64(time.Minute) || !r.lastWarn.CompareAndSwap(last, now) {
		return
	}
	r.opts.Log.Warn("audit: the console's recent records cannot be written to Redis; other nodes' consoles miss this node's", "err", err)
}

// Filter selects records; empty fields match all.
type Filter struct {
	Office, Principal, Outcome string
	// Limit bounds the answer (0: Size).
	Limit int
}

func (f Filter) match(r *audit.Record) bool {
	return (f.Office == "" || r.Office == f.Office) &&
		(f.Principal == "" || r.Principal == f.Principal || r.Subject == f.Principal) &&
		(f.Outcome == "" || r.Outcome == f.Outcome)
}

// Read returns the records f selects, newest first: this node's, and in a
// cluster every node's that wrote within TTL. nodes are the nodes read;
// partial says why some could not be (Redis did not answer), the records
// of those read are returned all the same.
func (r *Recent) Read(ctx context.Context, f Filter) (recs []audit.Record, nodes []string, partial error) {
	if f.Limit <= 0 || f.Limit > r.opts.Size {
		f.Limit = r.opts.Size
	}
	for _, rec := range r.local() {
		if f.match(&rec) {
			recs = append(recs, rec)
		}
	}
	nodes = []string{r.opts.Node}
	if r.opts.Redis != nil {
		others, got, err := r.readOthers(ctx, f)
		recs = append(recs, others...)
		nodes = append(nodes, got...)
		partial = err
	}
	// Newest first; the sort is stable, so records of one node keep
	// their order when their times tie.
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return b.Time.Compare(a.Time) })
	if len(recs) > f.Limit {
		recs = recs[:f.Limit]
	}
	slices.Sort(nodes)
	return recs, nodes, partial
}

func (r *Recent) readOthers(ctx context.Context, f Filter) ([]audit.Record, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	since := strconv.FormatInt(time.Now().Add(-r.opts.TTL).UnixMilli(), 10)
	ids, err := r.opts.Redis.ZRangeByScore(ctx, recentNodes, &goredis.ZRangeBy{Min: since, Max: "+inf"}).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("read the nodes' recent audit records: %w", err)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == r.opts.Node })
	cmds := make([]*goredis.StringSliceCmd, len(ids))
	_, err = r.opts.Redis.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.LRange(ctx, recentPrefix+id, 0, int64(r.opts.Size-1))
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, nil, fmt.Errorf("read the nodes' recent audit records: %w", err)
	}
	var out []audit.Record
	var bad []string
	for i, cmd := range cmds {
		for _, s := range cmd.Val() {
			var w wireRecord
			if err := json.Unmarshal([]byte(s), &w); err != nil {
				bad = append(bad, ids[i])
				break
			}
			rec := w.record()
			if f.match(&rec) {
				out = append(out, rec)
			}
		}
	}
	if len(bad) > 0 {
		return out, ids, fmt.Errorf("unreadable audit records of node(s) %s", strings.Join(bad, ", "))
	}
	return out, ids, nil
}

// wireRecord is a record in Redis: audit.Record with its duration, which
// Record's JSON leaves out.
type wireRecord struct {
	audit.Record
	DurationNS int64 `json:"duration_ns,omitempty"`
}

func wire(r audit.Record) wireRecord { return wireRecord{Record: r, DurationNS: int64(r.Duration)} }

func (w wireRecord) record() audit.Record {
	r := w.Record
	r.Duration = time.Duration(w.DurationNS)
	return r
}
