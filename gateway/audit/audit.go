package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// CodeUnavailable refuses a call while a required audit cannot be written:
// the gateway is up, its audit is not, and the caller may come back.
const CodeUnavailable = 503

// Options configure a Logger.
type Options struct {
	// Sinks receive every record; a batch one of them refuses is written
	// to that one again (after Retry) until it takes it.
	Sinks []Sink
	// Queue is how many records may wait for the sinks (default 8192);
	// beyond it they are dropped and counted, or, when Required, calls
	// are refused.
	Queue int
	// Required fails closed: Ready refuses calls while a sink cannot
	// write or the queue is full.
	Required bool
	// Node fills each record's Node.
	Node string
	// Retry is the pause before a failed batch is written again (default
	// 1 s).
	Retry time.Duration
	// Gather is how long the writer lets a batch gather after its first
	// record before writing it (default 10 ms): under load one wake-up
	// and one write per batch, not per record.
	Gather time.Duration
	Log    *slog.Logger
}

// batchMax bounds one write to the sinks.
const batchMax = 512

// defaultGather is Options.Gather's default: records reach the sinks at
// most this much later than they are logged (Close writes at once).
const defaultGather = 10 * time.Millisecond

// warnEvery is how often a dropping or failing audit logs a WARN.
const warnEvery = time.Minute

// Logger queues records for its sinks. A nil *Logger records nothing and
// is always ready, so that callers need no checks.
//
// The queue is a slice under a mutex, not a channel: a record costs its
// logger one lock, and the writer takes a whole batch in one (a channel
// costs a lock on each side per record, measured as a quarter of a
// governed call's cost in the gateway's BenchmarkGovernanceToolCall).
type Logger struct {
	opts    Options
	quit    chan struct{} // closed by Close: drain, then stop
	abort   context.Context
	stop    context.CancelFunc // ends abort: Close gave up
	done    chan struct{}      // closed when the writer returns
	closing sync.Once
	// wake tells the writer that the queue is no longer empty (the first
	// record of a batch sends it; it holds one).
	wake chan struct{}

	// mu guards queued and closed: no record is queued after Close, and
	// the writer's last look sees all there will be.
	mu     sync.Mutex
	queued []Record
	closed bool

	// failing is the last write error of a sink, until a write succeeds.
	failing  atomic.Pointer[error]
	dropWarn atomic.Int64 // unix nanoseconds of the last WARN of drops
	failWarn time.Time    // the writer's own: last WARN of a failing sink

	written, dropped prometheus.Counter
	collectors       []prometheus.Collector
}

// New starts a Logger's writer; Close stops it.
func New(opts Options) (*Logger, error) {
	if len(opts.Sinks) == 0 {
		return nil, errors.New("audit: no sink")
	}
	if opts.Queue <= 0 {
		opts.Queue = 8192
	}
	if opts.Retry <= 0 {
		opts.Retry = time.Second
	}
	if opts.Gather <= 0 {
		opts.Gather = defaultGather
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	l := &Logger{
		opts: opts,
		quit: make(chan struct{}),
		done: make(chan struct{}),
		wake: make(chan struct{}, 1),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "smcp_audit_records_total", Help: "Audit records written to every sink.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "smcp_audit_dropped_total", Help: "Audit records dropped: the queue was full, or the log was closed or gave up draining.",
		}),
	}
	l.abort, l.stop = context.WithCancel(context.Background())
	l.collectors = []prometheus.Collector{l.written, l.dropped,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "smcp_audit_queue_length", Help: "Audit records waiting for the sinks.",
		}, func() float64 { return float64(l.queueLen()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "smcp_audit_sink_failing", Help: "1 while a sink cannot write the audit records, else 0.",
		}, func() float64 {
			if l.failing.Load() != nil {
				return 1
			}
			return 0
		}),
	}
	go l.run()
	return l, nil
}

// Collectors are the audit's metrics (records written and dropped, the
// queue's length, whether a sink fails), for the gateway's registry.
func (l *Logger) Collectors() []prometheus.Collector { return l.collectors }

// Log queues r without waiting: with the queue full (or the Logger
// closed) r is dropped and counted.
func (l *Logger) Log(r Record) {
	if l == nil {
		return
	}
	if r.Node == "" {
		r.Node = l.opts.Node
	}
	l.mu.Lock()
	if l.closed || len(l.queued) >= l.opts.Queue {
		l.mu.Unlock()
		l.drop(1)
		return
	}
	l.queued = append(l.queued, r)
	first := len(l.queued) == 1
	l.mu.Unlock()
	if first {
		select {
		case l.wake <- struct{}{}:
		default: // the writer has one already
		}
	}
}

func (l *Logger) queueLen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queued)
}

func (l *Logger) drop(n int) {
	l.dropped.Add(float64(n))
	now := time.Now().UnixNano()
	last := l.dropWarn.Load()
	if now-last >= int64(warnEvery) && l.dropWarn.CompareAndSwap(last, now) {
		l.opts.Log.Warn("audit: dropping records (queue full or log closed); see smcp_audit_dropped_total",
			"queue", l.opts.Queue)
	}
}

// Ready is nil unless the audit is required and cannot take a record now:
// a sink is failing, the queue is full, or the Logger is closed. Then it
// is the 503 a call is refused with.
func (l *Logger) Ready() error {
	if l == nil || !l.opts.Required {
		return nil
	}
	if l.failing.Load() != nil {
		return smcp.Errorf(CodeUnavailable, "audit required: the audit log cannot be written")
	}
	l.mu.Lock()
	closed, full := l.closed, len(l.queued) >= l.opts.Queue
	l.mu.Unlock()
	switch {
	case closed:
		return smcp.Errorf(CodeUnavailable, "audit required: the audit log is closed")
	case full:
		return smcp.Errorf(CodeUnavailable, "audit required: the audit queue is full")
	}
	return nil
}

// Close stops taking records and writes those queued, until ctx ends;
// then it gives up (the rest are counted dropped), and returns once the
// writer has stopped. The sinks are closed.
func (l *Logger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.closing.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		close(l.quit)
	})
	var err error
	select {
	case <-l.done:
	case <-ctx.Done():
		l.stop()
		<-l.done
		err = fmt.Errorf("audit: draining the queue: %w", ctx.Err())
	}
	l.stop()
	for _, s := range l.opts.Sinks {
		if cerr := s.Close(ctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("audit: close sink: %w", cerr))
		}
	}
	return err
}

// run is the writer: it takes what is queued, a batch at a time, and
// after Close drains the queue, all of it unless abort ends first.
func (l *Logger) run() {
	defer close(l.done)
	var taken []Record // the queue's other buffer: Log appends to one while this one is written
	gather := time.NewTimer(l.opts.Gather)
	gather.Stop()
	for {
		select {
		case <-l.wake:
			// While the writer pauses, Log's records wake nobody: a
			// batch gathers for one write.
			if l.queueLen() < batchMax {
				gather.Reset(l.opts.Gather)
				select {
				case <-gather.C:
				case <-l.quit:
					gather.Stop()
				}
			}
			taken = l.writeQueued(taken)
		case <-l.quit:
			// Log queues nothing once closed is set (under mu), before
			// quit closes: what is queued now is all there will be.
			l.writeQueued(taken)
			return
		}
	}
}

// writeQueued writes what is queued, in batches of at most batchMax, and
// returns the buffer to take the next records into.
func (l *Logger) writeQueued(spare []Record) []Record {
	l.mu.Lock()
	taken := l.queued
	l.queued = spare[:0]
	l.mu.Unlock()
	for batch := range slices.Chunk(taken, batchMax) {
		l.write(batch)
	}
	clear(taken) // the records' strings are garbage now
	return taken
}

// write writes batch to every sink, each failing one again after Retry
// until it takes it; if abort ends first, the batch counts dropped.
func (l *Logger) write(batch []Record) {
	pending := l.opts.Sinks
	var failed []Sink
	for {
		failed = failed[:0]
		var err error
		for _, s := range pending {
			if werr := s.Write(l.abort, batch); werr != nil {
				failed = append(failed, s)
				err = werr
			}
		}
		if len(failed) == 0 {
			if l.failing.Swap(nil) != nil {
				l.opts.Log.Info("audit: the audit log is written again")
				l.failWarn = time.Time{}
			}
			l.written.Add(float64(len(batch)))
			return
		}
		l.failing.Store(&err)
		if time.Since(l.failWarn) >= warnEvery {
			l.failWarn = time.Now()
			l.opts.Log.Warn("audit: cannot write the audit log; retrying", "err", err, "records", len(batch))
		}
		pending = append([]Sink(nil), failed...)
		t := time.NewTimer(l.opts.Retry)
		select {
		case <-t.C:
		case <-l.abort.Done():
			t.Stop()
			l.drop(len(batch))
			return
		}
	}
}
