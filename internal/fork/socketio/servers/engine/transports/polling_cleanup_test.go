package transports

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
)

func pollCtx() (*types.HttpContext, *httptest.ResponseRecorder) {
	w := httptest.NewRecorder()
	return types.NewHttpContext(w, httptest.NewRequest("GET", "/socket.io/?EIO=4&transport=polling", nil)), w
}

// A poll's cleanup runs twice: when the answer is written and again when its
// context closes, and the second run may come after the client has its
// answer and has sent the next poll. It must not drop that next poll
// (upstream did, and the next answer then had nowhere to go).
func TestLateCleanupKeepsTheNextPoll(t *testing.T) {
	first, _ := pollCtx()
	p := NewPolling(first)
	p.OnRequest(first)
	first.Cleanup() // DoWrite's run
	next, w := pollCtx()
	p.OnRequest(next)
	first.Cleanup() // the late run, from the first context's close

	p.Send([]*packet.Packet{{Type: packet.MESSAGE, Data: strings.NewReader("hello")}})
	select {
	case <-next.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the next poll got no answer")
	}
	if got := w.Body.String(); !strings.Contains(got, "hello") {
		t.Fatalf("next poll answered %q", got)
	}
}

// A transport closed by the server while a poll is pending answers that
// poll with the CLOSE packet: it is the client's only word of the close.
// DoClose closed the write queue before it sent the packet, so the send was
// dropped and the client polled on until its ping timeout (45 s): a
// polling client whose key was revoked or whose token expired stayed
// connected to its side.
func TestCloseAnswersThePendingPoll(t *testing.T) {
	poll, w := pollCtx()
	p := NewPolling(poll)
	p.OnRequest(poll)
	closed := make(chan struct{})
	p.Close(func() { close(closed) })
	select {
	case <-poll.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the pending poll got no answer to the close")
	}
	<-closed
	packets, _ := p.Parser().DecodePayload(types.NewStringBufferString(w.Body.String()))
	if len(packets) == 0 || packets[len(packets)-1].Type != packet.CLOSE {
		t.Fatalf("the pending poll was answered %q, want a CLOSE packet", w.Body.String())
	}
}
