package mcpfront

import (
	"context"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// seat is the agent a request acts as in its office: a lease on the office's
// agent seat (core.Hub.TakeSeat) and the agent's name. An MCP session of
// 2025-11-25 and older holds one for its whole life; a request of 2026-07-28,
// which has no session, holds its own for as long as it runs (a
// subscriptions/listen stream: as long as it is open), and so does each
// refresh of an office's shared view.
type seat struct {
	lease *core.Session
	agent string
}

// seatTimeout bounds the claim of a request's own seat. A claim may wait in
// a cluster (a dead holder's heartbeat to lapse, a registry settling); a
// request whose client is gone, or that waited this long, stops waiting.
const seatTimeout = 20 * time.Second

// takeSeat is where every seat of the front end is taken: one place for the
// seat rules to change (seats as leases renewed per request). The claim
// waits at most as long as ctx (the request's) and seatTimeout.
func (s *Server) takeSeat(ctx context.Context, p *core.Principal, office, agent string) (*seat, error) {
	ctx, cancel := context.WithTimeout(ctx, seatTimeout)
	defer cancel()
	lease, err := s.hub.TakeSeat(ctx, p, office, agent, core.Seat{Front: core.FrontMCP})
	if err != nil {
		return nil, err
	}
	return &seat{lease: lease, agent: agent}, nil
}

// takeSessionSeat is the seat of an MCP session (2025-11-25 and older): a
// lease that each of its requests renews (session.serve), which lapses
// core.Config.SeatLease after the last one, so that a client that vanished
// without DELETE frees the office long before the session's idle timeout.
func (s *Server) takeSessionSeat(ctx context.Context, p *core.Principal, office, agent string) (*seat, error) {
	lease, err := s.hub.TakeSeat(ctx, p, office, agent, core.Seat{Front: core.FrontMCP, Lapses: true})
	if err != nil {
		return nil, err
	}
	return &seat{lease: lease, agent: agent}, nil
}

// release gives the seat back.
func (st *seat) release() { st.lease.Close() }

type seatKey struct{}

// withSeat makes ctx act as st (read by session.seat).
func withSeat(ctx context.Context, st *seat) context.Context {
	return context.WithValue(ctx, seatKey{}, st)
}

// seat is the seat a call of x made with ctx acts as: the request's own
// (stateless requests, a shared view's refreshes), else the session's.
func (x *session) seat(ctx context.Context) (*seat, error) {
	if st, ok := ctx.Value(seatKey{}).(*seat); ok {
		return st, nil
	}
	if x.own != nil {
		return x.own, nil
	}
	return nil, smcp.Errorf(smcp.CodeInternal, "no agent seat for this request")
}
