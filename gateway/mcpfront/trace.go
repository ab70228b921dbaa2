package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the MCP front end's spans.
const TracerName = "github.com/smcpgw/smcp-gateway/gateway/mcpfront"

// traceContext reads the W3C trace context an MCP client put in a request's
// params._meta (traceparent, tracestate): MCP has no header per message,
// and the OpenTelemetry MCP conventions carry it there.
var traceContext = propagation.TraceContext{}

// startSpan starts the server span of one MCP request, after the OpenTelemetry
// semantic conventions for MCP: named "{mcp.method.name} {target}" (the
// tool's name for tools/call), a child of the client's span when its _meta
// carries one. The session id is shortened as in the logs: with the key, it
// is what lets a client act as this session's agent.
func (x *session) startSpan(ctx context.Context, method string, req mcp.Request) (context.Context, trace.Span) {
	name := method
	agent := x.agent
	if st, err := x.seat(ctx); err == nil {
		agent = st.agent
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", method),
		attribute.String("smcp.office", x.office),
		attribute.String("smcp.agent", agent),
	}
	if !x.shared { // a 2026-07-28 request has no session
		attrs = append(attrs, attribute.String("mcp.session.id", x.id[:8]))
	}
	var meta mcp.Meta
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil {
			name += " " + p.Name
			attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name), attribute.String("gen_ai.operation.name", "execute_tool"))
			meta = p.Meta
		}
	case *mcp.ReadResourceParams:
		if p != nil {
			attrs = append(attrs, attribute.String("mcp.resource.uri", p.URI))
			meta = p.Meta
		}
	default:
		// A request without params (tools/list, ping) holds a typed nil,
		// whose GetMeta would dereference it.
		if p != nil && !reflect.ValueOf(p).IsNil() {
			meta = p.GetMeta()
		}
	}
	if len(meta) > 0 {
		carrier := propagation.MapCarrier{}
		for _, k := range traceContext.Fields() {
			if v, ok := meta[k].(string); ok {
				carrier[k] = v
			}
		}
		ctx = traceContext.Extract(ctx, carrier)
	}
	return x.front.opts.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endSpan records how the request ended; the caller ends the span before the
// go-sdk writes the answer, so that a client holding its answer (and then
// flushing its tracer, or reading the collector) finds the span.
func endSpan(span trace.Span, res mcp.Result, err error) {
	defer span.End()
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		code := strconv.FormatInt(we.Code, 10)
		span.SetAttributes(attribute.String("error.type", code), attribute.String("rpc.response.status_code", code))
		var d struct {
			Code int `json:"code"`
		}
		if json.Unmarshal(we.Data, &d) == nil && d.Code != 0 {
			span.SetAttributes(attribute.Int("smcp.error.code", d.Code))
		}
		span.SetStatus(codes.Error, we.Message)
	case err != nil:
		errType := "_OTHER"
		switch {
		case errors.Is(err, context.Canceled):
			errType = "cancelled"
		case errors.Is(err, context.DeadlineExceeded):
			errType = "timeout"
		}
		span.SetAttributes(attribute.String("error.type", errType))
		span.SetStatus(codes.Error, errType)
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
			span.SetAttributes(attribute.String("error.type", "tool_error"))
			span.SetStatus(codes.Error, "tool_error")
		}
	}
}
