package smcp

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/proto"
)

// ErrorFromAnswer reports whether an ack is a protocol error, flat
// ({"code","message"}) or wrapped ({"error":{...}}), and returns it.
func ErrorFromAnswer(raw []byte) (*Error, bool) {
	// An error has a "code" key, at the top or under "error"; most answers
	// have neither anywhere, and decoding them into a map only to learn so
	// was 4% of the gateway's CPU per Connect CallTool.
	if !bytes.Contains(raw, []byte(`"code"`)) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(raw, &top) != nil {
		return nil, false
	}
	if inner, ok := top["error"]; ok {
		var wrapped map[string]json.RawMessage
		if json.Unmarshal(inner, &wrapped) == nil {
			if e, ok := flatError(wrapped); ok {
				return e, true
			}
		}
	}
	return flatError(top)
}

func flatError(m map[string]json.RawMessage) (*Error, bool) {
	var e struct {
		Code    *float64       `json:"code"`
		Message *string        `json:"message"`
		Details map[string]any `json:"details"`
	}
	if _, ok := m["code"]; !ok {
		return nil, false
	}
	if _, ok := m["message"]; !ok {
		return nil, false
	}
	b, _ := json.Marshal(m)
	if json.Unmarshal(b, &e) != nil || e.Code == nil || e.Message == nil || *e.Code != float64(int(*e.Code)) {
		return nil, false
	}
	return &Error{Code: int(*e.Code), Message: *e.Message, Details: e.Details}, true
}

// DecodeAnswer decodes an ack into out. A protocol error in the ack is
// returned as *Error; an answer that does not decode is a 500.
func DecodeAnswer(raw []byte, out proto.Message) error {
	if e, ok := ErrorFromAnswer(raw); ok {
		return e
	}
	if err := Unmarshal(raw, out); err != nil {
		return Errorf(CodeInternal, "malformed answer: %v", err)
	}
	return nil
}
