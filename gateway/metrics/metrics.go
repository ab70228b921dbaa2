// Package metrics is the gateway's Prometheus instrumentation: one registry
// per gateway (no global state), the hub's size read at scrape time, calls by
// front end, event and outcome, their latency, the calls in flight and the
// connections refused by a limit.
//
// A nil *Metrics is valid and records nothing, so front ends need no checks.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/smcpgw/smcp-gateway/buildinfo"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Front-end label values.
const (
	FrontSIO = "sio"
	FrontRPC = "rpc"
)

// Outcomes other than an SMCP or Connect error code.
const (
	OutcomeOK = "ok"
	// OutcomeDropped: the caller went away before the answer.
	OutcomeDropped = "dropped"
)

// Metrics of one gateway.
type Metrics struct {
	reg         *prometheus.Registry
	connections prometheus.Gauge
	calls       *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	inflight    *prometheus.GaugeVec
	refused     *prometheus.CounterVec
}

// New registers the gateway's metrics, reading the hub's size at each scrape.
func New(hub *core.Hub) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "smcp_connections", Help: "Open Socket.IO connections of the /smcp namespace.",
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "smcp_calls_total", Help: "Agent calls by front end, event or procedure, and outcome (ok, dropped, or the error code).",
		}, []string{"front", "event", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "smcp_call_duration_seconds", Help: "Time from an agent call's arrival to its answer.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"front", "event"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "smcp_calls_in_flight", Help: "Agent calls awaiting an answer.",
		}, []string{"front"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "smcp_refused_total", Help: "Connections and events refused by a limit, by reason.",
		}, []string{"reason"}),
	}
	stat := func(name, help string, f func(core.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return float64(f(hub.Stats())) })
	}
	m.reg.MustRegister(m.connections, m.calls, m.latency, m.inflight, m.refused,
		stat("smcp_sessions", "Sessions attached to the hub.", func(s core.Stats) int { return s.Sessions }),
		stat("smcp_offices", "Offices with at least one member, lease or watcher.", func(s core.Stats) int { return s.Offices }),
		stat("smcp_agents", "Agents that have joined an office.", func(s core.Stats) int { return s.Agents }),
		stat("smcp_computers", "Computers that have joined an office.", func(s core.Stats) int { return s.Computers }),
		buildInfo(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is where more collectors may be registered.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// QueuedBytes reports, at each scrape, the bytes of requests toward
// computers that the gateway holds unwritten (queued reads them).
func (m *Metrics) QueuedBytes(queued func() int64) {
	if m != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "smcp_queued_bytes", Help: "Bytes of requests toward computers not written to them yet (a computer that does not read holds them).",
		}, func() float64 { return float64(queued()) }))
	}
}

// Connected adds delta to the open connections.
func (m *Metrics) Connected(delta int) {
	if m != nil {
		m.connections.Add(float64(delta))
	}
}

// Refused counts a connection or event refused for reason.
func (m *Metrics) Refused(reason string) {
	if m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
}

// Call records the start of a call at start; the returned func records its
// end with an outcome (OutcomeOK, OutcomeDropped or an error code).
func (m *Metrics) Call(front, event string, start time.Time) func(outcome string) {
	if m == nil {
		return func(string) {}
	}
	g := m.inflight.WithLabelValues(front)
	g.Inc()
	return func(outcome string) {
		g.Dec()
		m.calls.WithLabelValues(front, event, outcome).Inc()
		m.latency.WithLabelValues(front, event).Observe(time.Since(start).Seconds())
	}
}

// Outcome names the outcome of err: OutcomeOK, OutcomeDropped for a
// cancelled context, the SMCP code of an *smcp.Error, else "500".
func Outcome(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled):
		return OutcomeDropped
	}
	if e, ok := smcp.AsError(err); ok {
		return strconv.Itoa(e.Code)
	}
	return strconv.Itoa(smcp.CodeInternal)
}

// Interceptor records every unary RPC (and streams, by procedure) with the
// Connect code as outcome.
func (m *Metrics) Interceptor() connect.Interceptor { return interceptor{m} }

type interceptor struct{ m *Metrics }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		done := i.m.Call(FrontRPC, req.Spec().Procedure, time.Now())
		res, err := next(ctx, req)
		done(connectOutcome(err))
		return res, err
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		done := i.m.Call(FrontRPC, conn.Spec().Procedure, time.Now())
		err := next(ctx, conn)
		done(connectOutcome(err))
		return err
	}
}

func connectOutcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	return connect.CodeOf(err).String()
}

// buildInfo is the smcp_build_info gauge: always 1, its labels say which
// build is running (dashboards join on it; a fleet shows its versions).
func buildInfo() prometheus.Collector {
	bi := buildinfo.Read()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "smcp_build_info", Help: "Always 1; the labels describe the running build.",
	}, []string{"version", "goversion", "revision"})
	g.WithLabelValues(bi.Version, bi.GoVersion, bi.Revision).Set(1)
	return g
}
