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

type goneError struct{ wire *smcp.Error }

func (e goneError) Error() string   { return e.wire.Error() }
func (e goneError) Unwrap() []error { return []error{e.wire, ErrComputerGone} }

func computerGone(computer string) error {
	return goneError{smcp.Errorf(smcp.CodeNotFound, "computer %q left the office before answering", computer)}
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
		Timeout: f.Timeout, Payload: payload}, nil
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
func (s *Session) resolve(r *Request) (c *Session, o *office, remote *Member, err error) {
	h := s.hub
	c, o, err = s.resolveLocal(r)
	if err != nil || c != nil || h.cfg.Registry == nil {
		return c, o, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	m, ok, err := h.cfg.Registry.Computer(ctx, o.id, r.Computer)
	switch {
	case err != nil:
		h.log.Error("registry lookup", "office", o.id, "computer", r.Computer, "err", err)
		return nil, nil, nil, smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	case !ok || m.Node == h.cfg.Node:
		// A computer of this node that is not in the hub has just left.
		return nil, nil, nil, smcp.Errorf(smcp.CodeNotFound, "computer not found in this office")
	}
	return nil, o, &m, nil
}

// resolveLocal is resolve on this node: c is nil (and err too) when the
// computer may be on another node.
func (s *Session) resolveLocal(r *Request) (*Session, *office, error) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case s.role == smcp.RoleComputer:
		return nil, nil, smcp.Errorf(smcp.CodeForbidden, "%s: only agents may call computers", r.Event)
	case s.role != smcp.RoleAgent || s.officeID == "" || s.closed:
		return nil, nil, smcp.Errorf(smcp.CodeNotInOffice, "%s: join an office first", r.Event)
	case r.Agent != s.name:
		return nil, nil, smcp.Errorf(smcp.CodeForbidden, "%s: agent %q is not the caller", r.Event, r.Agent)
	}
	o := h.offices[s.officeID]
	c := o.computers[r.Computer]
	if c == nil && h.cfg.Registry == nil {
		return nil, nil, smcp.Errorf(smcp.CodeNotFound, "computer not found in this office")
	}
	return c, o, nil
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
// returned and the answer is dropped.
func (s *Session) Route(ctx context.Context, r *Request) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	s.Go(r, func(raw json.RawMessage, err error) { ch <- answer{raw, err} })
	select {
	case a := <-ch:
		return a.raw, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Go is Route without a goroutine to wait in: it returns at once and done
// gets what Route would return, exactly once, from whichever goroutine
// settles the request first (the computer's answer, the deadline's timer or
// the computer leaving). done must not block. A front end that can answer
// from a callback (Socket.IO acks) saves a goroutine, its stack growth and a
// channel per call: measured as ~11% of the gateway's CPU under load.
func (s *Session) Go(r *Request, done func(json.RawMessage, error)) {
	c, o, remote, err := s.resolve(r)
	if err != nil {
		done(nil, err)
		return
	}
	h := s.hub
	if o.agentCalls.Add(1) > int64(h.cfg.MaxAgentInFlight) {
		o.agentCalls.Add(-1)
		done(nil, smcp.Errorf(CodeTooManyPending, "agent %q has too many requests in flight", s.name))
		return
	}
	release := func() { o.agentCalls.Add(-1) }
	if remote != nil {
		s.goRemote(r, *remote, release, done)
		return
	}
	s.dispatch(r, c.membership, &c.pending, release, func(answered func(json.RawMessage, error)) {
		c.conn.Request(r.Event, r.Payload, answered)
	}, done)
}

// dispatch sends r with send and settles it once: with the answer, at the
// deadline, or when gone ends. pending counts the computer's calls in
// flight; release frees the agent's in-flight slot.
func (s *Session) dispatch(r *Request, gone context.Context, pending *atomic.Int64, release func(),
	send func(answered func(json.RawMessage, error)), done func(json.RawMessage, error)) {
	h := s.hub
	if pending.Add(1) > int64(h.cfg.MaxPending) {
		pending.Add(-1)
		release()
		done(nil, smcp.Errorf(CodeTooManyPending, "computer %q has too many requests in flight", r.Computer))
		return
	}
	p := &pendingCall{done: done, release: release}
	p.mu.Lock()
	deadline := h.Deadline(r)
	p.timer = time.AfterFunc(deadline, func() {
		h.log.Info("computer did not answer in time", "event", r.Event, "computer", r.Computer, "req_id", r.ReqID)
		if r.Event == smcp.EventToolCall {
			p.settle(TimeoutResult(), nil)
			return
		}
		p.settle(nil, smcp.Errorf(smcp.CodeTimeout, "%s: computer %q did not answer in %s", r.Event, r.Computer, deadline))
	})
	p.stopGone = context.AfterFunc(gone, func() { p.settle(s.goneAnswer(r)) })
	p.mu.Unlock()
	send(func(raw json.RawMessage, err error) {
		pending.Add(-1)
		var bad *BadAnswerError
		switch {
		case errors.As(err, &bad):
		case err != nil:
			h.log.Warn("computer request failed", "event", r.Event, "computer", r.Computer, "err", err)
			p.settle(s.goneAnswer(r))
			return
		case len(raw) > h.cfg.MaxAnswerBytes:
			bad = &BadAnswerError{Reason: fmt.Sprintf("answer of %d bytes exceeds the limit of %d", len(raw), h.cfg.MaxAnswerBytes)}
		}
		if bad != nil {
			h.log.Warn("computer answer not relayed", "event", r.Event, "computer", r.Computer, "req_id", r.ReqID, "reason", bad.Reason)
			p.settle(s.failedAnswer(r, bad))
			return
		}
		p.settle(raw, nil) // a second call from a faulty Conn is ignored
	})
}

// pendingCall settles a request once and releases its timer and watch.
type pendingCall struct {
	mu       sync.Mutex
	settled  bool
	timer    *time.Timer
	stopGone func() bool
	release  func() // frees the agent's in-flight slot
	done     func(json.RawMessage, error)
}

func (p *pendingCall) settle(raw json.RawMessage, err error) {
	p.mu.Lock()
	if p.settled {
		p.mu.Unlock()
		return
	}
	p.settled = true
	p.mu.Unlock()
	p.timer.Stop()
	p.stopGone()
	p.release()
	p.done(raw, err)
}

// failedAnswer answers a call whose computer's answer cannot be relayed: a
// gateway-made CallToolResult for a tool call, a flat 500 otherwise.
func (s *Session) failedAnswer(r *Request, bad *BadAnswerError) (json.RawMessage, error) {
	e := smcp.Errorf(smcp.CodeInternal, "computer %q sent an answer the gateway cannot relay: %s", r.Computer, bad.Reason)
	if r.eventInfo().GatewayResults {
		return smcp.ToolErrorResultJSON(e), nil
	}
	return nil, e
}

func (s *Session) goneAnswer(r *Request) (json.RawMessage, error) {
	if r.Event == smcp.EventToolCall && !r.GoneAsError {
		return GoneResult(r.Computer), nil
	}
	return nil, computerGone(r.Computer)
}

// TimeoutResult is the CallToolResult of a tool call whose computer did not
// answer before timeout + margin.
func TimeoutResult() json.RawMessage {
	return json.RawMessage(`{"content":[{"type":"text","text":"Tool call timeout"}],"isError":true,"meta":{"a2c_timeout":true}}`)
}

// GoneResult is the CallToolResult of a tool call whose computer left or
// disconnected before answering.
func GoneResult(computer string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "computer " + computer + " left the office before answering"}},
		"isError": true,
		"meta":    map[string]any{"a2c_error_code": smcp.CodeNotFound},
	})
	return b
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
