package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of Config.
const (
	DefaultRequestTimeout = 30 * time.Second
	// DefaultToolCallMargin is what the gateway waits beyond a tool call's own
	// timeout, so that the computer's own timeout answer arrives first.
	DefaultToolCallMargin   = 5 * time.Second
	DefaultMaxPending       = 1024
	DefaultMaxAgentInFlight = 256
	DefaultWatchBuffer      = 256
	// DefaultMaxAnswerBytes bounds a computer's answer: large enough for
	// screenshots, separate from the (smaller) request limit.
	DefaultMaxAnswerBytes = 16 << 20
	// DefaultSeatLease is how long a lease's agent seat outlives its
	// holder's last request (Config.SeatLease).
	DefaultSeatLease         = 60 * time.Second
	MinToolCallTimeout int32 = 1
	MaxToolCallTimeout int32 = 3600
)

// Config tunes a Hub. Zero fields take the defaults.
type Config struct {
	// RequestTimeout bounds every client: event except tool_call.
	RequestTimeout time.Duration
	// ToolCallMargin is added to a tool call's timeout.
	ToolCallMargin time.Duration
	// MaxPending bounds the requests awaiting an answer from one computer.
	// A request stops counting when it settles, however it settles (answer,
	// timeout, computer gone, caller gone); the transport is told to forget
	// the answer of one that did not settle by it.
	MaxPending int
	// MaxAgentInFlight bounds the client: requests one office's agent has
	// in flight, over every front end (a Socket.IO agent and RPC callers
	// acting as that agent count together). Excess requests get 429.
	MaxAgentInFlight int
	// MaxAnswerBytes bounds a computer's answer; a larger one fails that
	// call (the computer stays joined).
	MaxAnswerBytes int
	// WatchBuffer is how many notifications a watcher may lag behind before
	// it is dropped.
	WatchBuffer int
	Logger      *slog.Logger
	// Registry holds office membership and decides joins. nil: a
	// MemRegistry (one node). A cluster shares one (see SetPeers).
	Registry Registry
	// Node names this node in the Registry.
	Node string
	// SeatLease is how long an agent seat taken with Seat.Lapses (an MCP
	// session, an RPC stream) lasts after its holder's last renewal.
	SeatLease time.Duration
	// Guard admits every routed request and filters tool listings (see
	// Guard); nil admits everything, at no cost.
	Guard Guard
	// Events, when not nil, is told of joins, leaves and evictions (see
	// Event), for an audit trail. It may be called with the hub's lock
	// held: it must not block nor call the hub.
	Events func(Event)
}

func (c Config) withDefaults() Config {
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ToolCallMargin <= 0 {
		c.ToolCallMargin = DefaultToolCallMargin
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxAgentInFlight <= 0 {
		c.MaxAgentInFlight = DefaultMaxAgentInFlight
	}
	if c.MaxAnswerBytes <= 0 {
		c.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if c.WatchBuffer <= 0 {
		c.WatchBuffer = DefaultWatchBuffer
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registry == nil {
		c.Registry = NewMemRegistry()
	}
	if c.SeatLease <= 0 {
		c.SeatLease = DefaultSeatLease
	}
	return c
}

// Notification is one notify: event for one office.
type Notification struct {
	// Event is the Socket.IO event name, e.g. smcp.NotifyEnterOffice.
	Event    string
	OfficeID string
	// Payload is *smcpv1.EnterOfficeNotification, *smcpv1.LeaveOfficeNotification,
	// *smcpv1.UpdateComputerConfigReq or *smcpv1.AgentCallData.
	Payload proto.Message
	// Wire is Payload in wire JSON, encoded once for every receiver.
	Wire json.RawMessage
}

// Conn is how the core reaches one session of a front end.
type Conn interface {
	// Notify delivers a notification. It must not block: it is called with
	// the hub's lock held, which keeps notifications in membership order.
	Notify(n Notification)
	// Request sends a client: event to the session (a computer) and returns at
	// once. done is called at most once, with the session's answer, with a
	// *BadAnswerError when the answer cannot be relayed, with a
	// *RefusedError when the request was not sent, or with another
	// error when the answer can no longer come; it may never be called when
	// the session closes, since the core then forgets the request anyway.
	// forget, when not nil, is called when the core no longer awaits the
	// answer (timeout, caller gone): the transport may drop what it keeps
	// for it, and done may then never be called.
	Request(event string, payload json.RawMessage, done func(answer json.RawMessage, err error)) (forget func())
}

// Hub holds every session and office. All membership decisions are taken
// under its one lock.
type Hub struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*Session
	// settling: goroutines answering the calls of computers that left
	// (goneWatch.end); Wait awaits them.
	settling sync.WaitGroup
	offices  map[string]*office
	// Cluster only: computers of other nodes with calls in flight, by sid.
	remote map[string]*remoteComputer
	peers  Peers
	// signIns are the sign-ins this node's computers wait for (signins.go).
	signIns signIns
	// clustered: SetPeers was called, other nodes may hold the office's
	// computers (see Session.TryGo).
	clustered bool
	// locGen counts the drops of cached locations (see unlocateLocked).
	locGen   uint64
	leaseSeq atomic.Uint64
	// leasePrefix starts every lease id of this node: "lease:<node>:".
	leasePrefix string
	// claiming counts the claims in flight in the registry: a member whose
	// claim was sent is this node's as far as the registry is concerned
	// (see Held), before its session is recorded as joined.
	claiming map[Member]int
	// claimingLeases are the leases (TakeSeat) whose claims are in flight,
	// counted apart from claiming: a lease's member is claimed once, and a
	// pointer key costs no allocation per one-call seat (a Member key does:
	// it is too large to be held in the map).
	claimingLeases map[*Session]struct{}
	// tools: the computers' tools and blobs, for the Guard.
	tools toolCache
	// reqSeq numbers the core's own requests (Session.listTools).
	reqSeq atomic.Uint64
}

type office struct {
	id        string
	agent     *Session
	computers map[string]*Session
	// Stateless callers acting as an agent for one call: they hold the agent
	// slot (by name) without being members.
	leaseName string
	leases    map[*Session]struct{}
	watchers  map[*Watcher]struct{}
	// agentCalls counts the agent's requests in flight (MaxAgentInFlight).
	agentCalls atomic.Int64
	// located: cluster only, the office's computers on other nodes by
	// name, as the registry gave them (see unlocateLocked).
	located map[string]Member
}

func (o *office) empty() bool {
	return o.agent == nil && len(o.computers) == 0 && len(o.leases) == 0 && len(o.watchers) == 0
}

// New makes a Hub.
func New(cfg Config) *Hub {
	cfg = cfg.withDefaults()
	h := &Hub{cfg: cfg, log: cfg.Logger, sessions: map[string]*Session{}, offices: map[string]*office{},
		remote: map[string]*remoteComputer{}, claiming: map[Member]int{},
		claimingLeases: map[*Session]struct{}{}, leasePrefix: "lease:" + cfg.Node + ":"}
	// Alone until SetPeers: a bus of its own, where nobody is reached.
	h.peers, _ = NewMemBus().Connect(h)
	return h
}

// Wait returns once the calls in flight to computers that left have been
// answered as gone: the owner of a hub calls it when it stops.
func (h *Hub) Wait() { h.settling.Wait() }

// Config returns the effective configuration.
func (h *Hub) Config() Config { return h.cfg }

// Stats is a snapshot of a hub's size, for metrics.
type Stats struct {
	Sessions, Offices, Agents, Computers int
}

// Stats counts the attached sessions, the offices with anyone in them, and
// the agents and computers that have joined an office.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Sessions: len(h.sessions), Offices: len(h.offices)}
	for _, o := range h.offices {
		if o.agent != nil {
			st.Agents++
		}
		st.Computers += len(o.computers)
	}
	return st
}

// Session is one caller: a connection attached with Attach, or a stateless
// caller acting as an agent (ActAsAgent). Role and name are fixed by its first
// join.
type Session struct {
	hub       *Hub
	sid       string
	principal *Principal
	conn      Conn
	proto     Protocol
	lease     bool
	leaseID   string // the lease's holder id in the Registry
	// front is the front end the session holds an agent seat through;
	// wire its protocol (Seat.Protocol).
	front, wire string
	// leaseMS is the lapse of a lease that lapses (Seat.Lapses); 0: held
	// until closed.
	leaseMS int64
	// renewed is when a lapsing lease was last renewed (Unix ns).
	renewed atomic.Int64
	// A lease's end (see Done): made when someone first waits for it, so
	// that a one-call seat nobody watches costs no channel.
	endMu sync.Mutex
	ended bool
	// endCause is the eviction (wrapping ErrSeatEvicted) that ended the
	// lease, nil when it ended because it closed.
	endCause error
	endCh    chan struct{}

	// Guarded by hub.mu.
	role, name, officeID string
	closed               bool
	// since is when the session took its agent seat (Unix ms).
	since int64
	// attached is when the connection attached (Unix ms), for
	// Connections.
	attached int64
	// membership ends when the session leaves its office or closes:
	// requests in flight to it fail at once. nil for a lease (only a
	// computer's is watched, by the calls routed to it).
	membership *goneWatch

	pending atomic.Int64

	// The calls this session (as an agent) has in flight, settled when it
	// closes: call holds one, calls the others, so that a one-call seat
	// makes no map.
	callsMu     sync.Mutex
	call        *pendingCall
	calls       map[*pendingCall]struct{}
	callsClosed bool
}

// endMember ends the session's membership (see membership).
func (s *Session) endMember() {
	if s.membership != nil {
		s.membership.end()
	}
}

// Protocol is what a connection speaks, fixed at its handshake.
type Protocol struct {
	// Version is its profile.
	Version smcp.Version
	// Announced is the a2c_version it sent ("" for none).
	Announced string
}

// Attach registers a connection that speaks proto. sid must be unique
// among attached sessions.
func (h *Hub) Attach(sid string, p *Principal, conn Conn, proto Protocol) (*Session, error) {
	return h.attach(FrontSocketIO, sid, p, conn, proto)
}

// AttachHosted registers a computer the gateway runs in its own process
// (gateway/hosted): a session like a Socket.IO one, listed and reported as
// FrontHosted.
func (h *Hub) AttachHosted(sid string, p *Principal, conn Conn, proto Protocol) (*Session, error) {
	return h.attach(FrontHosted, sid, p, conn, proto)
}

func (h *Hub) attach(front, sid string, p *Principal, conn Conn, proto Protocol) (*Session, error) {
	if sid == "" || p == nil || conn == nil {
		return nil, fmt.Errorf("core: attach needs a sid, a principal and a conn")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.sessions[sid]; dup {
		return nil, fmt.Errorf("core: session %q already attached", sid)
	}
	if !proto.Version.Known() {
		return nil, fmt.Errorf("core: attach: unknown protocol version %s", proto.Version)
	}
	s := &Session{hub: h, sid: sid, principal: p, conn: conn, proto: proto, front: front,
		attached: time.Now().UnixMilli()}
	h.sessions[sid] = s
	return s, nil
}

// ActAsAgent lets a stateless caller act as agent name in officeID until the
// returned session is closed: TakeSeat for one RPC call.
func (h *Hub) ActAsAgent(p *Principal, officeID, name string) (*Session, error) {
	return h.TakeSeat(context.Background(), p, officeID, name, Seat{Front: FrontRPC})
}

// Seat says how a stateless caller holds an office's agent seat.
type Seat struct {
	// Front is the front end it comes through (FrontRPC, FrontMCP,
	// FrontConsole), named to the agents the seat refuses.
	Front string
	// Protocol is the wire protocol within the front end ("connect",
	// "grpc", "grpcweb" for FrontRPC), told to the Guard.
	Protocol string
	// Lapses makes the seat a lease that lapses Config.SeatLease after its
	// last renewal (Session.Renew), so that a holder that vanished without
	// closing (an MCP client that crashed, a stream whose peer is gone)
	// frees the office; the holder renews it on each request and while a
	// stream is open. Without it, the seat is held until Close (one call).
	Lapses bool
}

// TakeSeat lets a stateless caller act as agent name in officeID until the
// returned session is closed (or its lease lapses, or an operator evicts it:
// see Session.Done). It is refused (403) when p does not allow the office,
// the agent role or the name, or when another agent holds the seat; the
// refusal names that holder (SeatRefusal). The caller does not join: no one
// is notified and it is not listed.
func (h *Hub) TakeSeat(ctx context.Context, p *Principal, officeID, name string, seat Seat) (*Session, error) {
	s, err := h.takeSeat(ctx, p, officeID, name, seat)
	if h.cfg.Events != nil && (err != nil || seat.Lapses) {
		h.event(Event{Kind: EventJoin, Principal: p, Front: seat.Front, Protocol: seat.Protocol, Office: officeID,
			Role: smcp.RoleAgent, Name: name, Err: err})
	}
	return s, err
}

func (h *Hub) takeSeat(ctx context.Context, p *Principal, officeID, name string, seat Seat) (*Session, error) {
	if err := p.CheckAgent(officeID, name); err != nil {
		return nil, err
	}
	s := &Session{hub: h, principal: p, lease: true, role: smcp.RoleAgent, name: name, front: seat.Front, wire: seat.Protocol,
		officeID: officeID, since: time.Now().UnixMilli()}
	if seat.Lapses {
		s.leaseMS = max(h.cfg.SeatLease.Milliseconds(), 1)
	}
	var seq [20]byte
	s.leaseID = h.leasePrefix + string(strconv.AppendUint(seq[:0], h.leaseSeq.Add(1), 10))
	m := s.memberLocked()
	h.mu.Lock()
	h.claimingLeases[s] = struct{}{}
	h.mu.Unlock()
	err := h.claim(ctx, m)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.claimingLeases, s)
	if err != nil {
		s.end(nil)
		return nil, err
	}
	s.renewed.Store(time.Now().UnixNano())
	o := h.officeLocked(officeID)
	if o.leases == nil {
		o.leases = map[*Session]struct{}{}
	}
	o.leases[s] = struct{}{}
	o.leaseName = name
	return s, nil
}

// ErrSeatEvicted is the cause of a lease's end (Session.Done) when an
// operator evicted it; the error says by whom and when.
var ErrSeatEvicted = errors.New("seat evicted by operator")

func evictedError(by string, at time.Time) error {
	if by == "" {
		return fmt.Errorf("%w at %s", ErrSeatEvicted, rfc3339(at))
	}
	return fmt.Errorf("%w %s at %s", ErrSeatEvicted, by, rfc3339(at))
}

// Done ends when an operator evicted the session's seat (a lease only),
// and when the session closes: its holder must stop acting as the agent;
// Cause says whether it was evicted.
func (s *Session) Done() <-chan struct{} {
	if !s.lease {
		return nil
	}
	s.endMu.Lock()
	defer s.endMu.Unlock()
	if s.endCh == nil {
		s.endCh = make(chan struct{})
		if s.ended {
			close(s.endCh)
		}
	}
	return s.endCh
}

// Cause is why Done ended (an error wrapping ErrSeatEvicted), nil before
// and when the lease ended by closing.
func (s *Session) Cause() error {
	if !s.lease {
		return nil
	}
	s.endMu.Lock()
	defer s.endMu.Unlock()
	return s.endCause
}

// end ends a lease (Done), evicted when cause is not nil; only the first
// end counts.
func (s *Session) end(cause error) {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.endCause = true, cause
	if s.endCh != nil {
		close(s.endCh)
	}
}

// Renew keeps a lapsing lease (Seat.Lapses): its holder calls it on each
// request and periodically while a stream is open. The registry is asked
// at most every quarter lease, so the seat lapses between 3/4 of the lease
// and the whole lease after the holder's last renewal. A lease that lapsed
// is taken again if the seat is free; if another agent took it, the
// refusal names it. An evicted lease is not taken again: Renew returns
// Cause.
func (s *Session) Renew(ctx context.Context) error {
	if !s.lease || s.leaseMS == 0 {
		return nil
	}
	if err := s.Cause(); err != nil {
		return smcp.Errorf(smcp.CodeForbidden, "%v", err)
	}
	lease := time.Duration(s.leaseMS) * time.Millisecond
	if time.Since(time.Unix(0, s.renewed.Load())) < lease/4 {
		return nil
	}
	h := s.hub
	h.mu.Lock()
	closed, m := s.closed, s.memberLocked()
	h.mu.Unlock()
	if closed {
		return smcp.Errorf(smcp.CodeForbidden, "session closed")
	}
	// Not h.claim: a renewal cut short must not release the seat it holds.
	if err := h.cfg.Registry.Claim(ctx, m); err != nil {
		if _, ok := smcp.AsError(err); ok {
			return err
		}
		h.logRegistry("registry renew", err, "office", m.OfficeID, "name", m.Name)
		return smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	}
	s.renewed.Store(time.Now().UnixNano())
	return nil
}

// lapsedLocked reports whether a lapsing lease went unrenewed for its whole
// lease: the registry no longer counts it.
func (s *Session) lapsedLocked() bool {
	return s.leaseMS > 0 && time.Since(time.Unix(0, s.renewed.Load())) >= time.Duration(s.leaseMS)*time.Millisecond
}

// SID is the session id given to Attach ("" for ActAsAgent sessions).
func (s *Session) SID() string { return s.sid }

// Principal is the authenticated caller.
func (s *Session) Principal() *Principal { return s.principal }

// Info returns the session's role, name and office ("" before a join).
func (s *Session) Info() *smcpv1.SessionInfo {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.infoLocked()
}

func (s *Session) infoLocked() *smcpv1.SessionInfo {
	return s.memberLocked().info()
}

// Protocol is what the session speaks (the zero Protocol for a one-call
// agent, which acts in the version of the office).
func (s *Session) Protocol() Protocol { return s.proto }

// Join is JoinContext without a caller's context: the registry's own
// timeout bounds it.
func (s *Session) Join(req *smcpv1.EnterOfficeReq) error {
	return s.JoinContext(context.Background(), req)
}

// JoinContext enters an office (server:join_office). Errors are *smcp.Error
// whose message is the reason for the [false, reason] ack. It waits for the
// registry (in a cluster, Redis) and gives up when ctx ends.
func (s *Session) JoinContext(ctx context.Context, req *smcpv1.EnterOfficeReq) error {
	err := s.join(ctx, req)
	if h := s.hub; err != nil && h.cfg.Events != nil {
		h.event(Event{Kind: EventJoin, Principal: s.principal, Front: s.front, Office: req.GetOfficeId(),
			Role: req.GetRole(), Name: req.GetName(), Err: err})
	}
	return err
}

// join is JoinContext, which records its refusals; a join done is
// recorded here, a re-join (a no-op) is not.
func (s *Session) join(ctx context.Context, req *smcpv1.EnterOfficeReq) error {
	role, name, officeID := req.GetRole(), req.GetName(), req.GetOfficeId()
	switch {
	case role != smcp.RoleAgent && role != smcp.RoleComputer:
		return smcp.Errorf(smcp.CodeBadRequest, "unknown role %q", role)
	case strings.TrimSpace(name) == "":
		return smcp.Errorf(smcp.CodeBadRequest, "name is required")
	case strings.TrimSpace(officeID) == "":
		return smcp.Errorf(smcp.CodeBadRequest, "office_id is required")
	case s.lease:
		return smcp.Errorf(smcp.CodeForbidden, "a one-call agent cannot join")
	}
	if err := s.principal.check(role, name, officeID); err != nil {
		return err
	}
	h := s.hub
	h.mu.Lock()
	if err := s.joinableLocked(role, name, officeID); err != nil || s.officeID == officeID {
		h.mu.Unlock()
		return err // nil: re-join is a no-op, no notification
	}
	var released []Member
	defer func() { h.release(released) }() // after the unlock below
	defer h.mu.Unlock()
	// The registry decides (atomically across nodes in a cluster); the
	// hub's lock is not held over the network.
	m := Member{OfficeID: officeID, Role: role, Name: name, SID: s.sid, Node: h.cfg.Node,
		Version: s.proto.Version.String(), Announced: s.proto.Announced}
	var since int64
	if role == smcp.RoleAgent {
		since = time.Now().UnixMilli()
		m.Front, m.Since = FrontSocketIO, since
	}
	h.claimingLocked(m, 1)
	h.mu.Unlock()
	err := h.claim(ctx, m)
	h.mu.Lock()
	h.claimingLocked(m, -1)
	if err != nil {
		return err
	}
	if err := s.joinableLocked(role, name, officeID); err != nil || s.officeID == officeID {
		released = append(released, m)
		if err == nil {
			err = smcp.Errorf(smcp.CodeForbidden, "concurrent join of office %q", officeID)
		}
		return err
	}
	o := h.officeLocked(officeID)
	if s.officeID != "" {
		released = append(released, s.leaveLocked()...) // a computer moves: its old office is told
	}
	s.role, s.name, s.officeID, s.since = role, name, officeID, since
	s.membership = &goneWatch{settling: &h.settling}
	if role == smcp.RoleAgent {
		o.agent = s
	} else {
		if o.computers == nil {
			o.computers = map[string]*Session{}
		}
		o.computers[name] = s
	}
	n := &smcpv1.EnterOfficeNotification{OfficeId: officeID}
	if role == smcp.RoleAgent {
		n.Agent = &name
	} else {
		n.Computer = &name
	}
	h.notifyLocked(o, s, smcp.NotifyEnterOffice, n)
	h.log.Info("joined office", "sid", s.sid, "role", role, "name", name, "office", officeID, "key", s.principal.ID)
	h.event(Event{Kind: EventJoin, Principal: s.principal, Front: s.front, Office: officeID, Role: role, Name: name})
	return nil
}

// joinableLocked applies the join rules that depend on the session alone.
func (s *Session) joinableLocked(role, name, officeID string) error {
	switch {
	case s.closed:
		return smcp.Errorf(smcp.CodeForbidden, "session closed")
	case s.role != "" && s.role != role:
		return smcp.Errorf(smcp.CodeForbidden, "role mismatch: this session is a %s", s.role)
	case s.name != "" && s.name != name:
		return smcp.Errorf(smcp.CodeForbidden, "name mismatch: this session is %q", s.name)
	case role == smcp.RoleAgent && s.officeID != "" && s.officeID != officeID:
		if s.proto.Version.SeatPerRole() {
			return smcp.Errorf(smcp.CodeAlreadyInOffice, "Agent already in another room")
		}
		return smcp.Errorf(smcp.CodeForbidden, "agent already in office %q: leave it first", s.officeID)
	}
	return nil
}

// Leave leaves the caller's office (server:leave_office).
func (s *Session) Leave(officeID string) error {
	h := s.hub
	h.mu.Lock()
	if s.lease {
		h.mu.Unlock()
		return smcp.Errorf(smcp.CodeForbidden, "a one-call agent cannot leave")
	}
	if s.officeID == "" || s.officeID != officeID {
		err := s.notInLocked(officeID, "not in office %q")
		h.mu.Unlock()
		return err
	}
	released := s.leaveLocked()
	h.mu.Unlock()
	h.release(released)
	return nil
}

// Close ends the session: it leaves its office (the office is told) and every
// request in flight to it is answered at once. Close is idempotent.
func (s *Session) Close() {
	h := s.hub
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return
	}
	s.closed = true
	var one [1]Member // a lease's one slot, without a slice per call
	released := one[:0]
	if s.lease {
		o := h.offices[s.officeID]
		delete(o.leases, s)
		if len(o.leases) == 0 {
			o.leaseName = ""
		}
		s.endMember()
		if s.leaseMS > 0 && h.cfg.Events != nil && s.Cause() == nil { // an evicted seat's record is its eviction
			h.event(Event{Kind: EventLeave, Principal: s.principal, Front: s.front, Protocol: s.wire, Office: s.officeID,
				Role: smcp.RoleAgent, Name: s.name})
		}
		s.end(nil)
		h.gcLocked(o)
		released = append(released, s.memberLocked())
	} else {
		delete(h.sessions, s.sid)
		if s.officeID != "" {
			released = s.leaveLocked()
		}
	}
	h.mu.Unlock()
	h.release(released)
	s.abandonCalls()
}

// leaveLocked removes s from its office, telling the others first. It
// returns the registry slot to release once the lock is released.
func (s *Session) leaveLocked() []Member {
	h := s.hub
	released := []Member{s.memberLocked()}
	o := h.offices[s.officeID]
	n := &smcpv1.LeaveOfficeNotification{OfficeId: s.officeID}
	name := s.name
	if s.role == smcp.RoleAgent {
		n.Agent = &name
		o.agent = nil
	} else {
		n.Computer = &name
		delete(o.computers, s.name)
	}
	h.notifyLocked(o, s, smcp.NotifyLeaveOffice, n)
	h.log.Info("left office", "sid", s.sid, "role", s.role, "name", s.name, "office", s.officeID)
	h.event(Event{Kind: EventLeave, Principal: s.principal, Front: s.front, Office: s.officeID, Role: s.role, Name: s.name})
	s.officeID = ""
	s.endMember()
	h.gcLocked(o)
	h.dropSignIns(s)
	return released
}

// notInLocked refuses a leave or a listing of officeID by a session that is
// not in it: 403 with the message format older before 0.5; from 0.5, 4103
// when it is in no office, 4104 when it names another (PROTOCOL-0.5.md
// row 2).
func (s *Session) notInLocked(officeID, older string) error {
	switch {
	case !s.proto.Version.SeatPerRole():
		return smcp.Errorf(smcp.CodeForbidden, older, officeID)
	case s.officeID == "" || s.closed:
		return smcp.Errorf(smcp.CodeNotInOffice, "Not in any room")
	}
	return smcp.Errorf(smcp.CodeCrossOffice, "Not a member of office %q", officeID)
}

// ListRoom is ListRoomContext without a caller's context: the registry's
// own timeout bounds it.
func (s *Session) ListRoom(officeID string) ([]*smcpv1.SessionInfo, error) {
	return s.ListRoomContext(context.Background(), officeID)
}

// ListRoomContext lists the members of officeID (server:list_room); only a
// member may. It reads the registry (in a cluster, Redis) and gives up when
// ctx ends.
func (s *Session) ListRoomContext(ctx context.Context, officeID string) ([]*smcpv1.SessionInfo, error) {
	h := s.hub
	h.mu.Lock()
	if officeID == "" && s.proto.Version.SeatPerRole() {
		officeID = s.officeID // 0.5: a listing that names no office is of the caller's
	}
	member := s.officeID != "" && s.officeID == officeID && !s.closed
	var err error
	if !member {
		err = s.notInLocked(officeID, "not a member of office %q")
	}
	h.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return h.listMembers(ctx, officeID)
}

// Update handles server:update_config / update_tool_list / update_desktop /
// update_finder: from a computer in an office, it tells the rest of the office
// with the sender's own name. From anyone else it is refused (front ends
// ignore it, as the protocol says).
func (s *Session) Update(event string) error {
	info, ok := smcp.Event(event)
	if !ok || info.Kind != smcp.Server || info.Notifies == "" || event == smcp.EventToolCallCancel {
		return smcp.Errorf(smcp.CodeBadRequest, "unknown update event %q", event)
	}
	notify := info.Notifies
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.role != smcp.RoleComputer || s.officeID == "" || s.closed {
		return smcp.Errorf(smcp.CodeForbidden, "only a computer in an office may send %s", event)
	}
	h.notifyLocked(h.offices[s.officeID], s, notify, &smcpv1.UpdateComputerConfigReq{Computer: s.name})
	return nil
}

// CancelToolCall handles server:tool_call_cancel: from the office's agent with
// its own name (from 0.5, whatever name it gives), it tells the rest of the
// office under the agent's name.
func (s *Session) CancelToolCall(req *smcpv1.AgentCallData) error {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case s.role != smcp.RoleAgent || s.officeID == "" || s.closed:
		return smcp.Errorf(smcp.CodeNotInOffice, "only an agent in an office may cancel")
	case req.GetAgent() != s.name && !s.proto.Version.SenderNamesItself():
		return smcp.Errorf(smcp.CodeForbidden, "agent %q is not the caller", req.GetAgent())
	case req.GetReqId() == "":
		return smcp.Errorf(smcp.CodeBadRequest, "req_id is required")
	}
	cancel, _ := smcp.Event(smcp.EventToolCallCancel)
	h.notifyLocked(h.offices[s.officeID], s, cancel.Notifies,
		&smcpv1.AgentCallData{Agent: s.name, ReqId: req.GetReqId()})
	return nil
}

func (h *Hub) officeLocked(id string) *office {
	o := h.offices[id]
	if o == nil {
		o = &office{id: id}
		h.offices[id] = o
	}
	return o
}

func (h *Hub) gcLocked(o *office) {
	if o.empty() {
		delete(h.offices, o.id)
		if h.cfg.Guard != nil {
			h.tools.forgetOffice(o.id)
		}
	}
}

// notifyLocked tells every member of o but except, and every watcher.
func (h *Hub) notifyLocked(o *office, except *Session, event string, payload proto.Message) {
	wire, err := smcp.ToWire(payload)
	if err != nil {
		h.log.Error("encode notification", "event", event, "err", err)
		return
	}
	n := Notification{Event: event, OfficeID: o.id, Payload: payload, Wire: wire}
	h.deliverLocked(o, except.sid, n)
	h.peers.Publish(n, except.sid)
}

// deliverLocked hands n to every member of o on this node but except, and to
// every watcher.
func (h *Hub) deliverLocked(o *office, exceptSID string, n Notification) {
	h.toolsChanged(n)
	if o.agent != nil && o.agent.sid != exceptSID {
		o.agent.conn.Notify(n)
	}
	for _, c := range o.computers {
		if c.sid != exceptSID {
			c.conn.Notify(n)
		}
	}
	for w := range o.watchers {
		select {
		case w.ch <- n:
		default:
			// A watcher that falls behind is dropped rather than slowing the office.
			w.err = ErrWatchOverflow
			delete(o.watchers, w)
			close(w.ch)
		}
	}
}
