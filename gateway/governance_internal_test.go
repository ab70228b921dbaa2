package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestToolMetricsFoldIntoOther: past the configured number of offices
// and tools, calls count under "other", so that callers cannot grow the
// label set.
func TestToolMetricsFoldIntoOther(t *testing.T) {
	m := newToolMetrics(2)
	for _, c := range []struct{ office, tool string }{
		{"o1", "echo"}, {"o2", "add"}, {"o3", "echo"}, {"o1", "slow"}, {"o1", "echo"},
	} {
		m.observe(c.office, c.tool, core.Outcome{Duration: time.Millisecond})
	}
	m.observe("o2", "add", core.Outcome{Err: smcp.Errorf(408, "timeout")})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.calls, m.errors)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP smcp_tool_call_errors_total Tool calls that ended in an error (a timeout, a computer's error, a cancellation), per office and tool.
# TYPE smcp_tool_call_errors_total counter
smcp_tool_call_errors_total{office="o2",tool="add"} 1
# HELP smcp_tool_calls_total Tool calls admitted, per office and tool (beyond the configured number, "other").
# TYPE smcp_tool_calls_total counter
smcp_tool_calls_total{office="o1",tool="echo"} 2
smcp_tool_calls_total{office="o1",tool="other"} 1
smcp_tool_calls_total{office="o2",tool="add"} 2
smcp_tool_calls_total{office="other",tool="echo"} 1
`)); err != nil {
		t.Fatal(err)
	}
}

// denyAll is a rules guard that refuses every call.
type denyAll struct{}

func (denyAll) Admit(context.Context, *core.Call) (func(core.Outcome), error) {
	return nil, smcp.Errorf(smcp.CodeForbidden, "denied by rule set \"x\"")
}
func (denyAll) Visible(*core.Call) bool { return false }

// TestRuleRefusalSpendsNoQuota: the rules are asked before the quotas, so
// that calls a rule refuses leave the caller's allowance whole; the
// refusal is counted by reason and front end.
func TestRuleRefusalSpendsNoQuota(t *testing.T) {
	l := &quota.Limits{Bound: quota.Bound{CallsPerSecond: 1, Burst: 1}}
	table := &quota.Table{Default: l}
	q := quota.New(quota.Options{})
	g := newGovernance(denyAll{}, q, table, nil, false, "", 0)
	p := &core.Principal{ID: "k"}
	c := &core.Call{Principal: p, Front: core.FrontRPC, Office: "o", Computer: "pc", Event: smcp.EventToolCall,
		Tool: &core.ToolView{Name: "echo", Exposed: "echo"}}
	for range 3 {
		if _, err := g.Admit(context.Background(), c); err == nil {
			t.Fatal("admitted against the rule")
		}
	}
	if v := testutil.ToFloat64(g.refused.WithLabelValues(reasonRule, core.FrontRPC)); v != 3 {
		t.Fatalf("refused{rule,rpc} = %v, want 3", v)
	}
	// The allowance of 1 is whole: the first call past the rules is admitted.
	g.rules = nil
	done, err := g.Admit(context.Background(), c)
	if err != nil {
		t.Fatalf("after 3 rule refusals: %v", err)
	}
	done(core.Outcome{})
	_, err = g.Admit(context.Background(), c)
	if e, ok := smcp.AsError(err); !ok || e.Code != quota.Code {
		t.Fatalf("second call at 1/s: %v, want a 429", err)
	}
	if v := testutil.ToFloat64(g.refused.WithLabelValues(reasonQuotaRate, core.FrontRPC)); v != 1 {
		t.Fatalf("refused{quota_calls_per_second,rpc} = %v, want 1", v)
	}
}

// discardSink takes every batch.
type discardSink struct{}

func (discardSink) Write(context.Context, []audit.Record) error { return nil }
func (discardSink) Close(context.Context) error                 { return nil }

// BenchmarkGovernanceToolCall is the guard's cost per tool call, on the
// caller's goroutine, with a quota (memory) and the audit on: admission,
// the record, and its settling (the writer's encoding runs apart; see
// gateway/audit BenchmarkWriteJSONLines).
func BenchmarkGovernanceToolCall(b *testing.B) {
	al, err := audit.New(audit.Options{Sinks: []audit.Sink{discardSink{}}, Queue: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = al.Close(context.Background()) }()
	table := &quota.Table{Default: &quota.Limits{Bound: quota.Bound{CallsPerSecond: 1e9, Burst: 1 << 30, InFlight: 1 << 20}}}
	g := newGovernance(nil, quota.New(quota.Options{}), table, al, false, "n1", 0)
	p := &core.Principal{ID: "k"}
	c := &core.Call{Principal: p, Front: core.FrontSocketIO, Office: "o", Agent: "a", Computer: "pc", Event: smcp.EventToolCall,
		ReqID: "r", Tool: &core.ToolView{Name: "echo", Exposed: "echo"}, Payload: []byte(`{"tool_name":"echo"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		done, err := g.Admit(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		done(core.Outcome{Duration: time.Millisecond, BytesIn: 20, BytesOut: 40})
	}
}

// TestRecordOfSettledCall: the record of an admitted call is written when
// it is settled, from the Call and the Outcome; a Socket.IO call's trace
// is the one its front end names (it has no context to carry it).
func TestRecordOfSettledCall(t *testing.T) {
	var out bytes.Buffer
	al, err := audit.New(audit.Options{Sinks: []audit.Sink{audit.NewJSONLines(&out)}})
	if err != nil {
		t.Fatal(err)
	}
	g := newGovernance(nil, nil, nil, al, false, "n1", 0)
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	c := &core.Call{Principal: &core.Principal{ID: "k"}, Front: core.FrontSocketIO, Office: "o", Agent: "a",
		Computer: "pc", Event: smcp.EventToolCall, ReqID: "r1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Time: at,
		Tool: &core.ToolView{Name: "echo", Exposed: "echo"}, Payload: []byte(`{"tool_name":"echo"}`)}
	done, err := g.Admit(context.Background(), c)
	if err != nil || done == nil {
		t.Fatalf("Admit: %v (done %v)", err, done != nil)
	}
	done(core.Outcome{Duration: 1500 * time.Microsecond, BytesIn: 20, BytesOut: 40})
	if err := al.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %q", err, out.Bytes())
	}
	want := map[string]any{"time": "2026-11-29T09:00:00Z", "node": "n1", "front": core.FrontSocketIO, "event": smcp.EventToolCall,
		"principal": "k", "agent": "a", "office": "o", "computer": "pc", "tool": "echo", "outcome": "ok",
		"duration_ms": 1.5, "bytes_in": 20.0, "bytes_out": 40.0, "request_id": "r1", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
	if !maps.Equal(got, want) {
		t.Fatalf("record %v\nwant   %v", got, want)
	}
}
