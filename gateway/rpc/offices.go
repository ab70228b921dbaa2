package rpc

import (
	"context"

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
	offices, err := s.hub.ListOffices(ctx, c.principal)
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.ListOfficesResponse{Offices: offices}, nil
}
