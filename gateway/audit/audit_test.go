package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/sdk/resource"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// memSink keeps what it is given; fail makes it refuse, block holds each
// Write until release is closed (or ctx ends).
type memSink struct {
	mu      sync.Mutex
	recs    []audit.Record
	writes  int
	fail    atomic.Bool
	entered chan struct{} // gets a value as each Write begins, when set
	release chan struct{} // Write waits for it to close, when set
}

func (s *memSink) Write(ctx context.Context, recs []audit.Record) error {
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.fail.Load() {
		return errors.New("disk full")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, recs...)
	s.writes++
	return nil
}

func (s *memSink) Close(context.Context) error { return nil }

func (s *memSink) records() []audit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Record(nil), s.recs...)
}

func newLogger(t *testing.T, opts audit.Options) *audit.Logger {
	t.Helper()
	l, err := audit.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

func record(i int) audit.Record {
	return audit.Record{Time: time.Now(), Front: "sio", Event: "client:tool_call", Principal: "alice",
		Office: "o1", Computer: "pc", Tool: "echo", Outcome: audit.OutcomeOK, Duration: 1500 * time.Microsecond,
		BytesIn: 10, BytesOut: 20, RequestID: fmt.Sprintf("req-%d", i)}
}

// TestFileRecordFields: a record in the file holds every field, the
// duration in milliseconds, and the node the Logger fills in.
func TestFileRecordFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.New(audit.Options{Sinks: []audit.Sink{sink}, Node: "gw-1"})
	if err != nil {
		t.Fatal(err)
	}
	r := record(1)
	r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r.ArgsSHA256 = audit.Hash([]byte(`{"text":"secret"}`))
	l.Log(r)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := map[string]any{"node": "gw-1", "front": "sio", "event": "client:tool_call", "principal": "alice",
		"office": "o1", "computer": "pc", "tool": "echo", "outcome": "ok", "duration_ms": 1.5,
		"bytes_in": 10.0, "bytes_out": 20.0, "request_id": "req-1", "trace_id": r.TraceID,
		"args_sha256": r.ArgsSHA256}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, got["time"].(string)); err != nil {
		t.Errorf("time: %v", err)
	}
	if strings.Contains(string(b), "secret") {
		t.Fatalf("the record holds an argument value: %s", b)
	}
}

// TestOpenFileRefusesUnwritablePath: a path the gateway cannot write stops
// it at start.
func TestOpenFileRefusesUnwritablePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.OpenFile(audit.FileOptions{Path: filepath.Join(dir, "file", "audit.jsonl")}); err == nil {
		t.Fatal("a path under a file was accepted")
	}
}

// TestFileRotates: past its size the file is rotated; every record is in
// one of the files, once.
func TestFileRotates(t *testing.T) {
	dir := t.TempDir()
	sink, err := audit.OpenFile(audit.FileOptions{Path: filepath.Join(dir, "audit.jsonl"), MaxSizeMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.New(audit.Options{Sinks: []audit.Sink{sink}, Queue: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6000 // about 1.5 MB
	for i := range n {
		r := record(i)
		r.Agent = strings.Repeat("a", 40)
		l.Log(r)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "audit*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("files %v, want the file and a rotated one", files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var r struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if seen[r.RequestID] {
				t.Fatalf("%s written twice", r.RequestID)
			}
			seen[r.RequestID] = true
		}
		_ = fh.Close()
	}
	if len(seen) != n {
		t.Fatalf("%d records in the files, want %d", len(seen), n)
	}
}

// TestDropsCountedWarnedOnce: with the sink stuck and the queue full, Log
// returns at once, each record it could not queue is counted, and one WARN
// says so; what was queued is written once the sink moves.
func TestDropsCountedWarnedOnce(t *testing.T) {
	sink := &memSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var logs testwait.Buffer
	reg := prometheus.NewRegistry()
	l := newLogger(t, audit.Options{Sinks: []audit.Sink{sink}, Queue: 4,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	reg.MustRegister(l.Collectors()...)
	l.Log(record(0))
	<-sink.entered // the writer holds record 0
	for i := 1; i <= 10; i++ {
		l.Log(record(i))
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP smcp_audit_dropped_total Audit records dropped: the queue was full, or the log was closed or gave up draining.
# TYPE smcp_audit_dropped_total counter
smcp_audit_dropped_total 6
`), "smcp_audit_dropped_total"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines, want 1:\n%s", n, logs.String())
	}
	sink.entered = nil
	close(sink.release)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.records()); n != 5 {
		t.Fatalf("%d records written, want 5 (1 held + 4 queued)", n)
	}
}

// TestCloseDrains: Close writes every record queued before it, and a
// record logged after it is counted dropped.
func TestCloseDrains(t *testing.T) {
	sink := &memSink{}
	reg := prometheus.NewRegistry()
	l, err := audit.New(audit.Options{Sinks: []audit.Sink{sink}, Queue: 10000})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(l.Collectors()...)
	const n = 10000
	for i := range n {
		l.Log(record(i))
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := sink.records()
	if len(got) != n {
		t.Fatalf("%d records after Close, want %d", len(got), n)
	}
	for i, r := range got {
		if r.RequestID != fmt.Sprintf("req-%d", i) {
			t.Fatalf("record %d is %s: out of order", i, r.RequestID)
		}
	}
	l.Log(record(n))
	if v := testutil.ToFloat64(counter(t, reg, "smcp_audit_dropped_total")); v != 1 {
		t.Fatalf("dropped %v after a Log past Close, want 1", v)
	}
	if v := testutil.ToFloat64(counter(t, reg, "smcp_audit_records_total")); v != n {
		t.Fatalf("written %v, want %d", v, n)
	}
}

// counter finds a registered metric by name, as a collector.
func counter(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: name}, func() float64 {
				return mf.GetMetric()[0].GetCounter().GetValue()
			})
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// TestCloseGivesUpWithCtx: a sink that never takes its batch holds Close
// only until ctx ends; the batch counts dropped and the writer stops.
func TestCloseGivesUpWithCtx(t *testing.T) {
	sink := &memSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	l, err := audit.New(audit.Options{Sinks: []audit.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(l.Collectors()...)
	l.Log(record(0))
	<-sink.entered
	l.Log(record(1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close = %v, want context.Canceled", err)
	}
	if v := testutil.ToFloat64(counter(t, reg, "smcp_audit_dropped_total")); v < 1 {
		t.Fatalf("dropped %v, want the records never written counted", v)
	}
}

// TestRequiredFailsClosed: with the audit required, Ready refuses (503)
// while the sink fails and admits again once it writes; the failed batch
// is written once, when it heals. Not required, Ready never refuses.
func TestRequiredFailsClosed(t *testing.T) {
	for _, required := range []bool{true, false} {
		t.Run(fmt.Sprint("required=", required), func(t *testing.T) {
			sink := &memSink{}
			sink.fail.Store(true)
			l := newLogger(t, audit.Options{Sinks: []audit.Sink{sink}, Required: required, Retry: 5 * time.Millisecond})
			t.Cleanup(func() { sink.fail.Store(false) }) // before Close, which drains
			if err := l.Ready(); err != nil {
				t.Fatalf("ready before any write: %v", err)
			}
			l.Log(record(0))
			if !required {
				if !testwait.Poll(100*time.Millisecond, func() bool { return l.Ready() != nil }) {
					return
				}
				t.Fatal("an audit not required refused a call")
			}
			testwait.Until(t, "Ready to refuse while the sink fails", func() bool { return l.Ready() != nil })
			e, ok := smcp.AsError(l.Ready())
			if !ok || e.Code != audit.CodeUnavailable {
				t.Fatalf("Ready = %v, want a %d", l.Ready(), audit.CodeUnavailable)
			}
			sink.fail.Store(false)
			testwait.Until(t, "Ready once the sink writes", func() bool { return l.Ready() == nil })
			if got := sink.records(); len(got) != 1 || got[0].RequestID != "req-0" {
				t.Fatalf("written %v, want req-0 once", got)
			}
		})
	}
}

// TestRequiredQueueFull: with the audit required, a full queue refuses
// calls rather than drop their records.
func TestRequiredQueueFull(t *testing.T) {
	sink := &memSink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	l := newLogger(t, audit.Options{Sinks: []audit.Sink{sink}, Required: true, Queue: 2})
	l.Log(record(0))
	<-sink.entered
	l.Log(record(1))
	if err := l.Ready(); err != nil {
		t.Fatalf("one free place: %v", err)
	}
	l.Log(record(2))
	if err := l.Ready(); err == nil || !strings.Contains(err.Error(), "queue is full") {
		t.Fatalf("Ready with the queue full = %v", err)
	}
	sink.entered = nil
	close(sink.release)
	testwait.Until(t, "the queue to empty", func() bool { return l.Ready() == nil })
}

// TestNilLogger: a gateway without audit passes a nil Logger around.
func TestNilLogger(t *testing.T) {
	var l *audit.Logger
	l.Log(record(0))
	if err := l.Ready(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestOutcomeOf names outcomes as the records write them.
func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                   "ok",
		context.DeadlineExceeded:              "timeout",
		fmt.Errorf("x: %w", context.Canceled): "cancelled",
		smcp.Errorf(smcp.CodeTimeout, "t"):    "timeout",
		smcp.Errorf(403, "no"):                "403",
		errors.New("boom"):                    "500",
	} {
		if got := audit.OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestOTLPSink: records reach an OTLP/HTTP receiver as log records with
// the fields as attributes and the trace id; a receiver that fails makes
// the sink fail (so a required audit refuses) until it answers.
func TestOTLPSink(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []*collogs.ExportLogsServiceRequest
		fail atomic.Bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		var req collogs.ExportLogsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		got = append(got, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(srv.Close)
	exp, err := otlploghttp.New(context.Background(), otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	l, err := audit.New(audit.Options{Sinks: []audit.Sink{audit.NewOTLP(exp, resource.Empty())},
		Required: true, Retry: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := record(7)
	r.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	l.Log(r)
	testwait.Until(t, "Ready to refuse while the receiver fails", func() bool { return l.Ready() != nil })
	fail.Store(false)
	testwait.Until(t, "Ready once the receiver answers", func() bool { return l.Ready() == nil })
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d exports, want 1", len(got))
	}
	lrs := got[0].GetResourceLogs()[0].GetScopeLogs()[0].GetLogRecords()
	if len(lrs) != 1 {
		t.Fatalf("%d log records, want 1", len(lrs))
	}
	lr := lrs[0]
	if fmt.Sprintf("%x", lr.GetTraceId()) != r.TraceID {
		t.Errorf("trace id %x, want %s", lr.GetTraceId(), r.TraceID)
	}
	attrs := map[string]string{}
	for _, kv := range lr.GetAttributes() {
		attrs[kv.GetKey()] = fmt.Sprintf("%s|%d", kv.GetValue().GetStringValue(), kv.GetValue().GetIntValue())
	}
	for k, v := range map[string]string{"request_id": "req-7|0", "principal": "alice|0", "tool": "echo|0",
		"outcome": "ok|0", "bytes_out": "|20"} {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], v)
		}
	}
}

// The JSON lines sink encodes a batch without an allocation per record
// (the writer runs beside every call: what it allocates, the calls' GC
// pays for).
func TestJSONLinesBatchAllocations(t *testing.T) {
	sink := audit.NewJSONLines(io.Discard)
	batch := make([]audit.Record, 256)
	for i := range batch {
		batch[i] = record(i)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := sink.Write(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > maxBatchAllocs {
		t.Fatalf("%v allocations per batch of %d records, want a few per batch", allocs, len(batch))
	}
}

// BenchmarkWriteJSONLines is the writer's cost per record: JSON lines to
// a file's writer (io.Discard), in batches as the writer makes them.
func BenchmarkWriteJSONLines(b *testing.B) {
	sink := audit.NewJSONLines(io.Discard)
	batch := make([]audit.Record, 256)
	for i := range batch {
		batch[i] = record(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := sink.Write(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/record")
}
