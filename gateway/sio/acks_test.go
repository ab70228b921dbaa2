package sio

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestAbandonedAcksAreForgotten: the library keeps an ack callback until the
// ack comes or the socket disconnects. Calls the core gave up on must not
// stay there: after 1,100 timed-out calls to a computer that never answers,
// its socket holds no ack callback, and the computer is still reachable.
func TestAbandonedAcksAreForgotten(t *testing.T) {
	hub := core.New(core.Config{RequestTimeout: 5 * time.Millisecond, MaxPending: 64})
	srv := New(hub, core.AllowAll{}, Config{})
	mux := http.NewServeMux()
	mux.Handle(srv.Path(), srv.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); hs.Close() })

	// A computer written frame by frame that never acks client: events.
	c, _, err := ws.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/socket.io/?EIO=4&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	read() // Engine.IO open
	_ = c.WriteMessage(ws.TextMessage, []byte("40/smcp,"))
	read() // namespace connect
	_ = c.WriteMessage(ws.TextMessage, []byte(`42/smcp,1["server:join_office",{"role":"computer","name":"pc","office_id":"o"}]`))
	if got := read(); got != `43/smcp,1[true,null]` {
		t.Fatalf("join: %s", got)
	}
	_ = c.SetReadDeadline(time.Time{})
	received := make(chan string, 2048)
	go func() { // ends when the cleanup below closes c, which waits for it
		defer close(received)
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			select {
			case received <- string(b):
			default: // the test reads only the last call's event
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		for range received {
		}
	})

	p, _ := core.AllowAll{}.Authenticate(context.Background(), "")
	agent, err := hub.ActAsAgent(p, "o", "ag")
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	for i := range 1100 {
		req, err := core.ParseRequest(smcp.EventGetConfig, fmt.Appendf(nil, `{"agent":"ag","req_id":"r%d","computer":"pc"}`, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Route(context.Background(), req); err == nil || !strings.Contains(err.Error(), "did not answer") {
			t.Fatalf("call %d: %v, want a timeout", i, err)
		}
	}
	acks := -1
	srv.nsp.Sockets().Range(func(_ socket.SocketId, sock *socket.Socket) bool {
		acks = sock.Acks().Len()
		return false
	})
	if acks != 0 {
		t.Fatalf("the computer's socket holds %d ack callbacks after the calls timed out, want 0", acks)
	}
	// Still reachable: the next call is sent to it (and times out as well).
	for len(received) > 0 {
		<-received
	}
	req, _ := core.ParseRequest(smcp.EventGetConfig, []byte(`{"agent":"ag","req_id":"last","computer":"pc"}`))
	_, _ = agent.Route(context.Background(), req)
	select {
	case m := <-received:
		if !strings.Contains(m, `"req_id":"last"`) {
			t.Fatalf("the computer got %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the computer got nothing")
	}
}
