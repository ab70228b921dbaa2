package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// AuditConfig turns the audit trail on (gateway/audit): one record per
// routed request, refused or answered.
type AuditConfig struct {
	// Sinks receive the records; none: no audit.
	Sinks []audit.Sink
	// Required refuses calls (503) while the records cannot be written.
	Required bool
	// Queue bounds the records waiting for the sinks (audit.Options).
	Queue int
	// HashArgs records the SHA-256 of a tool call's arguments (never the
	// arguments themselves).
	HashArgs bool
	// HashResults records the SHA-256 of each answer relayed (a tool
	// call's result, a resource read), never the answer itself.
	HashResults bool
}

// Refusal reasons of smcp_governance_refused_total.
const (
	reasonRule          = "rule"
	reasonQuotaRate     = "quota_" + quota.BoundRate
	reasonQuotaInFlight = "quota_" + quota.BoundInFlight
	reasonAudit         = "audit"
)

// governance is the core's Guard of a gateway with quotas, an audit trail
// or per-tool metrics: the rules (cmd's Core.Guard) are asked first, then
// the quotas, so that a call a rule refuses spends no quota; the audit
// records every call, refused or not, and refuses first when it is
// required and cannot write.
type governance struct {
	rules  core.Guard // nil: none
	quotas *quota.Quotas
	table  atomic.Pointer[quota.Table]
	audit  *audit.Logger // nil: none
	hash   bool
	// hashResults: the SHA-256 of each answer (AuditConfig.HashResults).
	hashResults bool
	node        string

	refused *prometheus.CounterVec
	perTool *toolMetrics // nil: off
}

func newGovernance(rules core.Guard, q *quota.Quotas, t *quota.Table, a *audit.Logger, hash bool, node string, perTool int) *governance {
	g := &governance{rules: rules, quotas: q, audit: a, hash: hash, node: node,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "smcp_governance_refused_total",
			Help: "Routed requests refused by the gateway's governance, by reason (rule, quota_calls_per_second, quota_in_flight, audit) and front end.",
		}, []string{"reason", "front"}),
	}
	g.table.Store(t)
	if perTool > 0 {
		g.perTool = newToolMetrics(perTool)
	}
	return g
}

func (g *governance) collectors() []prometheus.Collector {
	cs := []prometheus.Collector{g.refused}
	if g.perTool != nil {
		cs = append(cs, g.perTool.calls, g.perTool.errors, g.perTool.latency)
	}
	if g.audit != nil {
		cs = append(cs, g.audit.Collectors()...)
	}
	return cs
}

// Visible: listings are the rules' to filter; a quota hides nothing.
func (g *governance) Visible(c *core.Call) bool {
	return g.rules == nil || g.rules.Visible(c)
}

// Admit runs on the caller's goroutine, possibly a connection's reading
// one (core.Guard): nothing here waits, except the quotas' Redis call in
// a cluster, where the core leaves calls to GoContext. The audit record is
// made when the call is settled, from c (valid until then), so that an
// admitted call costs one allocation: the closure.
func (g *governance) Admit(ctx context.Context, c *core.Call) (func(core.Outcome), error) {
	if err := g.audit.Ready(); err != nil {
		g.refuse(ctx, c, reasonAudit, err)
		return nil, err
	}
	var ruled func(core.Outcome)
	if g.rules != nil {
		d, err := g.rules.Admit(ctx, c)
		if err != nil {
			g.refuse(ctx, c, reasonRule, err)
			return nil, err
		}
		ruled = d
	}
	var ticket quota.Ticket
	if l := g.limits(c); l != nil {
		t, err := g.quotas.Admit(ctx, c.Principal.ID, toolName(c), l, callTime(c))
		if err != nil {
			if ruled != nil {
				ruled(core.Outcome{Err: err, BytesIn: int64(len(c.Payload))})
			}
			reason := reasonQuotaRate
			if e, ok := smcp.AsError(err); ok && e.Details["bound"] == quota.BoundInFlight {
				reason = reasonQuotaInFlight
			}
			g.refuse(ctx, c, reason, err)
			return nil, err
		}
		ticket = t
	}
	isTool := c.Event == smcp.EventToolCall
	if g.audit == nil && ruled == nil && ticket == (quota.Ticket{}) && (g.perTool == nil || !isTool) {
		return nil, nil // nothing to settle: no closure per call
	}
	var traceID, argsSHA256 string // known now, not from c later
	if g.audit != nil {
		traceID, argsSHA256 = g.start(ctx, c)
	}
	return func(o core.Outcome) {
		ticket.Release()
		if ruled != nil {
			ruled(o)
		}
		if isTool {
			g.perTool.observe(c.Office, toolName(c), o)
		}
		if g.audit != nil {
			rec := audit.Record{TraceID: traceID, ArgsSHA256: argsSHA256}
			g.record(c, &rec)
			rec.Outcome = audit.OutcomeOf(o.Err)
			rec.Duration, rec.BytesIn, rec.BytesOut = o.Duration, o.BytesIn, o.BytesOut
			if g.hashResults && len(o.Result) > 0 {
				rec.ResultSHA256 = audit.Hash(o.Result)
			}
			g.audit.Log(rec)
		}
	}, nil
}

// limits are the quota of c's caller, nil when none applies. Quotas bound
// tool calls: listings and reads (which an MCP session makes on its own,
// and a tools/list fans out to every computer) spend none.
func (g *governance) limits(c *core.Call) *quota.Limits {
	if g.quotas == nil || c.Event != smcp.EventToolCall {
		return nil
	}
	l := g.table.Load().For(c.Principal.ID, c.Principal.Claims)
	if l.Unlimited() {
		return nil
	}
	return l
}

func (g *governance) refuse(ctx context.Context, c *core.Call, reason string, err error) {
	g.refused.WithLabelValues(reason, c.Front).Inc()
	if g.audit != nil {
		var rec audit.Record
		rec.TraceID, rec.ArgsSHA256 = g.start(ctx, c)
		g.record(c, &rec)
		rec.Outcome = audit.OutcomeOf(err)
		rec.Reason = reason
		rec.BytesIn = int64(len(c.Payload))
		g.audit.Log(rec)
	}
}

// start fills in what c's audit record takes from the admission itself:
// the trace (the front end's, else ctx's), and the arguments' SHA-256
// when asked (never the arguments).
func (g *governance) start(ctx context.Context, c *core.Call) (traceID, argsSHA256 string) {
	if traceID = c.TraceID; traceID == "" {
		if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
			traceID = sc.TraceID().String()
		}
	}
	if g.hash && len(c.Args) > 0 {
		argsSHA256 = audit.Hash(c.Args)
	}
	return traceID, argsSHA256
}

// record fills in c's audit record: who, where, what.
func (g *governance) record(c *core.Call, r *audit.Record) {
	r.Time = callTime(c)
	r.Node, r.Front, r.Event = g.node, frontOf(c.Front, c.Protocol), c.Event
	r.Principal, r.Agent, r.Office, r.Computer = c.Principal.ID, c.Agent, c.Office, c.Computer
	r.Tool, r.Resource, r.RequestID = toolName(c), c.URI, c.ReqID
	if r.Issuer = c.Principal.Issuer; r.Issuer != "" {
		r.Subject, _ = c.Principal.Claims["sub"].(string)
	}
}

// callTime is when the core came to admit c; now for a Call the core did
// not make.
func callTime(c *core.Call) time.Time {
	if c.Time.IsZero() {
		return time.Now()
	}
	return c.Time
}

// frontOf names a front end in the audit: the front, and the wire within
// it ("rpc/grpc").
func frontOf(front, protocol string) string {
	if protocol == "" {
		return front
	}
	return front + "/" + protocol
}

// event records a join, a leave or an eviction (core.Config.Events).
// It runs under the hub's lock: Log only queues.
func (g *governance) event(e core.Event) {
	if g.audit == nil {
		return
	}
	r := audit.Record{Time: time.Now(), Node: g.node, Front: frontOf(e.Front, e.Protocol), Event: e.Kind, Office: e.Office,
		Outcome: audit.OutcomeOf(e.Err)}
	if p := e.Principal; p != nil {
		r.Principal = p.ID
		if r.Issuer = p.Issuer; r.Issuer != "" {
			r.Subject, _ = p.Claims["sub"].(string)
		}
	}
	if e.Role == smcp.RoleComputer {
		r.Computer = e.Name
	} else {
		r.Agent = e.Name
	}
	if err, ok := smcp.AsError(e.Err); ok {
		r.Reason = err.Message // the core's own refusal: names the bound, never a credential
	}
	g.audit.Log(r)
}

// toolName is a tool call's tool as its computer names it.
func toolName(c *core.Call) string {
	if c.Tool == nil {
		return ""
	}
	return c.Tool.Name
}

// toolMetrics count tool calls, their errors and latency per office and
// tool, for the first limit offices and tools seen: later ones are "other",
// so that callers cannot grow the label set without bound.
type toolMetrics struct {
	limit          int
	mu             sync.Mutex
	offices, tools map[string]struct{}
	calls, errors  *prometheus.CounterVec
	latency        *prometheus.HistogramVec
}

// otherLabel is the office or tool past the limit.
const otherLabel = "other"

func newToolMetrics(limit int) *toolMetrics {
	labels := []string{"office", "tool"}
	return &toolMetrics{limit: limit, offices: map[string]struct{}{}, tools: map[string]struct{}{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "smcp_tool_calls_total", Help: "Tool calls admitted, per office and tool (beyond the configured number, \"other\").",
		}, labels),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "smcp_tool_call_errors_total", Help: "Tool calls that ended in an error (a timeout, a computer's error, a cancellation), per office and tool.",
		}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "smcp_tool_call_duration_seconds", Help: "Time from a tool call's admission to its answer, per office and tool.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, labels),
	}
}

func (m *toolMetrics) observe(office, tool string, o core.Outcome) {
	if m == nil {
		return
	}
	m.mu.Lock()
	office = m.label(m.offices, office)
	tool = m.label(m.tools, tool)
	m.mu.Unlock()
	m.calls.WithLabelValues(office, tool).Inc()
	if o.Err != nil {
		m.errors.WithLabelValues(office, tool).Inc()
	}
	m.latency.WithLabelValues(office, tool).Observe(o.Duration.Seconds())
}

// label is v when it is one of the first limit values seen, else other.
func (m *toolMetrics) label(seen map[string]struct{}, v string) string {
	if _, ok := seen[v]; ok {
		return v
	}
	if len(seen) < m.limit {
		seen[v] = struct{}{}
		return v
	}
	return otherLabel
}

// SetQuotas replaces the quotas of the keys file (a reload); calls in
// flight keep what they hold. Without Config.Quotas at New there is
// nothing to replace: it reports false.
func (g *Gateway) SetQuotas(t *quota.Table) bool {
	if g.gov == nil || g.gov.quotas == nil {
		return false
	}
	g.gov.table.Store(t)
	return true
}

// auditDrain bounds how long a stopping gateway writes the audit records
// still queued, after its calls have been answered.
const auditDrain = 10 * time.Second

// governanceOf is the Guard of cfg's quotas, audit and per-tool metrics
// around the rules already in cfg.Core.Guard; nil when none is on. The
// audit log is started by startAudit, once New cannot fail any more.
func governanceOf(cfg Config, rdb goredis.UniversalClient) *governance {
	if cfg.Quotas == nil && len(cfg.Audit.Sinks) == 0 && (!cfg.Metrics || cfg.MetricsPerTool <= 0) {
		return nil
	}
	var q *quota.Quotas
	if cfg.Quotas != nil {
		opts := quota.Options{Log: cfg.Logger.With("component", "quota")}
		if rdb != nil {
			opts.Redis = rdb
		}
		q = quota.New(opts)
	}
	perTool := 0
	if cfg.Metrics {
		perTool = cfg.MetricsPerTool
	}
	g := newGovernance(cfg.Core.Guard, q, cfg.Quotas, nil, cfg.Audit.HashArgs, cfg.NodeID, perTool)
	g.hashResults = cfg.Audit.HashResults
	return g
}

// startAudit starts the audit log of cfg.Audit, if any, for gov.
func startAudit(cfg Config, gov *governance) (*audit.Logger, error) {
	if gov == nil || len(cfg.Audit.Sinks) == 0 {
		return nil, nil
	}
	l, err := audit.New(audit.Options{Sinks: cfg.Audit.Sinks, Required: cfg.Audit.Required, Queue: cfg.Audit.Queue,
		Node: cfg.NodeID, Log: cfg.Logger.With("component", "audit")})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	gov.audit = l
	return l, nil
}

// authAudit records refused authentications (a security event outside
// any routed request): the refusal's message (which names the reason,
// never the credential), not the credential. Set by New once the audit
// log is started, before anything is served.
type authAudit struct {
	log  *audit.Logger
	node string
}

// eventAuthRefused is the event of a refused authentication's record.
const eventAuthRefused = "auth_refused"

func (a *authAudit) refused(err error) {
	if a == nil || a.log == nil {
		return
	}
	r := audit.Record{Time: time.Now(), Node: a.node, Event: eventAuthRefused, Outcome: audit.OutcomeOf(err)}
	if e, ok := smcp.AsError(err); ok {
		r.Reason = e.Message
	}
	a.log.Log(r)
}
