package smcp

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/proto"
)

// DecodeAnswer decodes an ack into out. A protocol error in the ack is
// returned as *Error; no answer (an empty ack, null) or a bare value where
// an object is due is CodeNotSupported (see NotSupportedAnswer); an object
// that does not decode is a 500.
func DecodeAnswer(raw []byte, out proto.Message) error {
	if e, ok := ErrorFromAck(json.RawMessage(raw)); ok {
		return e
	}
	if e := NotSupportedAnswer(raw); e != nil {
		return e
	}
	if err := Unmarshal(raw, out); err != nil {
		return Errorf(CodeInternal, "malformed answer: %v", err)
	}
	return nil
}

// NotSupportedAnswer reports an answer that says the computer does not
// serve the request: nothing at all (an empty ack, which the gateway sees
// as null; what python-socketio sends for an event it has no handler for)
// or a JSON value that is not an object (every answer of PROTOCOL.md §3 is
// one). It returns nil for an object, which DecodeAnswer judges further.
func NotSupportedAnswer(raw []byte) *Error {
	t := bytes.TrimSpace(raw)
	var kind string
	switch {
	case len(t) == 0 || string(t) == "null":
		kind = "no answer"
	case t[0] == '{':
		return nil
	case t[0] == '[':
		kind = "a list"
	case t[0] == '"':
		kind = "a string"
	case string(t) == "true" || string(t) == "false":
		kind = "a boolean"
	default:
		kind = "a bare value"
	}
	return Errorf(CodeNotSupported, "not supported by this computer: it gave %s instead of an answer object "+
		"(a computer without a handler for this request, such as an SDK 0.1.x computer asked for its Finder)", kind)
}
