package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// With a TracerProvider, a routed Socket.IO client: event and an RPC each
// end a span, named after the event and the procedure.
func TestTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g := startGateway(t, gateway.Config{TracerProvider: tp})
	dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	if _, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", ReqId: "r1", Timeout: 5}); err != nil {
		t.Fatal(err)
	}
	api := smcpv1connect.NewAgentServiceClient(http.DefaultClient, g.URL)
	if _, err := api.GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: "other", Computer: "pc"}); err == nil {
		t.Fatal("GetTools in an office without that computer succeeded")
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == "client:tool_call" {
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			if attrs["smcp.computer"] != "pc" || attrs["smcp.req_id"] != "r1" {
				t.Errorf("tool_call span attributes %v", attrs)
			}
		}
	}
	for _, want := range []string{"client:tool_call", "smcp.v1.AgentService/GetTools"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %q span among %v", want, names)
		}
	}
}

// traceGuard admits everything and keeps the trace ids it is given.
type traceGuard struct {
	mu  sync.Mutex
	ids []string
}

func (g *traceGuard) Admit(_ context.Context, c *core.Call) (func(core.Outcome), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ids = append(g.ids, c.TraceID)
	return nil, nil
}

func (g *traceGuard) Visible(*core.Call) bool { return true }

// The guard is told the trace of a Socket.IO call (an audit record names
// it), which is routed without a context to carry it.
func TestGuardGetsSocketIOTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g := &traceGuard{}
	gw := startGateway(t, gateway.Config{TracerProvider: tp, Core: core.Config{Guard: g}})
	dialComputer(t, gw.URL, "pc", "o")
	a := dialAgent(t, gw.URL, "alice", "o")
	if _, err := a.GetConfig(ctxT(t), "pc"); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, s := range rec.Ended() {
		if s.Name() == smcp.EventGetConfig {
			want = s.SpanContext().TraceID().String()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if want == "" || !slices.Contains(g.ids, want) {
		t.Fatalf("guard got trace ids %q, want %q", g.ids, want)
	}
}
