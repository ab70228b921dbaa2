package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// CodeTooManyPending answers a request to a computer that already has
// Config.MaxPending requests awaiting its answer.
const CodeTooManyPending = 429

// ErrComputerGone is matched (errors.Is) by the error of a request whose
// computer left or disconnected before answering. It is also an *smcp.Error
// (404) for the wire.
var ErrComputerGone = errors.New("core: computer left before answering")

// BadAnswerError is what a Conn reports when the computer answered with
// something that cannot be relayed (not JSON, a number beyond float64, a
// binary attachment). Only that call fails: the computer stays joined.
type BadAnswerError struct{ Reason string }

func (e *BadAnswerError) Error() string { return "core: bad answer: " + e.Reason }

// RefusedError is what a Conn reports for a request it did not send (a
// bound of its transport, such as the bytes queued toward a computer that
// stopped reading): the caller gets Wire as the answer, unchanged, and the
// computer stays joined.
type RefusedError struct{ Wire *smcp.Error }

func (e *RefusedError) Error() string { return "core: request refused: " + e.Wire.Error() }
func (e *RefusedError) Unwrap() error { return e.Wire }

type goneError struct{ wire *smcp.Error }

func (e goneError) Error() string   { return e.wire.Error() }
func (e goneError) Unwrap() []error { return []error{e.wire, ErrComputerGone} }

func computerGone(computer string) error {
	return goneError{smcp.ComputerGoneError(computer)}
}

// Request is a validated client: event. Payload is what the agent sent and is
// forwarded unchanged.
type Request struct {
	Event    string
	Agent    string
	ReqID    string
	Computer string
	// Timeout is the tool call's own timeout in seconds (tool_call only).
	Timeout int32
	Payload json.RawMessage
	info    *smcp.EventInfo
	// GoneAsError makes Route answer a client:tool_call whose computer left
	// with ErrComputerGone instead of GoneResult, for front ends (RPC) that
	// report a computer gone as an error rather than a tool result.
	GoneAsError bool
	// TraceID is the trace the request belongs to, for the Guard (an
	// audit record), when its front end traces it and calls Go or TryGo,
	// whose context carries no span; with a context (Route, GoContext)
	// the guard may read the span from it instead.
	TraceID string
	// Received is when the front end took the request, when it read the
	// clock for it anyway (its metrics): the start of the guard's record
	// and of the call's duration. Zero: the core reads the clock.
	Received time.Time
	// unguarded: the core's own request (Session.listTools), not the
	// agent's, so not the guard's to admit.
	unguarded bool
	// toolName and params are a tool call's, raw, when ParseRequest read
	// them (smcp.RoutedFields), so that the guard's admission does not
	// walk the payload again.
	toolName, params json.RawMessage
}

// RequestMessage is what every client: request message has.
type RequestMessage interface {
	proto.Message
	GetAgent() string
	GetReqId() string
	GetComputer() string
}

// ParseRequest checks the payload of a client: event as the protocol table
// declares (smcp.EventInfo.Check): a JSON object whose routing fields have
// their types and bounds. Only those fields are read; Payload keeps the
// bytes as they came. Errors are 400s.
func ParseRequest(event string, payload []byte) (*Request, error) {
	info, ok := smcp.Event(event)
	if !ok || info.Kind != smcp.Routed {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "unknown event %q", event)
	}
	f, err := info.Check(payload)
	if err != nil {
		return nil, err
	}
	return &Request{Event: event, info: info, Agent: f.Agent, ReqID: f.ReqID, Computer: f.Computer,
		Timeout: f.Timeout, Payload: payload, toolName: f.ToolName, params: f.Params}, nil
}

// NewToolCallRequest is the Request ParseRequest(smcp.EventToolCall,
// payload) returns, made from the fields payload was written from rather
// than by reading payload back (a scan and a string per field, per call).
// payload must be the JSON of a ToolCallReq with these fields and params a
// JSON object (or absent), as a front end that writes it knows; fields
// ParseRequest would refuse (an empty name, a timeout out of range) take
// ParseRequest, for its refusal.
func NewToolCallRequest(agent, reqID, computer, tool string, timeout int32, payload json.RawMessage) (*Request, error) {
	info, ok := smcp.Event(smcp.EventToolCall)
	if !ok || agent == "" || reqID == "" || computer == "" || tool == "" ||
		timeout < smcp.MinToolCallTimeout || timeout > smcp.MaxToolCallTimeout {
		return ParseRequest(smcp.EventToolCall, payload)
	}
	return &Request{Event: smcp.EventToolCall, info: info, Agent: agent, ReqID: reqID, Computer: computer,
		Timeout: timeout, Payload: payload}, nil
}

// Deadline is how long the gateway waits for the computer's answer to r.
func (h *Hub) Deadline(r *Request) time.Duration {
	if r.eventInfo().Deadline == smcp.ToolCallDeadline {
		return time.Duration(r.Timeout)*time.Second + h.cfg.ToolCallMargin
	}
	return h.cfg.RequestTimeout
}

// eventInfo is r's entry in the protocol table (Requests built by hand in
// tests have none yet).
func (r *Request) eventInfo() *smcp.EventInfo {
	if r.info != nil {
		return r.info
	}
	if info, ok := smcp.Event(r.Event); ok {
		return info
	}
	return &smcp.EventInfo{Name: r.Event}
}

// resolve applies the caller checks and finds the target computer: a
// session of this node, or (in a cluster) a member of another node. o is the
// caller's office on this node.
func (s *Session) resolve(ctx context.Context, r *Request) (c *Session, o *office, remote *Member, err error) {
	h := s.hub
	c, o, remote, gen, err := s.resolveLocal(r)
	switch {
	case err != nil:
		return nil, nil, nil, err
	case c != nil:
		if err := eventIn(r, c.proto.Version); err != nil {
			return nil, nil, nil, err
		}
		return c, o, nil, nil
	case remote != nil:
		return s.resolved(r, o, remote)
	case !h.clustered:
		// One node: a computer that is not in the hub is nowhere.
		return nil, nil, nil, errNoComputer()
	}
	// Not a session of this hub and not located yet: the registry knows
	// whether it is a computer of another node.
	m, ok, err := h.cfg.Registry.Computer(ctx, o.id, r.Computer)
	switch {
	case err != nil:
		h.logRegistry("registry lookup", err, "office", o.id, "computer", r.Computer)
		return nil, nil, nil, smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	case !ok || m.Node == h.cfg.Node:
		// A computer of this node that is not in the hub has just left.
		return nil, nil, nil, errNoComputer()
	}
	h.mu.Lock()
	h.locateLocked(gen, m)
	h.mu.Unlock()
	return s.resolved(r, o, &m)
}

// resolved checks r against remote's version.
func (s *Session) resolved(r *Request, o *office, remote *Member) (*Session, *office, *Member, error) {
	if v, ok := smcp.LookupProfile(remote.Version); ok {
		if err := eventIn(r, v); err != nil {
			return nil, nil, nil, err
		}
	}
	return nil, o, remote, nil
}

// eventIn refuses an event that the computer's version does not have, as
// PROTOCOL-0.4.md §4 G5 answers one: a connection of that version never
// sends it (its front end refuses it first), but a one-call agent acts in
// whatever version the office speaks.
func eventIn(r *Request, v smcp.Version) error {
	if info := r.eventInfo(); info.Spans != nil && !info.In(v) {
		return smcp.Errorf(smcp.CodeNotFound, "unknown event %s: office speaks %s", r.Event, v)
	}
	return nil
}

func errNoComputer() error {
	return smcp.Errorf(smcp.CodeNotFound, "computer not found in this office")
}

// resolveLocal is resolve on this node: c is the computer when it is a
// session of this node, remote where it is when another node's computer
// was located before; both are nil (and err too) when only the registry
// can tell. gen is the hub's locGen, for recording what the registry says.
func (s *Session) resolveLocal(r *Request) (c *Session, o *office, remote *Member, gen uint64, err error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case s.role == smcp.RoleComputer:
		return nil, nil, nil, 0, smcp.Errorf(smcp.CodeForbidden, "%s: only agents may call computers", r.Event)
	case s.role != smcp.RoleAgent || s.officeID == "" || s.closed:
		return nil, nil, nil, 0, smcp.Errorf(smcp.CodeNotInOffice, "%s: join an office first", r.Event)
	case r.Agent != s.name:
		return nil, nil, nil, 0, smcp.Errorf(smcp.CodeForbidden, "%s: agent %q is not the caller", r.Event, r.Agent)
	}
	o = h.offices[s.officeID]
	if c = o.computers[r.Computer]; c == nil {
		if m, ok := o.located[r.Computer]; ok {
			remote = &m
		}
	}
	return c, o, remote, h.locGen, nil
}

type answer struct {
	raw json.RawMessage
	err error
}

// Route sends a validated request to its computer and returns the computer's
// answer unchanged. For client:tool_call, once routed, a timeout or a computer
// gone is answered with a gateway-made CallToolResult (err nil); for the other
// events they are *smcp.Error 408 and ErrComputerGone. Before routing, errors
// are *smcp.Error (4103, 403, 404, 429). When ctx ends first, ctx.Err() is
// returned and the request is abandoned: its slots are freed and a late
// answer is ignored.
func (s *Session) Route(ctx context.Context, r *Request) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	p := s.goContext(ctx, r, func(raw json.RawMessage, err error) { ch <- answer{raw, err} })
	select {
	case a := <-ch:
		return a.raw, a.err
	case <-ctx.Done():
		if p != nil {
			p.abandon(ctx.Err())
		}
		return nil, ctx.Err()
	}
}

// Go is Route without a goroutine to wait in: it returns at once and done
// gets what Route would return, exactly once, from whichever goroutine
// settles the request first (the computer's answer, the deadline's timer, the
// computer leaving, or abandon). done must not block. A front end that can
// answer from a callback (Socket.IO acks) saves a goroutine, its stack growth
// and a channel per call: measured as ~11% of the gateway's CPU under load.
// abandon(err) gives the request up (done gets err): its slots are freed and
// the computer's answer, if it comes, is ignored; after the request is
// settled it does nothing.
func (s *Session) Go(r *Request, done func(json.RawMessage, error)) (abandon func(error)) {
	return s.GoContext(context.Background(), r, done)
}

// GoContext is Go whose wait for the registry, to find a computer of another
// node in a cluster, ends with ctx. ctx bounds only that wait: once routed,
// the call is settled as Go says. With a Config.Guard it may also wait for
// the guard (Guard.Admit) and, for a tool call before any listing of its
// computer, for the computer's tool list, both bounded by ctx.
func (s *Session) GoContext(ctx context.Context, r *Request, done func(json.RawMessage, error)) (abandon func(error)) {
	if p := s.goContext(ctx, r, done); p != nil {
		return p.abandon
	}
	return noAbandon
}

// goContext is GoContext returning the call in flight, or nil when done was
// called at once (Route abandons the call itself: no abandon func to make).
func (s *Session) goContext(ctx context.Context, r *Request, done func(json.RawMessage, error)) *pendingCall {
	c, o, remote, err := s.resolve(ctx, r)
	if err == nil && s.guarded(r) {
		guarded, _, gerr := s.admit(ctx, r, o.id, true, done)
		if gerr != nil {
			err = gerr
		} else {
			done = guarded
		}
	}
	return s.goTo(r, c, o, remote, err, done)
}

// guarded reports whether r is for Config.Guard to admit.
func (s *Session) guarded(r *Request) bool { return s.hub.cfg.Guard != nil && !r.unguarded }

// TryGo is Go when it need not wait, and without abandon: false, and
// nothing is done, when the computer is not a session of this node and only
// the registry (in a cluster, a network round trip) can tell where it is.
// The caller then calls Go where waiting harms no one. A front end handling
// a connection's packets on one goroutine calls TryGo there: a call to a
// computer of this node, the hot path, costs what Go costs. Its call is
// settled as Go says, or when the caller's session closes.
func (s *Session) TryGo(r *Request, done func(json.RawMessage, error)) bool {
	guarded := s.guarded(r)
	if guarded && s.hub.clustered {
		return false // the guard may wait on the cluster (see Guard.Admit)
	}
	c, o, remote, _, err := s.resolveLocal(r)
	switch {
	case err != nil, c != nil:
	case remote != nil:
		c, o, remote, err = s.resolved(r, o, remote)
	case s.hub.clustered:
		return false // only the registry knows where it is: a wait
	default:
		err = errNoComputer()
	}
	if err == nil && guarded {
		admitted, ok, gerr := s.admit(context.Background(), r, o.id, false, done)
		switch {
		case !ok:
			return false // the guard needs the computer's tools: a wait
		case gerr != nil:
			err = gerr
		default:
			done = admitted
		}
	}
	s.goTo(r, c, o, remote, err, done)
	return true
}

// goTo routes r to c, a computer of this node, or to remote; err, when not
// nil, is the answer. It returns the call in flight, or nil when done was
// called at once.
func (s *Session) goTo(r *Request, c *Session, o *office, remote *Member, err error, done func(json.RawMessage, error)) *pendingCall {
	if err != nil {
		done(nil, err)
		return nil
	}
	h := s.hub
	if o.agentCalls.Add(1) > int64(h.cfg.MaxAgentInFlight) {
		o.agentCalls.Add(-1)
		done(nil, smcp.Errorf(CodeTooManyPending, "agent %q has too many requests in flight", s.name))
		return nil
	}
	if remote != nil {
		return s.goRemote(r, *remote, &o.agentCalls, done)
	}
	return s.dispatch(r, c.membership, &c.pending, &o.agentCalls, func(answered func(json.RawMessage, error)) func() {
		return c.conn.Request(r.Event, r.Payload, answered)
	}, done)
}

func noAbandon(error) {}

// dispatch sends r with send and settles it once: with the answer, at the
// deadline, when gone ends, or when abandoned. pending counts the computer's
// calls in flight and agentSlots the agent's: both are given back when the
// call settles, however it settles, so a computer that loses answers does
// not end up refusing every call (429). send returns how to tell the
// transport that the answer is no longer awaited (or nil). It returns the
// call in flight, or nil when done was called at once.
func (s *Session) dispatch(r *Request, gone *goneWatch, pending, agentSlots *atomic.Int64,
	send func(answered func(json.RawMessage, error)) (forget func()), done func(json.RawMessage, error)) *pendingCall {
	h := s.hub
	if pending.Add(1) > int64(h.cfg.MaxPending) {
		pending.Add(-1)
		agentSlots.Add(-1)
		done(nil, smcp.Errorf(CodeTooManyPending, "computer %q has too many requests in flight", r.Computer))
		return nil
	}
	p := &pendingCall{done: done, agentSlots: agentSlots, pending: pending, owner: s, req: r, gone: gone}
	p.mu.Lock()
	deadline := h.Deadline(r)
	p.timer = time.AfterFunc(deadline, func() {
		h.log.Info("computer did not answer in time", "event", r.Event, "computer", r.Computer, "req_id", r.ReqID)
		p.settle(false, s.failure(r, smcp.ComputerTimeoutError(r.Event, r.Computer, deadline)))
	})
	// Under p.mu: a settle that comes first (the timer) removes p after.
	watched := gone.add(p)
	p.mu.Unlock()
	if !watched {
		p.settle(false, s.goneAnswer(r))
		return nil
	}
	if !s.track(p) {
		p.settle(false, answer{err: errCallerGone})
		return nil
	}
	forget := send(func(raw json.RawMessage, err error) {
		if err == nil && len(raw) <= h.cfg.MaxAnswerBytes {
			p.settle(true, answer{raw: raw}) // a late or second answer is ignored
			return
		}
		s.answerRefused(p, r, raw, err)
	})
	p.setForget(forget)
	return p
}

// answerRefused settles p when its transport failed or its computer's
// answer cannot be relayed (kept apart from dispatch's callback, whose
// answers are almost always good).
func (s *Session) answerRefused(p *pendingCall, r *Request, raw json.RawMessage, err error) {
	h := s.hub
	var bad *BadAnswerError
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		e := *refused.Wire
		e.Message = fmt.Sprintf("computer %q: %s", r.Computer, e.Message)
		p.settle(true, answer{err: &e})
		return
	case errors.As(err, &bad):
	case err != nil:
		h.log.Warn("computer request failed", "event", r.Event, "computer", r.Computer, "err", err)
		p.settle(true, s.goneAnswer(r))
		return
	default:
		bad = &BadAnswerError{Reason: fmt.Sprintf("answer of %d bytes exceeds the limit of %d", len(raw), h.cfg.MaxAnswerBytes)}
	}
	h.log.Warn("computer answer not relayed", "event", r.Event, "computer", r.Computer, "req_id", r.ReqID, "reason", bad.Reason)
	p.settle(true, s.failure(r, smcp.BadAnswerError(r.Computer, bad.Reason)))
}

// errCallerGone settles the calls of a session that closed: nobody awaits
// their answers (front ends drop them), and their slots are freed at once
// rather than at their deadlines, up to an hour for a tool call.
var errCallerGone = errors.New("core: the caller is gone")

// track records a call of s in flight; false when s is closed.
func (s *Session) track(p *pendingCall) bool {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if s.callsClosed {
		return false
	}
	p.mu.Lock()
	settled := p.settled
	p.mu.Unlock()
	if settled {
		return true // already untracked, or never to be
	}
	if s.call == nil {
		s.call = p
		return true
	}
	if s.calls == nil {
		s.calls = map[*pendingCall]struct{}{}
	}
	s.calls[p] = struct{}{}
	return true
}

func (s *Session) untrack(p *pendingCall) {
	s.callsMu.Lock()
	if s.call == p {
		s.call = nil
	} else {
		delete(s.calls, p)
	}
	s.callsMu.Unlock()
}

// abandonCalls settles every call s has in flight, and every later one.
func (s *Session) abandonCalls() {
	s.callsMu.Lock()
	s.callsClosed = true
	call, calls := s.call, s.calls
	s.call, s.calls = nil, nil
	s.callsMu.Unlock()
	if call != nil {
		call.settle(false, answer{err: errCallerGone})
	}
	for p := range calls {
		p.settle(false, answer{err: errCallerGone})
	}
}

// pendingCall settles a request once and releases its timer, watch and slots.
type pendingCall struct {
	mu         sync.Mutex
	settled    bool
	answered   bool   // settled by the transport: nothing to forget
	forget     func() // tells the transport the answer is no longer awaited
	timer      *time.Timer
	req        *Request
	gone       *goneWatch    // the computer's membership
	owner      *Session      // the caller
	pending    *atomic.Int64 // the computer's calls in flight
	agentSlots *atomic.Int64 // the agent's calls in flight
	done       func(json.RawMessage, error)
}

// abandon gives the call up: done gets err, unless it was settled before.
func (p *pendingCall) abandon(err error) { p.settle(false, answer{err: err}) }

// setForget records the transport's forget, or calls it when the call was
// given up before send returned.
func (p *pendingCall) setForget(forget func()) {
	if forget == nil {
		return
	}
	p.mu.Lock()
	if p.settled {
		answered := p.answered
		p.mu.Unlock()
		if !answered {
			forget()
		}
		return
	}
	p.forget = forget
	p.mu.Unlock()
}

func (p *pendingCall) settle(answered bool, a answer) {
	p.mu.Lock()
	if p.settled {
		p.mu.Unlock()
		return
	}
	p.settled, p.answered = true, answered
	forget := p.forget
	p.mu.Unlock()
	p.timer.Stop()
	p.gone.remove(p)
	p.owner.untrack(p)
	p.pending.Add(-1)
	p.agentSlots.Add(-1)
	if !answered && forget != nil {
		forget()
	}
	p.done(a.raw, a.err)
}

// failure answers a routed call the gateway settles itself (timeout, a bad
// answer): for events with gateway results (client:tool_call) a
// CallToolResult, otherwise the flat error.
func (s *Session) failure(r *Request, e *smcp.Error) answer {
	if r.eventInfo().GatewayResults {
		return answer{raw: smcp.GatewayResult(e)}
	}
	return answer{err: e}
}

func (s *Session) goneAnswer(r *Request) answer {
	if r.eventInfo().GatewayResults && !r.GoneAsError {
		return answer{raw: smcp.GatewayResult(smcp.ComputerGoneError(r.Computer))}
	}
	return answer{err: computerGone(r.Computer)}
}

// CallTool routes client:tool_call. Tool failures, timeouts and a computer
// gone are results with is_error set; errors are for refusals before routing,
// a computer answering with a protocol error, or ctx ending.
func (s *Session) CallTool(ctx context.Context, req *smcpv1.ToolCallReq) (*smcpv1.CallToolResult, error) {
	return call(ctx, s, smcp.EventToolCall, req, &smcpv1.CallToolResult{})
}

// GetTools routes client:get_tools.
func (s *Session) GetTools(ctx context.Context, req *smcpv1.GetToolsReq) (*smcpv1.GetToolsRet, error) {
	return call(ctx, s, smcp.EventGetTools, req, &smcpv1.GetToolsRet{})
}

// GetConfig routes client:get_config.
func (s *Session) GetConfig(ctx context.Context, req *smcpv1.GetComputerConfigReq) (*smcpv1.GetComputerConfigRet, error) {
	return call(ctx, s, smcp.EventGetConfig, req, &smcpv1.GetComputerConfigRet{})
}

// GetDesktop routes client:get_desktop.
func (s *Session) GetDesktop(ctx context.Context, req *smcpv1.GetDeskTopReq) (*smcpv1.GetDeskTopRet, error) {
	return call(ctx, s, smcp.EventGetDesktop, req, &smcpv1.GetDeskTopRet{})
}

// GetFinder routes client:get_finder.
func (s *Session) GetFinder(ctx context.Context, req *smcpv1.GetFinderReq) (*smcpv1.GetFinderRet, error) {
	return call(ctx, s, smcp.EventGetFinder, req, &smcpv1.GetFinderRet{})
}

// ReadResource routes client:read_resource.
func (s *Session) ReadResource(ctx context.Context, req *smcpv1.ReadResourceReq) (*smcpv1.ReadResourceRet, error) {
	return call(ctx, s, smcp.EventReadResource, req, &smcpv1.ReadResourceRet{})
}

func call[T proto.Message](ctx context.Context, s *Session, event string, req RequestMessage, out T) (T, error) {
	var zero T
	b, err := smcp.Marshal(req)
	if err != nil {
		return zero, smcp.Errorf(smcp.CodeBadRequest, "%s: %v", event, err)
	}
	r, err := ParseRequest(event, b)
	if err != nil {
		return zero, err
	}
	raw, err := s.Route(ctx, r)
	if err != nil {
		return zero, err
	}
	if err := smcp.DecodeAnswer(raw, out); err != nil {
		return zero, err
	}
	return out, nil
}

// goneWatch settles the calls in flight to one computer as gone (see
// Session.goneAnswer) when it is known to have left: one membership of a
// session of this node, or a computer of another node. Its set replaces a
// context.AfterFunc per call (three allocations) with a map entry.
type goneWatch struct {
	settling *sync.WaitGroup // the hub's
	mu       sync.Mutex
	ended    bool
	calls    map[*pendingCall]struct{}
}

// add watches p; false when the computer left already.
func (w *goneWatch) add(p *pendingCall) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if w.calls == nil {
		w.calls = map[*pendingCall]struct{}{}
	}
	w.calls[p] = struct{}{}
	return true
}

func (w *goneWatch) remove(p *pendingCall) {
	w.mu.Lock()
	delete(w.calls, p)
	w.mu.Unlock()
}

// end settles every call watched, and every later one, as gone. The calls
// are settled on a goroutine of their own: end is called with the hub's
// lock held, which the callers' done functions may take.
func (w *goneWatch) end() {
	w.mu.Lock()
	calls := w.calls
	w.ended, w.calls = true, nil
	w.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	w.settling.Go(func() {
		for p := range calls {
			p.settle(false, p.owner.goneAnswer(p.req))
		}
	})
}
