package mcpfront_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// With a TracerProvider, every MCP request is a server span named after the
// OpenTelemetry MCP conventions, a child of the client's span when the
// request's _meta carries a traceparent, and ended before the answer is
// written: it is among the ended spans as soon as the client has its answer.
func TestTracingMCP(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g := startGateway(t, gateway.Config{TracerProvider: tp})
	pc := newFixture(t, "pc1")
	startComputer(t, g, keyA, "A", "pc1", map[string]string{"fx": pc.url})
	cs := mustDial(t, g, "A", nil, "x-api-key", keyA)
	testwait.Within(t, waitFor, "pc1's tools listed", func() bool { return toolNames(t, cs)["pc1__echo"] != nil })

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__echo", Arguments: map[string]any{"text": "hi"},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	call := endedSpan(t, rec, "tools/call pc1__echo")
	if call.SpanKind() != trace.SpanKindServer || call.Status().Code != codes.Unset {
		t.Errorf("tools/call span: kind %v, status %+v", call.SpanKind(), call.Status())
	}
	if got := call.Parent(); got.TraceID().String() != traceID || got.SpanID().String() != parentID || !got.IsRemote() {
		t.Errorf("tools/call span's parent %v %v (remote %v), want the client's %s %s",
			got.TraceID(), got.SpanID(), got.IsRemote(), traceID, parentID)
	}
	attrs := spanAttrs(call)
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "pc1__echo",
		"gen_ai.operation.name": "execute_tool", "smcp.office": "A"} {
		if attrs[k] != want {
			t.Errorf("tools/call span: %s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	if sid := attrs["mcp.session.id"]; len(sid) != 8 || sid != cs.ID()[:8] {
		t.Errorf("mcp.session.id %q: want the first 8 characters of %q", sid, cs.ID())
	}

	// A refused call: the span has the error's JSON-RPC code.
	if _, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__nope", Arguments: map[string]any{}}); err == nil {
		t.Fatal("call of an unknown tool succeeded")
	}
	bad := endedSpan(t, rec, "tools/call pc1__nope")
	if bad.Status().Code != codes.Error || spanAttrs(bad)["error.type"] != "-32602" {
		t.Errorf("unknown tool's span: status %+v, attributes %v", bad.Status(), spanAttrs(bad))
	}
	if call.Parent().TraceID() == bad.SpanContext().TraceID() {
		t.Error("a call without a traceparent joined another call's trace")
	}
	endedSpan(t, rec, "tools/list")

	// Requests without params (a typed nil in the go-sdk) are traced too.
	raw := newRawSession(t, endpoint(g, "A"), keyA)
	for _, m := range []string{"tools/list", "ping", "resources/list"} {
		answer, err := raw.post(ctxT(t), []byte(`{"jsonrpc":"2.0","id":9,"method":"`+m+`"}`))
		if err != nil || !strings.Contains(string(answer), `"result"`) {
			t.Fatalf("%s without params: %v %s", m, err, answer)
		}
		if s := endedSpan(t, rec, m); spanAttrs(s)["mcp.session.id"] != raw.id[:8] {
			t.Errorf("%s span of session %q, want %q", m, spanAttrs(s)["mcp.session.id"], raw.id[:8])
		}
	}
}

func endedSpan(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var names []string
	ended := rec.Ended()
	for i := len(ended) - 1; i >= 0; i-- { // the latest
		if ended[i].Name() == name {
			return ended[i]
		}
		names = append(names, ended[i].Name())
	}
	t.Fatalf("no ended %q span among %v", name, names)
	return nil
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}
