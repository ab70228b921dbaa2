package rpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Operator answers the operator's views of the gateway (the console's):
// what the gateway keeps beyond its hub (audit records, quotas, figures)
// and what the other nodes of a cluster report. The gateway implements it;
// the RPC front end checks the caller is an operator first.
type Operator interface {
	Audit(ctx context.Context, req *smcpv1.ListAuditRequest) (*smcpv1.ListAuditResponse, error)
	Connections(ctx context.Context, req *smcpv1.ListConnectionsRequest) (*smcpv1.ListConnectionsResponse, error)
	Quotas(ctx context.Context, req *smcpv1.ListQuotasRequest) (*smcpv1.ListQuotasResponse, error)
	Figures(ctx context.Context) (*smcpv1.GetFiguresResponse, error)
	SignIns(ctx context.Context, req *smcpv1.ListSignInsRequest) (*smcpv1.ListSignInsResponse, error)
}

// operator is the caller's Operator: only an operator key may read these
// views (they name every principal and office), and a gateway without
// Options.Operator has none.
func (s *service) operator(ctx context.Context) (Operator, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if !c.principal.Operator {
		return nil, toConnect(smcp.Errorf(smcp.CodeForbidden,
			"only an operator key (a key without roles, offices or name) may read the gateway's operator views"))
	}
	if s.opts.Operator == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errNoOperator)
	}
	return s.opts.Operator, nil
}

// errNoOperator: a Server made without Options.Operator (a test harness).
var errNoOperator = errors.New("this gateway has no operator views")

// ListAudit answers Operator.Audit.
func (s *service) ListAudit(ctx context.Context, req *smcpv1.ListAuditRequest) (*smcpv1.ListAuditResponse, error) {
	op, err := s.operator(ctx)
	if err != nil {
		return nil, err
	}
	res, err := op.Audit(ctx, req)
	return res, toConnect(err)
}

// ListConnections answers Operator.Connections.
func (s *service) ListConnections(ctx context.Context, req *smcpv1.ListConnectionsRequest) (*smcpv1.ListConnectionsResponse, error) {
	op, err := s.operator(ctx)
	if err != nil {
		return nil, err
	}
	res, err := op.Connections(ctx, req)
	return res, toConnect(err)
}

// ListQuotas answers Operator.Quotas.
func (s *service) ListQuotas(ctx context.Context, req *smcpv1.ListQuotasRequest) (*smcpv1.ListQuotasResponse, error) {
	op, err := s.operator(ctx)
	if err != nil {
		return nil, err
	}
	res, err := op.Quotas(ctx, req)
	return res, toConnect(err)
}

// GetFigures answers Operator.Figures.
func (s *service) GetFigures(ctx context.Context, _ *smcpv1.GetFiguresRequest) (*smcpv1.GetFiguresResponse, error) {
	op, err := s.operator(ctx)
	if err != nil {
		return nil, err
	}
	res, err := op.Figures(ctx)
	return res, toConnect(err)
}

// ListSignIns answers Operator.SignIns for an operator key, and for a
// computer's own key (a key with a name, that may join as a computer)
// those of that computer: a sign-in's URL is never an agent's to see.
func (s *service) ListSignIns(ctx context.Context, req *smcpv1.ListSignInsRequest) (*smcpv1.ListSignInsResponse, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	p := c.principal
	if !p.Operator && (p.Name == "" || !p.AllowsRole(smcp.RoleComputer)) {
		return nil, toConnect(smcp.Errorf(smcp.CodeForbidden,
			"only an operator key, or a computer's own key (a key with a name that may join as a computer), may list sign-ins"))
	}
	if s.opts.Operator == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errNoOperator)
	}
	res, err := s.opts.Operator.SignIns(ctx, req)
	if err != nil || p.Operator {
		return res, toConnect(err)
	}
	own := res.GetSignIns()[:0]
	for _, si := range res.GetSignIns() {
		if si.GetComputer() == p.Name && p.AllowsOffice(si.GetOffice()) {
			own = append(own, si)
		}
	}
	res.SignIns = own
	return res, nil
}
