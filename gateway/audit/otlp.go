package audit

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// otlpSink sends records as OTLP log records. The SDK's logger fills in
// the resource and scope; a collecting processor hands the records back,
// and Write exports them itself, so that an export error reaches the
// Logger (which retries, and refuses calls when required) instead of the
// SDK's global error handler.
type otlpSink struct {
	provider *sdklog.LoggerProvider
	logger   otellog.Logger
	exp      sdklog.Exporter
	col      *collector
}

// NewOTLP sends records to exp (e.g. an otlploghttp exporter), as the
// service res describes.
func NewOTLP(exp sdklog.Exporter, res *resource.Resource) Sink {
	col := &collector{}
	p := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(col))
	return &otlpSink{provider: p, logger: p.Logger("github.com/smcpgw/smcp-gateway/gateway/audit"), exp: exp, col: col}
}

func (s *otlpSink) Write(ctx context.Context, recs []Record) error {
	for i := range recs {
		s.logger.Emit(traceContext(ctx, recs[i].TraceID), logRecord(&recs[i]))
	}
	out := s.col.take()
	if err := s.exp.Export(ctx, out); err != nil {
		return fmt.Errorf("export audit records: %w", err)
	}
	return nil
}

func (s *otlpSink) Close(ctx context.Context) error {
	return errors.Join(s.provider.Shutdown(ctx), s.exp.Shutdown(ctx))
}

// traceContext carries the record's trace id, which the SDK copies into
// the log record.
func traceContext(ctx context.Context, id string) context.Context {
	var tid trace.TraceID
	if len(id) != 2*len(tid) {
		return ctx
	}
	if _, err := hex.Decode(tid[:], []byte(id)); err != nil {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid}))
}

// logRecord is r as an OTLP log record: the event as its event name and
// body, the fields as attributes named as in the JSON lines.
func logRecord(r *Record) otellog.Record {
	var lr otellog.Record
	lr.SetTimestamp(r.Time)
	lr.SetEventName("smcp.audit")
	lr.SetBody(attribute.StringValue(r.Event))
	lr.SetSeverity(otellog.SeverityInfo)
	attrs := make([]attribute.KeyValue, 0, 20)
	str := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	str("node", r.Node)
	str("front", r.Front)
	str("event", r.Event)
	str("principal", r.Principal)
	str("issuer", r.Issuer)
	str("subject", r.Subject)
	str("agent", r.Agent)
	str("office", r.Office)
	str("computer", r.Computer)
	str("tool", r.Tool)
	str("resource", r.Resource)
	str("outcome", r.Outcome)
	str("reason", r.Reason)
	str("request_id", r.RequestID)
	str("trace_id", r.TraceID)
	str("args_sha256", r.ArgsSHA256)
	str("result_sha256", r.ResultSHA256)
	attrs = append(attrs,
		attribute.Float64("duration_ms", float64(r.Duration.Microseconds())/1000),
		attribute.Int64("bytes_in", r.BytesIn),
		attribute.Int64("bytes_out", r.BytesOut))
	lr.AddAttributes(attrs...)
	return lr
}

// collector is the provider's processor: it keeps each record for Write.
type collector struct {
	mu   sync.Mutex
	recs []sdklog.Record
}

func (c *collector) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.mu.Lock()
	c.recs = append(c.recs, r.Clone())
	c.mu.Unlock()
	return nil
}

func (c *collector) take() []sdklog.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.recs
	c.recs = nil
	return out
}

func (*collector) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*collector) Shutdown(context.Context) error                         { return nil }
func (*collector) ForceFlush(context.Context) error                       { return nil }
