package core

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Call routes the client: event made of req (an event of the protocol
// table) and decodes the computer's answer into out: a flat error in the
// answer is returned as *smcp.Error. It is the typed form of Route for the
// events without a method of their own (the 0.3/0.4 ones), which a one-call
// agent sends in the version of the office: an event that version lacks is
// a 404 "unknown event".
func (s *Session) Call(ctx context.Context, event string, req RequestMessage, out proto.Message) error {
	_, err := call(ctx, s, event, req, out)
	return err
}
