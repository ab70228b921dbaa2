package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
type Logger struct {
	opts    Options
	q       chan Record
	quit    chan struct{} // closed by Close: drain, then stop
	abort   context.Context
	stop    context.CancelFunc // ends abort: Close gave up
	done    chan struct{}      // closed when the writer returns
	closing sync.Once
	// mu orders Log's look at closed and its send before Close's setting
	// of closed: no record is queued after the writer's last look.
	mu     sync.RWMutex
	closed atomic.Bool

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
		q:    make(chan Record, opts.Queue),
		quit: make(chan struct{}),
		done: make(chan struct{}),
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
		}, func() float64 { return float64(len(l.q)) }),
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
	l.mu.RLock()
	if !l.closed.Load() {
		select {
		case l.q <- r:
			l.mu.RUnlock()
			return
		default:
		}
	}
	l.mu.RUnlock()
	l.drop(1)
}

func (l *Logger) drop(n int) {
	l.dropped.Add(float64(n))
	now := time.Now().UnixNano()
	last := l.dropWarn.Load()
	if now-last >= int64(warnEvery) && l.dropWarn.CompareAndSwap(last, now) {
		l.opts.Log.Warn("audit: dropping records (queue full or log closed); see smcp_audit_dropped_total",
			"queue", cap(l.q))
	}
}

// Ready is nil unless the audit is required and cannot take a record now:
// a sink is failing, the queue is full, or the Logger is closed. Then it
// is the 503 a call is refused with.
func (l *Logger) Ready() error {
	if l == nil || !l.opts.Required {
		return nil
	}
	switch {
	case l.closed.Load():
		return smcp.Errorf(CodeUnavailable, "audit required: the audit log is closed")
	case l.failing.Load() != nil:
		return smcp.Errorf(CodeUnavailable, "audit required: the audit log cannot be written")
	case len(l.q) >= cap(l.q):
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
		l.closed.Store(true)
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

// run is the writer: it batches what is queued, and after Close drains the
// queue, all of it unless abort ends first.
func (l *Logger) run() {
	defer close(l.done)
	batch := make([]Record, 0, batchMax)
	gather := time.NewTimer(l.opts.Gather)
	gather.Stop()
	for {
		select {
		case r := <-l.q:
			// While the writer pauses, Log's sends wake nobody: a
			// batch gathers in the queue for one write.
			if len(l.q) < batchMax-1 {
				gather.Reset(l.opts.Gather)
				select {
				case <-gather.C:
				case <-l.quit:
					gather.Stop()
				}
			}
			batch = l.fill(append(batch[:0], r))
			l.write(batch)
		case <-l.quit:
			// Log queues nothing once closed is set (under mu), before
			// quit closes: what is queued now is all there will be.
			for len(l.q) > 0 {
				batch = l.fill(batch[:0])
				l.write(batch)
			}
			return
		}
	}
}

// fill adds what is queued, up to batchMax, without waiting.
func (l *Logger) fill(batch []Record) []Record {
	for len(batch) < batchMax {
		select {
		case r := <-l.q:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
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
