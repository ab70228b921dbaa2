package computer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/computer/tools"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Handle answers one client: event. payload is the event's data: raw JSON
// bytes as the Socket.IO connection delivers it, or any value that encodes
// to JSON (tests and in-process callers pass maps). The request is decoded
// into the protocol table's request type for the event and served by the
// event's typed handler. The answer is the ack value: the event's result, or
// a flat error ({"code", "message", "details"?}) for protocol errors.
// client:tool_call always answers a CallToolResult once the request is
// well-formed.
//
// Handle blocks for as long as the work takes (a tool call up to its
// timeout): a Socket.IO handler must call it from its own goroutine.
func (c *Computer) Handle(ctx context.Context, event string, payload any) any {
	if event == smcp.EventAuthCallback && c.opts.SignInRedirect != "" {
		return c.authCallback(payload)
	}
	h, ok := c.handlers[event]
	if !ok {
		return smcp.Errorf(smcp.CodeBadRequest, "unknown event %q", event).Wire()
	}
	req, err := h.decode(payload)
	if err != nil {
		if e, ok := smcp.AsError(err); ok {
			return e.Wire()
		}
		return smcp.Errorf(smcp.CodeBadRequest, "%s: %v", event, err).Wire()
	}
	// PROTOCOL.md §6: a request for another computer is refused, never served.
	if target := req.GetComputer(); target != c.name {
		return smcp.Errorf(smcp.CodeNotFound, "%s: this is computer %q, not %q", event, c.name, target).Wire()
	}
	res, err := h.serve(ctx, req)
	if err != nil {
		e, ok := smcp.AsError(err)
		if !ok {
			e = smcp.Errorf(smcp.CodeInternal, "%s: %v", event, err)
		}
		c.log.Info("request refused", "event", event, "req_id", req.GetReqId(), "code", e.Code, "err", e.Message)
		return e.Wire()
	}
	return res
}

// routedRequest is what every routed request message has (the fields of
// PROTOCOL.md §3 rules 1-3).
type routedRequest interface {
	proto.Message
	GetAgent() string
	GetReqId() string
	GetComputer() string
}

// handler serves one client: event: decode makes the table's request
// message from the payload, serve answers it.
type handler struct {
	decode func(payload any) (routedRequest, error)
	serve  func(ctx context.Context, req routedRequest) (any, error)
}

// typed adapts a handler of one request type. The message is made by the
// protocol table, so the handler's type and the table's must agree;
// newHandlers checks that once, at construction.
func typed[R routedRequest](e *smcp.EventInfo, fn func(context.Context, R) (any, error)) (handler, error) {
	if _, ok := e.NewRequest().(R); !ok {
		var want R
		return handler{}, fmt.Errorf("handler takes %T, the protocol table says %T", want, e.NewRequest())
	}
	return handler{
		decode: func(payload any) (routedRequest, error) {
			b, err := payloadJSON(payload)
			if err != nil {
				return nil, err
			}
			if err := checkPresent(e, b); err != nil {
				return nil, err
			}
			req := e.NewRequest().(R)
			if err := smcp.Unmarshal(b, req); err != nil {
				return nil, err
			}
			return req, nil
		},
		serve: func(ctx context.Context, req routedRequest) (any, error) { return fn(ctx, req.(R)) },
	}, nil
}

// newHandlers registers a typed handler for every routed event of the
// protocol table. An event of the table without a handler here is a
// programming error, reported at construction and by the tests.
func (c *Computer) newHandlers() (map[string]handler, error) {
	byEvent := map[string]func(*smcp.EventInfo) (handler, error){
		smcp.EventToolCall:     func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleToolCall) },
		smcp.EventGetTools:     func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetTools) },
		smcp.EventGetConfig:    func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetConfig) },
		smcp.EventGetDesktop:   func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetDesktop) },
		smcp.EventGetFinder:    func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetFinder) },
		smcp.EventReadResource: func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleReadResource) },
		smcp.EventGetSkills:    func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetSkills) },
		smcp.EventGetSkill:     func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetSkill) },
		smcp.EventGetBlob:      func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetBlob) },
		smcp.EventPutBlob:      func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handlePutBlob) },
		smcp.EventGetResources: func(e *smcp.EventInfo) (handler, error) { return typed(e, c.handleGetResources) },
	}
	out := make(map[string]handler, len(byEvent))
	v02 := smcp.ProfileOf(smcp.V02)
	for _, e := range c.profileEvents() {
		mk, ok := byEvent[e.Name]
		if !ok {
			if _, old := v02.Event(e.Name); old {
				return nil, fmt.Errorf("computer: no handler for routed event %s", e.Name)
			}
			// An event of 0.3/0.4 this computer does not serve yet (skills
			// and blobs come from computer/skills and computer/blobs): not
			// registered, so the agent's call ends at the gateway's
			// deadline, as for any computer without it.
			c.log.Debug("routed event not served", "event", e.Name, "protocol", c.protocol)
			continue
		}
		h, err := mk(e)
		if err != nil {
			return nil, fmt.Errorf("computer: %s: %w", e.Name, err)
		}
		out[e.Name] = h
	}
	return out, nil
}

// CancelToolCall handles notify:tool_call_cancel. Unknown calls are ignored.
func (c *Computer) CancelToolCall(agent, reqID string) {
	if c.exec.Cancel(agent, reqID) {
		c.log.Info("tool call cancel requested", "agent", agent, "req_id", reqID)
	}
}

// History returns the servers of recent tool calls, oldest first.
func (c *Computer) History() []string { return c.exec.History() }

// checkPresent checks the fields of the protocol table that a request
// carries, by the table's rules (the gateway checked them already; a direct
// caller may not have). Absent ones are left to the handler: a computer
// serves a tool call without a timeout with its default, and a request
// without agent, as the gateway's own tests and in-process callers send.
func checkPresent(e *smcp.EventInfo, b []byte) error {
	return e.CheckPresent(b)
}

// payloadJSON returns the JSON of a payload, which must be an object.
func payloadJSON(payload any) ([]byte, error) {
	var b []byte
	switch p := payload.(type) {
	case []byte:
		b = p
	case json.RawMessage:
		b = p
	case string:
		b = []byte(p)
	default:
		var err error
		if b, err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("payload is not JSON: %w", err)
		}
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, errors.New("payload must be a JSON object")
	}
	return b, nil
}

func (c *Computer) handleToolCall(ctx context.Context, req *smcpv1.ToolCallReq) (any, error) {
	for _, f := range [...]struct{ key, v string }{{"agent", req.GetAgent()}, {"req_id", req.GetReqId()}, {"tool_name", req.GetToolName()}} {
		if f.v == "" {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "missing %q", f.key)
		}
	}
	// 0 is an absent timeout (the executor's default); the gateway has
	// already refused anything outside the bounds, a direct caller may not.
	timeout := req.GetTimeout()
	if timeout != 0 && (timeout < smcp.MinToolCallTimeout || timeout > smcp.MaxToolCallTimeout) {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "\"timeout\" must be %d..%d seconds, got %d",
			smcp.MinToolCallTimeout, smcp.MaxToolCallTimeout, timeout)
	}
	var params map[string]any
	if req.GetParams() != nil {
		params = req.GetParams().AsMap()
	}
	return c.sideband(c.exec.Execute(ctx, tools.Call{
		Agent: req.GetAgent(), ReqID: req.GetReqId(), Name: req.GetToolName(), Params: params,
		Timeout: time.Duration(timeout) * time.Second,
	})), nil
}

// getToolsRet is the answer of client:get_tools (GetToolsRet), its keys in
// the order agents have always received them.
type getToolsRet struct {
	ReqID string           `json:"req_id"`
	Tools []tools.SMCPTool `json:"tools"`
}

func (c *Computer) handleGetTools(_ context.Context, req *smcpv1.GetToolsReq) (any, error) {
	return getToolsRet{ReqID: req.GetReqId(), Tools: c.catalog.Load().Wire()}, nil
}

func (c *Computer) handleGetConfig(_ context.Context, _ *smcpv1.GetComputerConfigReq) (any, error) {
	var ids map[string]string
	if c.bundled {
		ids = c.bundleIDs() // before cfgMu: the manager is not under it
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	if c.bundled {
		return c.cfg.WireBundled(ids), nil
	}
	return c.cfg.Wire(), nil
}
