package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/opsview"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// operatorViews answers the console's operator views (rpc.Operator) from
// this node's memory and, in a cluster, what the other nodes posted to
// Redis (gateway/opsview). The RPC front end has checked the caller is an
// operator.
type operatorViews struct {
	g *Gateway
	// recent keeps the last audit records (nil: no audit).
	recent *opsview.Recent
	board  *opsview.Board
}

var _ rpc.Operator = (*operatorViews)(nil)

// newOperatorViews makes g's views (keepRecent adds the audit's).
func newOperatorViews(g *Gateway, cfg Config) *operatorViews {
	v := &operatorViews{g: g}
	bopts := opsview.BoardOptions{Collect: v.collect, Node: cfg.NodeID, Log: cfg.Logger.With("component", "opsview")}
	if g.rdb != nil {
		bopts.Redis = g.rdb
	}
	v.board = opsview.NewBoard(bopts)
	return v
}

// keepRecent adds to cfg's audit sinks the one that keeps the recent
// records for the views, when there is an audit. Called last in New:
// the sink's Redis writer is stopped by the audit log's Close.
func (v *operatorViews) keepRecent(cfg *Config) {
	if len(cfg.Audit.Sinks) == 0 {
		return
	}
	opts := opsview.RecentOptions{Node: cfg.NodeID, Log: cfg.Logger.With("component", "opsview")}
	if v.g.rdb != nil {
		opts.Redis = v.g.rdb
	}
	v.recent = opsview.NewRecent(opts)
	cfg.Audit.Sinks = append(slices.Clip(cfg.Audit.Sinks), v.recent)
}

// officesElsewhere are the offices the other nodes have connections in;
// when Redis fails, none (this node's are listed all the same).
func (v *operatorViews) officesElsewhere(ctx context.Context) []string {
	ids, err := v.board.Offices(ctx)
	if err != nil {
		v.g.log.Debug("offices of the other nodes", "err", err)
	}
	return ids
}

// figureNames map the console's figures to the metrics they sum.
var figureNames = map[string]string{
	"smcp_calls_total":           "calls_total",
	"smcp_call_duration_seconds": "call_seconds",
	"smcp_refused_total":         "refused_total",
	"smcp_calls_in_flight":       "calls_in_flight",
	"smcp_connections":           "connections",
	"smcp_mcp_sessions":          "mcp_sessions",
}

// collect is this node's report: it reads memory only.
func (v *operatorViews) collect() opsview.Report {
	r := opsview.Report{Connections: v.g.Hub.Connections(), SignIns: v.g.Hub.SignIns("")}
	if m := v.g.Metrics; m != nil {
		r.Figures = figures(m.Registry())
	}
	if gov := v.g.gov; gov != nil && gov.quotas != nil {
		r.InFlight = gov.quotas.Flying()
	}
	return r
}

// figures sums the series of each metric of figureNames: counters and
// gauges as they are, a histogram as its _sum and _count.
func figures(reg prometheus.Gatherer) map[string]float64 {
	fams, err := reg.Gather()
	out := map[string]float64{}
	if err != nil && len(fams) == 0 {
		return out
	}
	for _, f := range fams {
		name, ok := figureNames[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func rfc3339ms(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func partialOf(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// maxAuditRecords bounds a ListAudit answer (ListAuditRequest.limit).
const maxAuditRecords = 500

// Audit reads the recent records of every node.
func (v *operatorViews) Audit(ctx context.Context, req *smcpv1.ListAuditRequest) (*smcpv1.ListAuditResponse, error) {
	if v.recent == nil {
		return &smcpv1.ListAuditResponse{}, nil
	}
	limit := int(req.GetLimit())
	if limit <= 0 || limit > maxAuditRecords {
		limit = maxAuditRecords
	}
	recs, nodes, err := v.recent.Read(ctx, opsview.Filter{Office: req.GetOffice(), Principal: req.GetPrincipal(),
		Outcome: req.GetOutcome(), Limit: limit})
	out := &smcpv1.ListAuditResponse{Enabled: true, Nodes: nodes, Partial: partialOf(err)}
	for i := range recs {
		out.Records = append(out.Records, auditRecord(&recs[i]))
	}
	return out, nil
}

func auditRecord(r *audit.Record) *smcpv1.AuditRecord {
	return &smcpv1.AuditRecord{Time: rfc3339ms(r.Time), Node: r.Node, Front: r.Front, Event: r.Event,
		Principal: r.Principal, Agent: r.Agent, Office: r.Office, Computer: r.Computer, Tool: r.Tool,
		Resource: r.Resource, Outcome: r.Outcome, Reason: r.Reason,
		DurationMs: float64(r.Duration) / float64(time.Millisecond), BytesIn: r.BytesIn, BytesOut: r.BytesOut,
		RequestId: r.RequestID, TraceId: r.TraceID}
}

// Connections lists every node's connections: this node's now, the
// others' as they last posted them.
func (v *operatorViews) Connections(ctx context.Context, req *smcpv1.ListConnectionsRequest) (*smcpv1.ListConnectionsResponse, error) {
	reports, err := v.board.Read(ctx)
	out := &smcpv1.ListConnectionsResponse{Partial: partialOf(err)}
	var all []core.Connection
	for _, r := range reports {
		out.Nodes = append(out.Nodes, r.Node)
		for _, c := range r.Connections {
			if req.GetOffice() == "" || c.Office == req.GetOffice() {
				all = append(all, c)
			}
		}
		if r.Omitted > 0 && out.Partial == "" {
			out.Partial = fmt.Sprintf("node %s has %d more connections than it reports", r.Node, r.Omitted)
		}
	}
	core.SortConnections(all)
	for _, c := range all {
		out.Connections = append(out.Connections, &smcpv1.Connection{Kind: c.Kind, Office: c.Office, Name: c.Name,
			Principal: c.Principal, Front: c.Front, Protocol: c.Protocol, Lapses: c.Lapses,
			Since: rfc3339ms(time.UnixMilli(c.Since)), Node: c.Node})
	}
	return out, nil
}

// Quotas gives the quota state of the principals asked for, or of those
// the keys file bounds on their own and those connected or calling.
func (v *operatorViews) Quotas(ctx context.Context, req *smcpv1.ListQuotasRequest) (*smcpv1.ListQuotasResponse, error) {
	gov := v.g.gov
	if gov == nil || gov.quotas == nil {
		return &smcpv1.ListQuotasResponse{}, nil
	}
	out := &smcpv1.ListQuotasResponse{Enabled: true, Rates: "node"}
	if gov.quotas.Shared() {
		out.Rates = "redis"
	}
	table := gov.table.Load()
	reports, _ := v.board.Read(ctx) // a node unread counts no calls in flight
	flying := map[string]int{}
	seen := map[string]struct{}{}
	for _, r := range reports {
		for p, n := range r.InFlight {
			flying[p] += n
			seen[p] = struct{}{}
		}
		for _, c := range r.Connections {
			if c.Principal != "" {
				seen[c.Principal] = struct{}{}
			}
		}
	}
	var ids []string
	if p := req.GetPrincipal(); p != "" {
		ids = []string{p}
	} else {
		for _, id := range table.Principals() {
			seen[id] = struct{}{}
		}
		ids = slices.Sorted(maps.Keys(seen))
	}
	for _, id := range ids {
		// A token's claims are not known here: its limits are those of
		// its id alone (the default, or a key's own).
		l := table.For(id, nil)
		if l == nil {
			l = &quota.Limits{} // unlimited
		}
		st, err := v.quotaState(ctx, id, "", l.Bound)
		if err != nil {
			return nil, err
		}
		st.InFlight = int32(flying[id])
		for _, tool := range slices.Sorted(maps.Keys(l.Tools)) {
			ts, err := v.quotaState(ctx, id, tool, l.Tools[tool])
			if err != nil {
				return nil, err
			}
			if st.Tools == nil {
				st.Tools = map[string]*smcpv1.QuotaState{}
			}
			ts.InFlight = int32(gov.quotas.InFlight(id, tool))
			st.Tools[tool] = ts
		}
		out.Quotas = append(out.Quotas, st)
	}
	return out, nil
}

func (v *operatorViews) quotaState(ctx context.Context, id, tool string, b quota.Bound) (*smcpv1.QuotaState, error) {
	st := &smcpv1.QuotaState{Principal: id, CallsPerSecond: b.CallsPerSecond, InFlightLimit: int32(b.InFlight)}
	if b.CallsPerSecond > 0 {
		st.Burst = int32(b.EffectiveBurst())
	}
	tokens, ok, err := v.g.gov.quotas.Tokens(ctx, id, tool, b)
	if err != nil {
		v.g.log.Warn("operator view: quota state", "err", err)
		return nil, smcp.Errorf(smcp.CodeInternal, "the quotas' store (Redis) did not answer")
	}
	if ok {
		st.Tokens = &tokens
	}
	return st, nil
}

// Figures sums the figures of every node.
func (v *operatorViews) Figures(ctx context.Context) (*smcpv1.GetFiguresResponse, error) {
	if v.g.Metrics == nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("this gateway keeps no figures: metrics are off (--metrics=false)"))
	}
	reports, err := v.board.Read(ctx)
	out := &smcpv1.GetFiguresResponse{Figures: map[string]float64{}, Partial: partialOf(err)}
	for _, r := range reports {
		for k, x := range r.Figures {
			out.Figures[k] += x
		}
		out.Nodes = append(out.Nodes, &smcpv1.NodeFigures{Node: r.Node, Figures: r.Figures, At: rfc3339ms(time.UnixMilli(r.At))})
	}
	return out, nil
}

// SignIns lists the sign-ins the computers of every node wait for: this
// node's now, the others' as they last posted them (gateway/opsview).
func (v *operatorViews) SignIns(ctx context.Context, req *smcpv1.ListSignInsRequest) (*smcpv1.ListSignInsResponse, error) {
	reports, err := v.board.Read(ctx)
	if err != nil {
		v.g.log.Debug("sign-ins of the other nodes", "err", err)
	}
	now := time.Now()
	var all []core.SignIn
	for _, r := range reports {
		for _, si := range r.SignIns {
			if si.Expires.After(now) && (req.GetOffice() == "" || si.Office == req.GetOffice()) {
				all = append(all, si)
			}
		}
	}
	slices.SortFunc(all, func(a, b core.SignIn) int {
		return cmp.Or(cmp.Compare(a.Office, b.Office), cmp.Compare(a.Computer, b.Computer), cmp.Compare(a.Server, b.Server))
	})
	out := &smcpv1.ListSignInsResponse{}
	for _, si := range all {
		out.SignIns = append(out.SignIns, &smcpv1.SignIn{Office: si.Office, Computer: si.Computer, Server: si.Server,
			BundleId: si.BundleID, Url: si.URL, ExpiresAt: si.Expires.UTC().Format(time.RFC3339)})
	}
	return out, nil
}
