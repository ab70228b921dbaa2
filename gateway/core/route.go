package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// ParseRequest validates the payload of a client: event. Errors are 400s.
func ParseRequest(event string, payload []byte) (*Request, error) {
	var m RequestMessage
	switch event {
	case smcp.EventToolCall:
		m = &smcpv1.ToolCallReq{}
	case smcp.EventGetTools:
		m = &smcpv1.GetToolsReq{}
	case smcp.EventGetConfig:
		m = &smcpv1.GetComputerConfigReq{}
	case smcp.EventGetDesktop:
		m = &smcpv1.GetDeskTopReq{}
	case smcp.EventGetFinder:
		m = &smcpv1.GetFinderReq{}
	case smcp.EventReadResource:
		m = &smcpv1.ReadResourceReq{}
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "unknown event %q", event)
	}
	if t := bytes.TrimSpace(payload); len(t) == 0 || t[0] != '{' {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: payload must be a JSON object", event)
	}
	if err := smcp.Unmarshal(payload, m); err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: %v", event, err)
	}
	return NewRequest(event, m, payload)
}

// NewRequest applies the checks of ParseRequest to a typed message whose
// wire form is payload, for front ends that hold the message already
// (decoding payload again only to validate it was 5-6% of the gateway's CPU
// per Connect call).
func NewRequest(event string, m RequestMessage, payload []byte) (*Request, error) {
	r := &Request{Event: event, Agent: m.GetAgent(), ReqID: m.GetReqId(), Computer: m.GetComputer(), Payload: payload}
	if err := r.checkIDs(); err != nil {
		return nil, err
	}
	switch m := m.(type) {
	case *smcpv1.ToolCallReq:
		if err := checkToolCall(event, m.GetToolName(), m.GetTimeout()); err != nil {
			return nil, err
		}
		r.Timeout = m.GetTimeout()
	case *smcpv1.ReadResourceReq:
		if m.GetUri() == "" {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: uri is required", event)
		}
	}
	return r, nil
}

// checkIDs checks the fields every client: request carries.
func (r *Request) checkIDs() error {
	switch {
	case r.Agent == "":
		return smcp.Errorf(smcp.CodeBadRequest, "%s: agent is required", r.Event)
	case r.ReqID == "":
		return smcp.Errorf(smcp.CodeBadRequest, "%s: req_id is required", r.Event)
	case r.Computer == "":
		return smcp.Errorf(smcp.CodeBadRequest, "%s: computer is required", r.Event)
	}
	return nil
}

// checkToolCall checks what a tool call carries beyond the IDs.
func checkToolCall(event, toolName string, timeout int32) error {
	switch {
	case toolName == "":
		return smcp.Errorf(smcp.CodeBadRequest, "%s: tool_name is required", event)
	case timeout < MinToolCallTimeout || timeout > MaxToolCallTimeout:
		return smcp.Errorf(smcp.CodeBadRequest, "%s: timeout must be an integer in %d..%d seconds",
			event, MinToolCallTimeout, MaxToolCallTimeout)
	}
	return nil
}

// Deadline is how long the gateway waits for the computer's answer to r.
func (h *Hub) Deadline(r *Request) time.Duration {
	if r.Event == smcp.EventToolCall {
		return time.Duration(r.Timeout)*time.Second + h.cfg.ToolCallMargin
	}
	return h.cfg.RequestTimeout
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
		if err != nil {
			h.log.Warn("computer request failed", "event", r.Event, "computer", r.Computer, "err", err)
			p.settle(s.goneAnswer(r))
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
	r, err := NewRequest(event, req, b)
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
