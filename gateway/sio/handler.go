package sio

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/metrics"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// handler serves the events of one socket.
type handler struct {
	srv  *Server
	sess *core.Session
	ctx  context.Context // ends when the socket disconnects
	sid  string
	key  string
	work worker
	// events are the handlers of the connection's profile.
	events map[string]*eventSpec
}

// dispatch handles one event of the connection, called from the socket's
// packet queue. An event that may wait on the registry runs on the
// worker; so does any event while earlier ones are queued there, since it
// may depend on them (a tool call after a join, a leave after a join). The
// rest, tool calls to this node's computers above all, run at once at no
// added cost. Events queued beyond Config.MaxQueuedEvents are refused.
func (h *handler) dispatch(name string, spec *eventSpec, args []any) {
	if !spec.registry && h.work.idle() {
		h.event(nil, name, spec, args)
		return
	}
	if h.work.do(func(ctx context.Context) {
		if ctx.Err() != nil {
			return // the connection closed: nothing begun, nobody to answer
		}
		h.event(ctx, name, spec, args)
	}) {
		return
	}
	h.srv.cfg.Metrics.Refused("queued_events")
	err := h.queueFull()
	if ack, ok := lastAck(args); ok && !spec.noAck {
		if spec.officeAck {
			officeAck(ack, err)
		} else {
			flat(ack, err)
		}
	}
}

func (h *handler) queueFull() error {
	return smcp.Errorf(CodeRateLimited, "too many events of this connection waiting for the office registry (limit %d): retry once the earlier ones are answered",
		h.srv.cfg.MaxQueuedEvents)
}

func lastAck(args []any) (socket.Ack, bool) {
	if n := len(args); n > 0 {
		ack, ok := args[n-1].(socket.Ack)
		return ack, ok
	}
	return nil, false
}

// event runs one event's handler: it splits the payload from the ack and
// turns a panic into a 500 rather than losing the socket. Arguments are as
// the gateway's parser delivers them (parser.go): json.RawMessage, or
// *badArgs.
func (h *handler) event(wctx context.Context, name string, spec *eventSpec, args []any) {
	ack, ok := lastAck(args)
	if ok {
		args = args[:len(args)-1]
	}
	var payload any
	if len(args) > 0 {
		payload = args[0]
	}
	defer func() {
		if r := recover(); r != nil {
			h.log().Error("event handler panicked", "event", name, "panic", r)
			if ack != nil {
				ack([]any{smcp.Errorf(smcp.CodeInternal, "internal error").Wire()}, nil)
			}
		}
	}()
	if spec.noAck {
		ack = nil
	}
	spec.fn(h, name, payload, ack, wctx)
}

// log is the connection's logger, made when something is logged: a logger
// kept per connection cost 1 KiB of every idle connection.
func (h *handler) log() *slog.Logger { return h.srv.log.With("sid", h.sid, "key", h.key) }

// raw returns a payload as the bytes the client sent, refusing what is not a
// JSON object or is larger than the limit.
func (h *handler) raw(payload any) (json.RawMessage, error) {
	var b json.RawMessage
	switch x := payload.(type) {
	case nil:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "payload must be a JSON object, got nothing")
	case *badArgs:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s", x.reason)
	case json.RawMessage:
		b = x
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "payload must be a JSON object")
	}
	if len(b) > h.srv.cfg.MaxMessageBytes {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "payload of %d bytes exceeds the limit of %d", len(b), h.srv.cfg.MaxMessageBytes)
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "payload must be a JSON object")
	}
	return b, nil
}

func (h *handler) decode(payload any, m proto.Message) error {
	b, err := h.raw(payload)
	if err != nil {
		return err
	}
	if err := smcp.Unmarshal(b, m); err != nil {
		return smcp.Errorf(smcp.CodeBadRequest, "%v", err)
	}
	return nil
}

// flat answers with a flat error.
func flat(ack socket.Ack, err error) {
	if ack == nil {
		return
	}
	ack([]any{wireError(err)}, nil)
}

func wireError(err error) map[string]any {
	if e, ok := smcp.AsError(err); ok {
		return e.Wire()
	}
	return smcp.Errorf(smcp.CodeInternal, "internal error").Wire()
}

// officeAnswer answers join and leave in the form of the connection's
// profile: [true, null] / [false, reason] before 0.5, then an empty ack or a
// flat error.
func (h *handler) officeAnswer(event string, ack socket.Ack, err error) {
	if e, ok := smcp.Event(event); ok && e.Ack(h.sess.Protocol().Version) == smcp.EmptyAck {
		if err != nil {
			flat(ack, err)
		} else if ack != nil {
			ack([]any{}, nil)
		}
		return
	}
	officeAck(ack, err)
}

// officeAck answers join and leave: [true, null] or [false, "<reason>"].
func officeAck(ack socket.Ack, err error) {
	if ack == nil {
		return
	}
	if err == nil {
		ack([]any{true, nil}, nil)
		return
	}
	reason := "internal error"
	if e, ok := smcp.AsError(err); ok {
		reason = e.Message
	}
	ack([]any{false, reason}, nil)
}

func (h *handler) join(ctx context.Context, payload any, ack socket.Ack) {
	var req smcpv1.EnterOfficeReq
	err := h.decode(payload, &req)
	if err == nil {
		err = h.sess.JoinContext(ctx, &req)
	}
	if err != nil {
		h.log().Info("join refused", "office", req.GetOfficeId(), "name", req.GetName(), "role", req.GetRole(), "reason", err)
	}
	h.officeAnswer(smcp.EventJoinOffice, ack, err)
}

func (h *handler) leave(payload any, ack socket.Ack) {
	var req smcpv1.LeaveOfficeReq
	err := h.decode(payload, &req)
	if err == nil {
		err = h.sess.Leave(req.GetOfficeId())
	}
	h.officeAnswer(smcp.EventLeaveOffice, ack, err)
}

func (h *handler) listRoom(ctx context.Context, payload any, ack socket.Ack) {
	var req smcpv1.ListRoomReq
	if err := h.decode(payload, &req); err != nil {
		flat(ack, err)
		return
	}
	sessions, err := h.sess.ListRoomContext(ctx, req.GetOfficeId())
	if err != nil {
		flat(ack, err)
		return
	}
	answer(ack, &smcpv1.ListRoomRet{Sessions: sessions, ReqId: req.GetReqId()})
}

func answer(ack socket.Ack, m proto.Message) {
	if ack == nil {
		return
	}
	b, err := smcp.ToWire(m)
	if err != nil {
		flat(ack, smcp.Errorf(smcp.CodeInternal, "encode answer"))
		return
	}
	ack([]any{b}, nil)
}

// update and cancel have no ack in the protocol: refusals are ignored (and
// logged). A client that asked for an ack anyway gets one.
func (h *handler) update(event string, payload any, ack socket.Ack) {
	var req smcpv1.UpdateComputerConfigReq
	err := h.decode(payload, &req)
	if err == nil {
		err = h.sess.Update(event)
	}
	h.fireAndForget(event, ack, err)
}

func (h *handler) cancel(payload any, ack socket.Ack) {
	var req smcpv1.AgentCallData
	err := h.decode(payload, &req)
	if err == nil {
		err = h.sess.CancelToolCall(&req)
	}
	h.fireAndForget(smcp.EventToolCallCancel, ack, err)
}

func (h *handler) fireAndForget(event string, ack socket.Ack, err error) {
	if err != nil {
		h.log().Debug("event ignored", "event", event, "reason", err)
		flat(ack, err)
		return
	}
	if ack != nil {
		ack([]any{}, nil)
	}
}

// route sends a client: event to its computer. On the worker (wctx not nil)
// it may wait for the registry to find a computer of another node; at once,
// such a call is handed to the worker.
func (h *handler) route(event string, payload any, ack socket.Ack, wctx context.Context) {
	if ack == nil {
		// The client's mistake, one line per event: Debug, like every
		// other event refused.
		h.log().Debug("client event without an ack: nowhere to answer, dropped", "event", event)
		return
	}
	b, err := h.raw(payload)
	if err != nil {
		flat(ack, err)
		return
	}
	req, err := core.ParseRequest(event, b)
	if err != nil {
		flat(ack, err)
		return
	}
	if !h.srv.calls.Begin() {
		flat(ack, smcp.Errorf(CodeUnavailable, "gateway is shutting down"))
		return
	}
	req.Received = time.Now() // one clock read for the metrics and the core's guard
	done := h.srv.cfg.Metrics.Call(metrics.FrontSIO, event, req.Received)
	var span trace.Span
	if t := h.srv.cfg.Tracer; t != nil {
		_, span = t.Start(h.ctx, event, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("smcp.computer", req.Computer), attribute.String("smcp.req_id", req.ReqID)))
		if sc := span.SpanContext(); sc.HasTraceID() {
			req.TraceID = sc.TraceID().String()
		}
	}
	// No goroutine per call: the answer is acked from the callback, on the
	// goroutine that settles the call (see core.Session.Go).
	settle := func(out json.RawMessage, err error) {
		defer h.srv.calls.End()
		done(metrics.Outcome(err))
		// The span ends before the ack goes out: a caller that has its answer
		// (and then flushes its tracer, or reads the collector) sees the span.
		gone := h.ctx.Err() != nil
		if span != nil {
			switch {
			case gone:
				span.SetStatus(codes.Error, "agent gone")
			case err != nil:
				span.SetStatus(codes.Error, metrics.Outcome(err))
			}
			span.End()
		}
		switch {
		case gone: // drop silently: nobody to answer
		case err != nil:
			flat(ack, err)
		default:
			ack([]any{out}, nil)
		}
	}
	if wctx != nil {
		h.sess.GoContext(wctx, req, settle)
		return
	}
	if h.sess.TryGo(req, settle) {
		return
	}
	// A computer of another node: where it is takes a registry lookup.
	if !h.work.do(func(ctx context.Context) {
		if ctx.Err() != nil {
			settle(nil, ctx.Err()) // counted in flight: settle frees it
			return
		}
		// Off the packet queue, so out of event's recover: a panic is
		// answered here, once, rather than killing the process.
		var settled atomic.Bool
		once := func(out json.RawMessage, err error) {
			if settled.CompareAndSwap(false, true) {
				settle(out, err)
			}
		}
		defer func() {
			if r := recover(); r != nil {
				h.log().Error("event handler panicked", "event", event, "panic", r)
				once(nil, smcp.Errorf(smcp.CodeInternal, "internal error"))
			}
		}()
		h.sess.GoContext(ctx, req, once)
	}) {
		h.srv.cfg.Metrics.Refused("queued_events")
		settle(nil, h.queueFull())
	}
}

// authRequired records a sign-in the computer needs (server:auth_required,
// this gateway's extension, docs/UPSTREAM.md): operators see it, agents
// never do. Answered only if an ack was asked for.
func (h *handler) authRequired(payload any, ack socket.Ack) {
	var m struct {
		Server    string    `json:"server"`
		BundleID  string    `json:"bundle_id"`
		URL       string    `json:"url"`
		State     string    `json:"state"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	b, err := h.raw(payload)
	if err == nil {
		if err = json.Unmarshal(b, &m); err != nil {
			err = smcp.Errorf(smcp.CodeBadRequest, "%s: %v", smcp.EventAuthRequired, err)
		}
	}
	if err == nil {
		err = h.sess.ReportSignIn(core.SignIn{Server: m.Server, BundleID: m.BundleID, URL: m.URL, State: m.State, Expires: m.ExpiresAt})
	}
	h.fireAndForget(smcp.EventAuthRequired, ack, err)
}
