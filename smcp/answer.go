package smcp

import (
	"encoding/json"

	"google.golang.org/protobuf/proto"
)

// DecodeAnswer decodes an ack into out. A protocol error in the ack is
// returned as *Error; an answer that does not decode is a 500.
func DecodeAnswer(raw []byte, out proto.Message) error {
	if e, ok := ErrorFromAck(json.RawMessage(raw)); ok {
		return e
	}
	if err := Unmarshal(raw, out); err != nil {
		return Errorf(CodeInternal, "malformed answer: %v", err)
	}
	return nil
}
