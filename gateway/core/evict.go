package core

import (
	"context"
	"strings"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Disconnecter is implemented by a Conn that can be cut by the gateway: an
// evicted Socket.IO agent is disconnected, with reason in the gateway's log
// and the leave_office it is sent first.
type Disconnecter interface {
	Disconnect(reason string)
}

// EvictAgent frees officeID's agent seat, whoever holds it and on whichever
// node: an operator's remedy for a seat held by an agent that should not
// have it. Only an operator key (Principal.Operator) may. The holders are
// returned. A Socket.IO agent is told it left the office (as is the office)
// and disconnected; a lease (an MCP session, an RPC stream) ends: its
// Session.Done closes with an ErrSeatEvicted cause, which its front end
// reports to its client.
func (h *Hub) EvictAgent(ctx context.Context, p *Principal, officeID string) ([]Member, error) {
	if !p.Operator {
		return nil, smcp.Errorf(smcp.CodeForbidden, "only an operator key may evict an office's agent")
	}
	if strings.TrimSpace(officeID) == "" {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "office_id is required")
	}
	held, err := h.cfg.Registry.EvictAgent(ctx, officeID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, smcp.Errorf(smcp.CodeInternal, "evict abandoned: %v", ctx.Err())
		}
		h.logRegistry("registry evict", err, "office", officeID)
		return nil, smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	}
	cause := evictedError(p.ID, time.Now())
	for _, m := range held {
		h.log.Warn("agent seat evicted by operator", "office", officeID, "name", m.Name, "front", m.Front,
			"node", m.Node, "key", p.ID)
		h.event(Event{Kind: EventEvict, Principal: p, Front: m.Front, Office: officeID, Role: smcp.RoleAgent, Name: m.Name})
		note, ok := h.leaveNote(m)
		if !ok {
			continue
		}
		// This node's part first; the others are told through the leave
		// notification, whose sender names the holder (see Deliver).
		h.evictHeld(note, m.SID, cause)
		h.peers.Publish(note, evictPrefix+m.SID)
	}
	return held, nil
}

// leaveNote is the leave_office of agent m.
func (h *Hub) leaveNote(m Member) (Notification, bool) {
	name := m.Name
	n := &smcpv1.LeaveOfficeNotification{OfficeId: m.OfficeID, Agent: &name}
	wire, err := smcp.ToWire(n)
	if err != nil {
		h.log.Error("encode notification", "err", err)
		return Notification{}, false
	}
	return Notification{Event: smcp.NotifyLeaveOffice, OfficeID: m.OfficeID, Payload: n, Wire: wire}, true
}

// evictPrefix marks the sender of a published leave_office as an eviction
// of that holder (a session id or a lease id), which each node applies to
// itself (evictHeld).
const evictPrefix = "evict:"

// isLeaseID tells a lease's holder id (TakeSeat) from a session id.
func isLeaseID(sid string) bool { return strings.HasPrefix(sid, "lease:") }

// evictHeld applies an eviction on this node. note is the agent's
// leave_office, sid its holder's sid or lease id. A lease ends (nobody was
// told it entered, so nobody is told it left); an agent session here leaves
// its office (the office and the agent are told) and is disconnected; an
// agent session of another node is gone already, and this node's members of
// the office are told.
func (h *Hub) evictHeld(note Notification, sid string, cause error) {
	h.mu.Lock()
	o := h.offices[note.OfficeID]
	if o == nil {
		h.mu.Unlock()
		return
	}
	if isLeaseID(sid) {
		for l := range o.leases {
			if l.leaseID == sid {
				l.end(cause)
			}
		}
		h.mu.Unlock()
		return
	}
	s := o.agent
	if s == nil || s.sid != sid {
		h.deliverLocked(o, sid, note)
		h.mu.Unlock()
		return
	}
	o.agent = nil
	h.deliverLocked(o, sid, note)
	s.conn.Notify(note)
	s.officeID = ""
	s.endMember()
	h.gcLocked(o)
	h.mu.Unlock()
	if d, ok := s.conn.(Disconnecter); ok {
		d.Disconnect(cause.Error())
	}
}
