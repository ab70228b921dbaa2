package opsview

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// DefaultReportEvery is how often a node of a cluster writes its Report.
const DefaultReportEvery = 2 * time.Second

// Redis keys: each node's report, and the nodes that wrote one (scored by
// the time of their last write). All of opsview's keys share one hash slot
// ({ops}): on a Redis Cluster a write and its index go in one MULTI, and
// the reports are read with one MGET.
const (
	reportPrefix = "smcp:{ops}:node:"
	reportNodes  = "smcp:{ops}:nodes"
)

// MaxReportConnections bounds the connections one report carries (each
// about 200 bytes of JSON, posted every 2 s); a node with more says how
// many it left out.
const MaxReportConnections = 1000

// Report is what one node says of itself.
type Report struct {
	Node string `json:"node"`
	// At is when it was made (Unix ms).
	At int64 `json:"at"`
	// Figures are its counters and gauges by name (see GetFigures).
	Figures map[string]float64 `json:"figures,omitempty"`
	// Connections are what is attached to it (core.Hub.Connections).
	Connections []core.Connection `json:"connections,omitempty"`
	// Omitted counts the connections beyond MaxReportConnections.
	Omitted int `json:"omitted,omitempty"`
	// InFlight are its calls in flight by principal (quota.Quotas.Flying).
	InFlight map[string]int `json:"in_flight,omitempty"`
	// SignIns are the sign-ins its computers wait for (core.Hub.SignIns),
	// for operators only; their callbacks go to this node.
	SignIns []core.SignIn `json:"sign_ins,omitempty"`
}

// BoardOptions configure a Board.
type BoardOptions struct {
	// Collect makes this node's report now; it must not block.
	Collect func() Report
	// Redis, when set, is the cluster's: Run writes this node's reports
	// there, Read reads every node's.
	Redis goredis.UniversalClient
	Node  string
	// Every is how often Run writes (default DefaultReportEvery); a
	// report expires after three.
	Every time.Duration
	Log   *slog.Logger
}

// Board is where the nodes of a cluster post their reports, so that any
// node's console shows the whole cluster's figures and connections rather
// than those of whichever node the load balancer picked.
type Board struct {
	opts     BoardOptions
	lastWarn atomic.Int64
}

// NewBoard makes a Board; Run posts this node's reports.
func NewBoard(opts BoardOptions) *Board {
	if opts.Every <= 0 {
		opts.Every = DefaultReportEvery
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Board{opts: opts}
}

func (b *Board) ttl() time.Duration { return 3 * b.opts.Every }

// report is Collect's, bounded and stamped.
func (b *Board) report() Report {
	r := b.opts.Collect()
	r.Node, r.At = b.opts.Node, time.Now().UnixMilli()
	if n := len(r.Connections) - MaxReportConnections; n > 0 {
		r.Connections, r.Omitted = r.Connections[:MaxReportConnections], n
	}
	return r
}

// Run posts this node's report every Every until ctx ends (at once
// without Redis: there is nobody to tell).
func (b *Board) Run(ctx context.Context) {
	if b.opts.Redis == nil {
		return
	}
	t := time.NewTicker(b.opts.Every)
	defer t.Stop()
	for {
		if err := b.post(ctx); err != nil && ctx.Err() == nil {
			b.warn(err)
		}
		select {
		case <-ctx.Done():
			b.withdraw()
			return
		case <-t.C:
		}
	}
}

func (b *Board) post(ctx context.Context) error {
	body, err := json.Marshal(b.report())
	if err != nil {
		return fmt.Errorf("encode node report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	now := time.Now()
	_, err = b.opts.Redis.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Set(ctx, reportPrefix+b.opts.Node, body, b.ttl())
		p.ZAdd(ctx, reportNodes, goredis.Z{Score: float64(now.UnixMilli()), Member: b.opts.Node})
		p.ZRemRangeByScore(ctx, reportNodes, "-inf", strconv.FormatInt(now.Add(-b.ttl()).UnixMilli(), 10))
		return nil
	})
	if err != nil {
		return fmt.Errorf("post node report to Redis: %w", err)
	}
	return nil
}

// withdraw removes this node's report when it stops, so that the others
// stop counting it at once rather than when it expires.
func (b *Board) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), redisTimeout)
	defer cancel()
	_, _ = b.opts.Redis.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, reportPrefix+b.opts.Node)
		p.ZRem(ctx, reportNodes, b.opts.Node)
		return nil
	})
}

func (b *Board) warn(err error) {
	now := time.Now().UnixNano()
	last := b.lastWarn.Load()
	if now-last < int64(time.Minute) || !b.lastWarn.CompareAndSwap(last, now) {
		return
	}
	b.opts.Log.Warn("opsview: cannot post this node's report to Redis; other nodes' consoles miss it", "err", err)
}

// Offices are the ids of the offices the other nodes have connections in,
// as they last posted them: what this node's own hub does not know.
func (b *Board) Offices(ctx context.Context) ([]string, error) {
	reports, err := b.others(ctx)
	seen := map[string]struct{}{}
	for _, r := range reports {
		for _, c := range r.Connections {
			if c.Office != "" {
				seen[c.Office] = struct{}{}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), err
}

// Read returns every node's report, this node's made now, the others' as
// they last posted them (within three Every), sorted by node. partial
// says why some could not be read; the others are returned all the same.
func (b *Board) Read(ctx context.Context) (reports []Report, partial error) {
	others, err := b.others(ctx)
	reports = append([]Report{b.report()}, others...)
	slices.SortFunc(reports, func(a, b Report) int { return strings.Compare(a.Node, b.Node) })
	return reports, err
}

// others are the other nodes' reports; partial says why some could not be
// read, the others are returned all the same.
func (b *Board) others(ctx context.Context) (reports []Report, partial error) {
	if b.opts.Redis == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	since := strconv.FormatInt(time.Now().Add(-b.ttl()).UnixMilli(), 10)
	ids, err := b.opts.Redis.ZRangeByScore(ctx, reportNodes, &goredis.ZRangeBy{Min: since, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("read the nodes' reports: %w", err)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return id == b.opts.Node })
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = reportPrefix + id
	}
	vals, err := b.opts.Redis.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read the nodes' reports: %w", err)
	}
	var bad []string
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // expired between the two reads: the node is gone
		}
		var r Report
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			bad = append(bad, ids[i])
			continue
		}
		reports = append(reports, r)
	}
	if len(bad) > 0 {
		return reports, fmt.Errorf("unreadable report of node(s) %s", strings.Join(bad, ", "))
	}
	return reports, nil
}
