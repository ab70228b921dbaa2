package computer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Handle answers one client: event. payload is the event's data as a
// Socket.IO library delivers it (maps, slices, float64) or raw JSON bytes.
// The answer is the ack value: the event's result, or a flat error
// ({"code", "message", "details"?}) for protocol errors. client:tool_call
// always answers a CallToolResult once the request is well-formed.
//
// Handle blocks for as long as the work takes (a tool call up to its
// timeout): a Socket.IO handler must call it from its own goroutine.
func (c *Computer) Handle(ctx context.Context, event string, payload any) any {
	req, err := decodeObject(payload)
	if err != nil {
		return smcp.Errorf(smcp.CodeBadRequest, "%s: %v", event, err).Wire()
	}
	if target, _ := req["computer"].(string); target != c.name {
		return smcp.Errorf(smcp.CodeNotFound, "%s: this is computer %q, not %q", event, c.name, target).Wire()
	}
	var res any
	switch event {
	case smcp.EventToolCall:
		res, err = c.handleToolCall(ctx, req)
	case smcp.EventGetTools:
		res, err = c.handleGetTools(req)
	case smcp.EventGetConfig:
		res, err = c.handleGetConfig(req)
	case smcp.EventGetDesktop:
		res, err = c.handleGetDesktop(ctx, req)
	case smcp.EventGetFinder:
		res, err = c.handleGetFinder(req)
	case smcp.EventReadResource:
		res, err = c.handleReadResource(ctx, req)
	default:
		err = smcp.Errorf(smcp.CodeBadRequest, "unknown event %q", event)
	}
	if err != nil {
		e, ok := smcp.AsError(err)
		if !ok {
			e = smcp.Errorf(smcp.CodeInternal, "%s: %v", event, err)
		}
		c.log.Info("request refused", "event", event, "req_id", req["req_id"], "code", e.Code, "err", e.Message)
		return e.Wire()
	}
	return res
}

// CancelToolCall handles notify:tool_call_cancel. Unknown calls are ignored.
func (c *Computer) CancelToolCall(agent, reqID string) {
	if c.exec.Cancel(agent, reqID) {
		c.log.Info("tool call cancel requested", "agent", agent, "req_id", reqID)
	}
}

// History returns the servers of recent tool calls, oldest first.
func (c *Computer) History() []string { return c.exec.History() }

func decodeObject(payload any) (map[string]any, error) {
	var b []byte
	switch p := payload.(type) {
	case map[string]any:
		return p, nil
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
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, fmt.Errorf("payload must be a JSON object")
	}
	return m, nil
}

func str(req map[string]any, key string, required bool) (string, error) {
	v, ok := req[key]
	if !ok || v == nil {
		if required {
			return "", smcp.Errorf(smcp.CodeBadRequest, "missing %q", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", smcp.Errorf(smcp.CodeBadRequest, "%q must be a string", key)
	}
	if required && s == "" {
		return "", smcp.Errorf(smcp.CodeBadRequest, "%q must not be empty", key)
	}
	return s, nil
}

// optInt reads an optional integer field; ok false when absent. Socket.IO
// libraries deliver numbers as float64; in-process callers may pass ints.
func optInt(req map[string]any, key string) (n int, ok bool, err error) {
	var f float64
	switch v := req[key].(type) {
	case nil:
		return 0, false, nil
	case float64:
		f = v
	case int:
		return v, true, nil
	case int32:
		return int(v), true, nil
	case int64:
		f = float64(v)
	case json.Number:
		f, err = v.Float64()
	default:
		err = fmt.Errorf("%T", v)
	}
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false, smcp.Errorf(smcp.CodeBadRequest, "%q must be an integer", key)
	}
	return int(f), true, nil
}

func (c *Computer) handleToolCall(ctx context.Context, req map[string]any) (any, error) {
	agent, err := str(req, "agent", true)
	if err != nil {
		return nil, err
	}
	reqID, err := str(req, "req_id", true)
	if err != nil {
		return nil, err
	}
	name, err := str(req, "tool_name", true)
	if err != nil {
		return nil, err
	}
	var params map[string]any
	switch p := req["params"].(type) {
	case nil:
	case map[string]any:
		params = p
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "\"params\" must be an object")
	}
	timeout, hasTimeout, err := optInt(req, "timeout")
	if err != nil {
		return nil, err
	}
	if hasTimeout && (timeout < 1 || timeout > 3600) {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "\"timeout\" must be 1..3600 seconds, got %d", timeout)
	}
	return c.exec.Execute(ctx, tools.Call{
		Agent: agent, ReqID: reqID, Name: name, Params: params,
		Timeout: time.Duration(timeout) * time.Second,
	}), nil
}

func (c *Computer) handleGetTools(req map[string]any) (any, error) {
	reqID, err := str(req, "req_id", false)
	if err != nil {
		return nil, err
	}
	return map[string]any{"tools": c.catalog.Load().Wire(), "req_id": reqID}, nil
}

func (c *Computer) handleGetConfig(req map[string]any) (any, error) {
	if _, err := str(req, "req_id", false); err != nil {
		return nil, err
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	return c.cfg.Wire(), nil
}
