package rpc

import (
	"context"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// ListOffices lists the offices the caller's key may enter. Unlike the other
// calls it names no office, so the caller holds none: listing never keeps
// another agent out.
func (s *service) ListOffices(ctx context.Context, _ *smcpv1.ListOfficesRequest) (*smcpv1.ListOfficesResponse, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	var elsewhere []string
	if f := s.opts.OfficesElsewhere; f != nil {
		elsewhere = f(ctx)
	}
	offices, err := s.hub.ListOffices(ctx, c.principal, elsewhere...)
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.ListOfficesResponse{Offices: offices, Operator: c.principal.Operator}, nil
}

// EvictAgent frees an office's agent seat (core.Hub.EvictAgent): an
// operator's call, which holds no seat itself.
func (s *service) EvictAgent(ctx context.Context, req *smcpv1.EvictAgentRequest) (*smcpv1.EvictAgentResponse, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	held, err := s.hub.EvictAgent(ctx, c.principal, req.GetOfficeId())
	if err != nil {
		return nil, toConnect(err)
	}
	out := &smcpv1.EvictAgentResponse{}
	for _, m := range held {
		h := &smcpv1.SeatHolder{Agent: m.Name, Front: m.Front, Node: m.Node}
		if m.Since > 0 {
			h.Since = time.UnixMilli(m.Since).UTC().Format(time.RFC3339)
		}
		out.Holders = append(out.Holders, h)
	}
	return out, nil
}
