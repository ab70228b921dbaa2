package core

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// ParseDecoded is ParseRequest for a payload a front end already holds
// decoded (the Socket.IO library hands events over as map[string]any), with
// payload its JSON encoding. For client:tool_call it validates the decoded
// values directly, accepting and refusing what ParseRequest does (a
// differential test holds it to that), because protojson decoding was 12%
// of the gateway's CPU per relayed call in the profile; other events go
// through ParseRequest.
func ParseDecoded(event string, v map[string]any, payload json.RawMessage) (*Request, error) {
	if event != smcp.EventToolCall || v == nil {
		return ParseRequest(event, payload)
	}
	r := &Request{Event: event, Payload: payload}
	var toolName string
	for _, f := range []struct {
		key string
		dst *string
	}{{"agent", &r.Agent}, {"req_id", &r.ReqID}, {"computer", &r.Computer}, {"tool_name", &toolName}} {
		switch x := v[f.key].(type) {
		case nil:
		case string:
			*f.dst = x
		default:
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: %s must be a string", event, f.key)
		}
	}
	switch v["params"].(type) {
	case nil, map[string]any:
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: params must be an object", event)
	}
	timeout, ok := int32Value(v["timeout"])
	if !ok {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: timeout must be an integer", event)
	}
	if err := r.checkIDs(); err != nil {
		return nil, err
	}
	if err := checkToolCall(event, toolName, timeout); err != nil {
		return nil, err
	}
	r.Timeout = timeout
	return r, nil
}

// int32Value reads an int32 the way protojson does: a JSON number without
// a fractional part, or a string holding one; null is 0.
func int32Value(v any) (int32, bool) {
	var f float64
	switch x := v.(type) {
	case nil:
		return 0, true
	case float64:
		f = x
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, false
		}
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int32(f), true
}
