package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Member is one holder of an office slot as a Registry records it.
type Member struct {
	OfficeID string `json:"o"`
	Role     string `json:"r"`
	Name     string `json:"n"`
	// SID is the session id, or a lease id for a one-call agent.
	SID string `json:"s"`
	// Node is the gateway node the session is attached to.
	Node string `json:"d"`
	// Lease marks a one-call agent (ActAsAgent): it holds the agent slot by
	// name but is not listed and never notified.
	Lease bool `json:"l,omitempty"`
	// Version is the profile the member speaks ("0.2", "0.4"); "" for a
	// lease, which acts in whatever version the office speaks. An office
	// speaks the version of its members: a member of another is refused.
	Version string `json:"v,omitempty"`
	// Announced is the a2c_version the member's connection sent, shown by
	// list_room from 0.3 on ("" when it sent none).
	Announced string `json:"av,omitempty"`
	// Front is the front end an agent holds its seat through (FrontSocketIO,
	// FrontRPC, FrontMCP, FrontConsole), named in refusals.
	Front string `json:"f,omitempty"`
	// Since is when the agent took the seat (Unix milliseconds).
	Since int64 `json:"t,omitempty"`
	// LeaseMS, when above 0, makes a lease's record lapse that long after
	// its last claim: its holder renews it by claiming it again, and a
	// registry treats it as gone once it lapsed. 0: held until released.
	LeaseMS int64 `json:"lm,omitempty"`
}

// The front ends an agent seat is held through (Member.Front).
const (
	FrontSocketIO = "socket.io"
	FrontRPC      = "rpc"
	FrontMCP      = "mcp"
	FrontConsole  = "console"
	// FrontHosted is a computer the gateway runs itself (AttachHosted).
	FrontHosted = "hosted"
)

// SeatRefusal is how a Registry refuses an agent when holder has the
// office's seat: the message names the holder, its front end, since when it
// holds the seat and when the seat lapses (lapsesAt zero: held while its
// connection or call lasts), in RFC 3339 UTC.
func SeatRefusal(officeID string, holder Member, lapsesAt time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "office %q already has an agent", officeID)
	if holder.Name == "" {
		return smcp.Errorf(smcp.CodeForbidden, "%s", b.String())
	}
	fmt.Fprintf(&b, ": %q", holder.Name)
	if holder.Front != "" {
		fmt.Fprintf(&b, " over %s", holder.Front)
	}
	if holder.Since > 0 {
		fmt.Fprintf(&b, " since %s", rfc3339(time.UnixMilli(holder.Since)))
	}
	switch {
	case !lapsesAt.IsZero():
		fmt.Fprintf(&b, ", lapses at %s unless renewed", rfc3339(lapsesAt))
	case holder.Lease:
		b.WriteString(", held for its call or stream")
	default:
		b.WriteString(", held while it is connected")
	}
	return smcp.Errorf(smcp.CodeForbidden, "%s", b.String())
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// VersionRefusal is how a Registry refuses m when its office speaks
// officeVersion (PROTOCOL-0.4.md §3 P2).
func VersionRefusal(m Member, officeVersion string) error {
	return smcp.Errorf(smcp.CodeForbidden, "office %s speaks %s; this connection speaks %s", m.OfficeID, officeVersion, m.Version)
}

// Registry is the office membership: MemRegistry on one node, a shared one
// (gateway/cluster, Redis) for the nodes of a cluster. The hub asks it for
// every join, listing and remote lookup; it alone applies the join rules,
// and Claim must apply them atomically (across nodes for a shared one).
// gateway/core/registrytest is the conformance suite every implementation
// passes.
//
// An implementation bounds its own calls: one that does network I/O times
// them out itself (set where it is made), one that answers from memory
// needs no bound at all. ctx is the caller's: it ends when the caller gives
// up (a connection closes) and may have no deadline; Release is given
// context.Background(), as a slot is given back whether or not anybody
// waits for it.
type Registry interface {
	// Claim takes m's slot: the agent slot of its office (by name; only one
	// non-lease agent session) or its computer name. A member whose Version
	// is not that of the office's other non-lease members is refused
	// (VersionRefusal). A conflict is an
	// *smcp.Error 403 whose message is the refusal reason. Claiming the
	// very record that holds the slot again succeeds (a claim whose answer
	// was lost may be repeated). It may wait (up to the cluster's heartbeat
	// TTL) to find out whether the holder's node is dead, or while a shared
	// registry recovers from losing its data.
	//
	// Seats that lapse: a lease with LeaseMS > 0 holds its record until
	// LeaseMS after its last claim (by the registry's clock); claiming it
	// again renews it. A lapsed lease is as good as released: the next
	// claim of the office's seat removes it. A refusal of the agent slot is
	// SeatRefusal, naming the holder and when its lease lapses.
	Claim(ctx context.Context, m Member) error
	// EvictAgent frees an office's agent seat: every agent record of the
	// office (the agent session and the leases) is removed and returned.
	EvictAgent(ctx context.Context, officeID string) ([]Member, error)
	// Release gives the slot back; removed reports whether m still held it.
	Release(ctx context.Context, m Member) (removed bool, err error)
	// Members lists an office's members (leases excluded): the agent first,
	// then the computers by name.
	Members(ctx context.Context, officeID string) ([]Member, error)
	// Computer finds a computer of an office by name.
	Computer(ctx context.Context, officeID, name string) (Member, bool, error)
}

// ErrRegistryUnavailable marks the errors of a shared Registry whose store
// does not answer. Such a registry reports the outage itself (one log line
// when it starts, one when it ends), so the hub logs these per call at
// debug level only: a busy office would otherwise log a line per join,
// call and close for as long as the outage lasts.
var ErrRegistryUnavailable = errors.New("registry unavailable")

// logRegistry logs a failed registry call (see ErrRegistryUnavailable).
func (h *Hub) logRegistry(msg string, err error, args ...any) {
	level := slog.LevelError
	if errors.Is(err, ErrRegistryUnavailable) {
		level = slog.LevelDebug
	}
	h.log.Log(context.Background(), level, msg, append(args, "err", err)...)
}

// Peers reaches the sessions attached to the other nodes of a cluster: it
// carries everything that crosses nodes, calls and notifications.
// MemBus implements it in one process, gateway/cluster over Redis; both
// pass gateway/core/peerstest.
type Peers interface {
	// Request sends a client: event to the computer to (a session of the
	// node to.Node). done is called at most once; an answer that cannot come
	// (no such session there, the node gone) is an error, a
	// *BadAnswerError when the answer cannot be relayed. The hub keeps the
	// deadline: the transport's own must be later. forget, when not nil,
	// tells the transport the answer is no longer awaited (as Conn.Request).
	Request(to Member, event string, payload json.RawMessage, deadline time.Duration, done func(json.RawMessage, error)) (forget func())
	// Publish hands a notification to the other nodes, which deliver it to
	// their members of the office (except the session exceptSID) and their
	// watchers. It must not block and must keep the order of calls.
	Publish(n Notification, exceptSID string)
}

// SetPeers connects the hub to the other nodes (gateway/cluster's Peers
// over Redis, or a MemBus of several hubs in one process). Call it once,
// before the first session is attached, on a hub whose Config.Registry is
// the one the other nodes share. Without it the hub is alone: a MemBus of
// its own reaches nobody.
func (h *Hub) SetPeers(p Peers) { h.peers, h.clustered = p, true }

// Node is this hub's node id ("" on a single node).
func (h *Hub) Node() string { return h.cfg.Node }

// Deliver hands a notification published by another node to this node's
// members of the office and its watchers. exceptSID is the session that
// caused it; when it is a computer leaving, the calls this node has in
// flight to it are answered at once.
func (h *Hub) Deliver(n Notification, exceptSID string) {
	if sid, ok := strings.CutPrefix(exceptSID, evictPrefix); ok {
		// Hub.EvictAgent on another node: this node's part of it.
		h.evictHeld(n, sid, evictedError("", time.Now()))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.offices[n.OfficeID]
	switch p := n.Payload.(type) {
	case *smcpv1.LeaveOfficeNotification:
		if p.Computer != nil {
			if rc := h.remote[exceptSID]; rc != nil {
				delete(h.remote, exceptSID)
				rc.gone.end()
			}
			h.unlocateLocked(o, p.GetComputer())
		}
	case *smcpv1.EnterOfficeNotification:
		if p.Computer != nil {
			h.unlocateLocked(o, p.GetComputer())
		}
	}
	if o != nil {
		h.deliverLocked(o, "", n)
	}
}

// Where the computers of other nodes are. A call to a computer that is not
// a session of this node is sent where the office's located map says; only
// a miss asks the registry (a network round trip). An entry is dropped when
// its computer enters or leaves the office (the notifications every node
// gets), when its node dies (ForgetNode), and when its node answers that
// the session is not there. locGen counts the drops, so that a lookup
// answered across a drop does not put back what the drop removed.

// unlocateLocked drops the location of computer name in o (nil: no office
// here, nothing cached).
func (h *Hub) unlocateLocked(o *office, name string) {
	h.locGen++
	if o != nil {
		delete(o.located, name)
	}
}

// locateLocked records where m is, unless a drop happened since gen.
func (h *Hub) locateLocked(gen uint64, m Member) {
	o := h.offices[m.OfficeID]
	if o == nil || h.locGen != gen {
		return
	}
	if o.located == nil {
		o.located = map[string]Member{}
	}
	o.located[m.Name] = m
}

// unlocate drops m's location if it is still the one recorded.
func (h *Hub) unlocate(m Member) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locGen++
	if o := h.offices[m.OfficeID]; o != nil && o.located[m.Name] == m {
		delete(o.located, m.Name)
	}
}

// ForgetNode drops the location of every computer of node, found dead: a
// later call asks the registry, which no longer lists them.
func (h *Hub) ForgetNode(node string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.locGen++
	for _, o := range h.offices {
		for name, m := range o.located {
			if m.Node == node {
				delete(o.located, name)
			}
		}
	}
}

// ErrNoSession answers a call that another node sent to a session this
// node does not hold (it left, or is not a computer).
var ErrNoSession = errors.New("core: no such computer session on this node")

// Serve sends a call that another node routed here to the computer session
// sid, as Conn.Request: done gets the computer's answer (or why it cannot
// come), forget gives the call up. The caller's node applied the office
// rules and keeps the deadline.
func (h *Hub) Serve(sid, event string, payload json.RawMessage, done func(json.RawMessage, error)) (forget func(), err error) {
	h.mu.Lock()
	s := h.sessions[sid]
	ok := s != nil && s.role == smcp.RoleComputer && !s.closed
	h.mu.Unlock()
	if !ok {
		return nil, ErrNoSession
	}
	if event == smcp.EventAuthCallback {
		// A sign-in's callback that reached another node: its state is
		// checked, and used, here where the sign-in is kept.
		return h.serveSignIn(s, payload, done)
	}
	return s.conn.Request(event, payload, done), nil
}

// Reap tells the cluster that m, a member of a dead node, is gone: its
// office is told it left (here and on the other nodes) and calls in flight
// to it are answered. The caller has already released m in the registry.
func (h *Hub) Reap(m Member) {
	if m.Lease {
		return
	}
	n := &smcpv1.LeaveOfficeNotification{OfficeId: m.OfficeID}
	name := m.Name
	if m.Role == smcp.RoleAgent {
		n.Agent = &name
	} else {
		n.Computer = &name
	}
	wire, err := smcp.ToWire(n)
	if err != nil {
		h.log.Error("encode notification", "err", err)
		return
	}
	note := Notification{Event: smcp.NotifyLeaveOffice, OfficeID: m.OfficeID, Payload: n, Wire: wire}
	h.log.Info("member of a dead node removed", "office", m.OfficeID, "role", m.Role, "name", m.Name, "node", m.Node)
	h.Deliver(note, m.SID)
	h.peers.Publish(note, m.SID)
}

// NotificationFromWire rebuilds a Notification sent by another node.
func NotificationFromWire(event, officeID string, wire json.RawMessage) (Notification, error) {
	info, ok := smcp.Event(event)
	if !ok || info.Kind != smcp.Notify {
		return Notification{}, fmt.Errorf("core: unknown notification %q", event)
	}
	m := info.NewRequest()
	if err := smcp.Unmarshal(wire, m); err != nil {
		return Notification{}, fmt.Errorf("core: decode %s: %w", event, err)
	}
	return Notification{Event: event, OfficeID: officeID, Payload: m, Wire: wire}, nil
}

// remoteComputer tracks the calls in flight to a computer of another node:
// gone ends when the computer is known to have left.
type remoteComputer struct {
	gone    goneWatch
	pending atomic.Int64
	refs    int // guarded by hub.mu
}

func (h *Hub) remoteRef(sid string) *remoteComputer {
	h.mu.Lock()
	defer h.mu.Unlock()
	rc := h.remote[sid]
	if rc == nil {
		rc = &remoteComputer{gone: goneWatch{settling: &h.settling}}
		h.remote[sid] = rc
	}
	rc.refs++
	return rc
}

func (h *Hub) remoteUnref(sid string, rc *remoteComputer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rc.refs--
	if rc.refs == 0 && h.remote[sid] == rc {
		delete(h.remote, sid)
		rc.gone.end()
	}
}

// goRemote routes r to computer m of another node.
func (s *Session) goRemote(r *Request, m Member, agentSlots *atomic.Int64, done func(json.RawMessage, error)) *pendingCall {
	h := s.hub
	c := &remoteCall{h: h, m: m, rc: h.remoteRef(m.SID), r: r, done: done}
	return s.dispatch(r, &c.rc.gone, &c.rc.pending, agentSlots, c.send, c.settled)
}

// remoteCall is the state of a call to a computer of another node, one
// value rather than a closure for each step (the cross-node path's cost,
// docs/BENCHMARKS.md).
type remoteCall struct {
	h        *Hub
	m        Member
	rc       *remoteComputer
	r        *Request
	done     func(json.RawMessage, error)
	answered func(json.RawMessage, error) // dispatch's, set by send
	unrefed  atomic.Bool
}

func (c *remoteCall) send(answered func(json.RawMessage, error)) (forget func()) {
	c.answered = answered
	return c.h.peers.Request(c.m, c.r.Event, c.r.Payload, c.h.Deadline(c.r), c.answer)
}

// answer is the transport's answer.
func (c *remoteCall) answer(raw json.RawMessage, err error) {
	if err != nil && !isBadAnswer(err) {
		// The session is not where the cache said (or its node is gone):
		// the next call asks the registry.
		c.h.unlocate(c.m)
	}
	c.answered(raw, err)
}

// settled is the call's end, however it ended.
func (c *remoteCall) settled(raw json.RawMessage, err error) {
	if c.unrefed.CompareAndSwap(false, true) {
		c.h.remoteUnref(c.m.SID, c.rc)
	}
	c.done(raw, err)
}

// isBadAnswer reports whether err came from the computer's node (a bad
// answer, a refusal), which therefore holds the computer where it was.
func isBadAnswer(err error) bool {
	var bad *BadAnswerError
	var refused *RefusedError
	return errors.As(err, &bad) || errors.As(err, &refused)
}

// claim takes m's slot in the registry; ctx is the caller's (a connection
// that closes gives up its join). The registry bounds the claim itself.
func (h *Hub) claim(ctx context.Context, m Member) error {
	err := h.cfg.Registry.Claim(ctx, m)
	if err == nil {
		return nil
	}
	if _, ok := smcp.AsError(err); ok {
		return err
	}
	// A claim cut short (timeout, the caller gone) may have been applied by
	// a shared registry all the same: nobody would then release the slot,
	// and the name would stay taken while this node lives. Release is
	// record-exact, so this removes that very claim or nothing.
	h.release([]Member{m})
	if ctx.Err() != nil {
		h.log.Info("registry claim abandoned", "office", m.OfficeID, "name", m.Name, "err", err)
		return smcp.Errorf(smcp.CodeInternal, "join abandoned: %v", ctx.Err())
	}
	h.logRegistry("registry claim", err, "office", m.OfficeID, "name", m.Name)
	return smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
}

// release gives slots back; errors are logged (the reaper of a dead node
// settles what a failed release leaves). Nobody waits for a release: the
// registry's own bound ends it.
func (h *Hub) release(ms []Member) {
	for _, m := range ms {
		if _, err := h.cfg.Registry.Release(context.Background(), m); err != nil {
			h.logRegistry("registry release", err, "office", m.OfficeID, "name", m.Name)
		}
	}
}

func (s *Session) memberLocked() Member {
	sid := s.sid
	if s.lease {
		sid = s.leaseID
	}
	m := Member{OfficeID: s.officeID, Role: s.role, Name: s.name, SID: sid, Node: s.hub.cfg.Node, Lease: s.lease}
	if !s.lease {
		m.Version, m.Announced = s.proto.Version.String(), s.proto.Announced
	}
	if s.role == smcp.RoleAgent {
		m.Front, m.Since, m.LeaseMS = s.front, s.since, s.leaseMS
	}
	return m
}

// listMembers answers ListRoom from the registry.
func (h *Hub) listMembers(ctx context.Context, officeID string) ([]*smcpv1.SessionInfo, error) {
	ms, err := h.cfg.Registry.Members(ctx, officeID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, smcp.Errorf(smcp.CodeInternal, "list_room abandoned: %v", ctx.Err())
		}
		h.logRegistry("registry members", err, "office", officeID)
		return nil, smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	}
	out := make([]*smcpv1.SessionInfo, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.info())
	}
	return out, nil
}

// info is m as list_room shows it: a2c_version from 0.3 on (H9), never in
// a 0.2 office, whose answers stay as they were.
func (m Member) info() *smcpv1.SessionInfo {
	in := &smcpv1.SessionInfo{Sid: m.SID, Name: m.Name, Role: m.Role, OfficeId: m.OfficeID}
	if m.Version != "" && m.Version != smcp.V02.String() && m.Announced != "" {
		in.A2CVersion = &m.Announced
	}
	return in
}

// claimingLocked counts a claim of m in flight (d = 1) or settled (d = -1).
func (h *Hub) claimingLocked(m Member, d int) {
	if h.claiming[m] += d; h.claiming[m] <= 0 {
		delete(h.claiming, m)
	}
}

// Held lists every registry slot this node holds: its joined agents and
// computers and its one-call agents. A shared registry that lost its data,
// or that removed this node's members while it was presumed dead, is given
// these back (see gateway/cluster Node). Claims still in flight are not
// among them (see Claiming): one was not granted yet, and giving it "back"
// would grant it past the registry's rules, ahead of the member of another
// node that really holds the slot.
func (h *Hub) Held() []Member {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Member
	for _, o := range h.offices {
		if o.agent != nil {
			out = append(out, o.agent.memberLocked())
		}
		for _, c := range o.computers {
			out = append(out, c.memberLocked())
		}
		for l := range o.leases {
			// A lease that lapsed or was evicted is no longer held: the
			// registry must not be given it back.
			if !l.lapsedLocked() && l.Cause() == nil {
				out = append(out, l.memberLocked())
			}
		}
	}
	return out
}

// Claiming lists the claims this node has in flight. One may be applied
// in the registry before its answer comes back: its record is not stale.
func (h *Hub) Claiming() []Member {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Member, 0, len(h.claiming)+len(h.claimingLeases))
	for m := range h.claiming {
		out = append(out, m)
	}
	for l := range h.claimingLeases {
		out = append(out, l.memberLocked())
	}
	return out
}

// Holds reports whether m is still among Held or Claiming.
func (h *Hub) Holds(m Member) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claiming[m] > 0 {
		return true
	}
	if m.Lease {
		for l := range h.claimingLeases {
			if l.memberLocked() == m {
				return true
			}
		}
	}
	o := h.offices[m.OfficeID]
	if o == nil {
		return false
	}
	var s *Session
	switch {
	case m.Lease:
		for l := range o.leases {
			if l.leaseID == m.SID {
				s = l
			}
		}
	case m.Role == smcp.RoleAgent:
		s = o.agent
	default:
		s = o.computers[m.Name]
	}
	return s != nil && s.memberLocked() == m
}

// Restored tells m's office that m, a member of this node that other nodes
// had removed (reaped) while this node was presumed dead, is back: they
// were told it left.
func (h *Hub) Restored(m Member) {
	if m.Lease || !h.Holds(m) {
		return
	}
	name := m.Name
	n := &smcpv1.EnterOfficeNotification{OfficeId: m.OfficeID}
	if m.Role == smcp.RoleAgent {
		n.Agent = &name
	} else {
		n.Computer = &name
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.offices[m.OfficeID]
	if o == nil {
		return
	}
	var self *Session
	if m.Role == smcp.RoleAgent {
		self = o.agent
	} else {
		self = o.computers[m.Name]
	}
	if self == nil {
		return
	}
	h.notifyLocked(o, self, smcp.NotifyEnterOffice, n)
	h.log.Info("member taken back after this node was presumed dead", "office", m.OfficeID, "role", m.Role, "name", m.Name)
}

// Evict takes m out of its office on this node: while this node was
// presumed dead its slot was released and another session has it now. The
// other nodes were told m left when it was reaped; this node's members of
// the office, and m's own session, are told now. The session stays
// connected and may join again (and be refused while the slot is taken).
func (h *Hub) Evict(m Member) {
	if m.Lease {
		return // the call in flight ends by itself; its release finds nothing
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.offices[m.OfficeID]
	if o == nil {
		return
	}
	var s *Session
	if m.Role == smcp.RoleAgent {
		s = o.agent
	} else {
		s = o.computers[m.Name]
	}
	if s == nil || s.memberLocked() != m {
		return
	}
	name := m.Name
	n := &smcpv1.LeaveOfficeNotification{OfficeId: m.OfficeID}
	if m.Role == smcp.RoleAgent {
		n.Agent = &name
		o.agent = nil
	} else {
		n.Computer = &name
		delete(o.computers, m.Name)
	}
	wire, err := smcp.ToWire(n)
	if err != nil {
		h.log.Error("encode notification", "err", err)
	} else {
		note := Notification{Event: smcp.NotifyLeaveOffice, OfficeID: m.OfficeID, Payload: n, Wire: wire}
		h.deliverLocked(o, s.sid, note)
		s.conn.Notify(note)
	}
	h.log.Warn("member evicted: its slot went to another session while this node was presumed dead",
		"sid", s.sid, "office", m.OfficeID, "role", m.Role, "name", m.Name)
	s.officeID = ""
	s.endMember()
	h.gcLocked(o)
}
