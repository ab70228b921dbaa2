package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// WatchOffice streams the office's notifications. The caller holds the
// office as its agent for as long as the stream is open, so the same rule
// applies as for every other call: a different agent in the office refuses
// the watch, and no other agent can join while it runs. An operator's
// EvictAgent ends the stream with Aborted.
//
// The response headers are sent as soon as the watch is registered, so a
// client that has them knows no later notification will be missed. A reader
// too slow to keep up is dropped by the hub (the hub never waits for it) and
// the stream ends with ResourceExhausted; the client cancelling ends it
// cleanly; a gateway shutting down ends it with Unavailable; the caller's
// token expiring or key being revoked (core.Principal.Bound) ends it with
// Unauthenticated, saying which.
func (s *service) WatchOffice(ctx context.Context, req *smcpv1.WatchOfficeRequest, stream *connect.ServerStream[smcpv1.WatchOfficeResponse]) error {
	c, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	// A stream's seat is a lease renewed while the stream is open, so that
	// a stream whose handler is stuck, or whose node lost the registry,
	// does not keep the office forever.
	sess, err := s.hub.TakeSeat(ctx, c.principal, req.GetOfficeId(), c.agent, core.Seat{Front: c.front, Protocol: c.protocol, Lapses: true})
	if err != nil {
		return toConnect(err)
	}
	defer sess.Close()
	renew := time.NewTicker(max(s.hub.Config().SeatLease/4, 10*time.Millisecond))
	defer renew.Stop()
	w, err := s.hub.Watch(c.principal, req.GetOfficeId())
	if err != nil {
		return toConnect(err)
	}
	defer w.Close()
	// Served under the caller's credential: a stream must not outlive the
	// token or key that opened it.
	bound, stop := c.principal.Bound(ctx)
	defer stop()
	// The office's version changes only when it empties and fills again:
	// read at the start and at each enter_office (whose member the
	// registry has by then).
	version := s.officeVersion(ctx, c, req.GetOfficeId(), "")
	if err := stream.Send(nil); err != nil {
		return err
	}
	for {
		select {
		case <-bound.Done():
			if ctx.Err() != nil {
				return nil
			}
			return toConnect(context.Cause(bound))
		case <-s.closing.Done():
			return connect.NewError(connect.CodeUnavailable, errors.New("gateway is shutting down"))
		case <-sess.Done():
			return connect.NewError(connect.CodeAborted, sess.Cause())
		case <-renew.C:
			if err := sess.Renew(ctx); err != nil {
				if cause := sess.Cause(); cause != nil {
					return connect.NewError(connect.CodeAborted, cause)
				}
				// The seat lapsed and another agent took it (the registry
				// stood still longer than a lease), or the registry is
				// gone: the stream no longer holds the office.
				return connect.NewError(connect.CodeAborted, fmt.Errorf("seat lost: %w", err))
			}
		case n, ok := <-w.C():
			if !ok {
				if errors.Is(w.Err(), core.ErrWatchOverflow) {
					return connect.NewError(connect.CodeResourceExhausted,
						fmt.Errorf("the stream fell more than %d notifications behind", s.hub.Config().WatchBuffer))
				}
				return nil
			}
			msg, err := watchResponse(n)
			if err != nil {
				s.log.Error("watch: unknown notification", "event", n.Event, "err", err)
				continue
			}
			if n.Event == smcp.NotifyEnterOffice {
				version = s.officeVersion(ctx, c, req.GetOfficeId(), version)
			}
			msg.OfficeVersion = version
			if err := stream.Send(msg); err != nil {
				return err
			}
		}
	}
}

// watchResponse puts a hub notification in its oneof case: the field of
// WatchOfficeResponse.notification named after the event without its
// "notify:" prefix (proto/smcp/v1/service.proto), whose type must be the
// payload's. Every notify event of the protocol table has one
// (TestWatchCoversEveryNotification).
func watchResponse(n core.Notification) (*smcpv1.WatchOfficeResponse, error) {
	out := &smcpv1.WatchOfficeResponse{Event: n.Event}
	info, ok := smcp.Event(n.Event)
	if !ok || info.Kind != smcp.Notify || n.Payload == nil {
		return nil, fmt.Errorf("unknown notification %q", n.Event)
	}
	r := out.ProtoReflect()
	fd := r.Descriptor().Fields().ByName(protoreflect.Name(strings.TrimPrefix(n.Event, "notify:")))
	p := n.Payload.ProtoReflect()
	if fd == nil || fd.ContainingOneof() == nil || fd.Message() == nil || fd.Message().FullName() != p.Descriptor().FullName() {
		return nil, fmt.Errorf("payload %T does not match %s", n.Payload, n.Event)
	}
	r.Set(fd, protoreflect.ValueOfMessage(p))
	return out, nil
}

// officeVersion reads the office's version for a watch; when the registry
// cannot tell, the watch goes on with the last one known.
func (s *service) officeVersion(ctx context.Context, c *caller, officeID, last string) string {
	v, err := s.hub.OfficeVersion(ctx, c.principal, officeID)
	if err != nil {
		s.log.Warn("watch: office version", "office", officeID, "err", err)
		return last
	}
	return v
}
