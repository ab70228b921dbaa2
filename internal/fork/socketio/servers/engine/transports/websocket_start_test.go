package transports

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
)

// A packet the client sends as soon as the WebSocket is open (an upgrade's
// "2probe") reaches the listener the engine socket registers after making
// the transport. Upstream's reader started in Construct and emitted it to
// no one: the upgrade then hung until its timeout. The test waits well past
// the time the reader needs before listening; without StartReading the
// packet is gone by then.
func TestWebSocketReadsOnlyOnceListenedTo(t *testing.T) {
	made := make(chan Websocket, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := ws.Upgrader{}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ctx := types.NewHttpContext(w, r)
		ctx.Websocket = &types.WebSocketConn{EventEmitter: types.NewEventEmitter(), Conn: conn}
		tr := NewWebSocket(ctx)
		tr.SetSupportsBinary(true)
		made <- tr
	}))
	defer hs.Close()

	c, _, err := ws.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/?EIO=4&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.WriteMessage(ws.TextMessage, []byte("2probe")); err != nil {
		t.Fatal(err)
	}
	tr := <-made
	defer tr.Close()
	time.Sleep(300 * time.Millisecond) // ample for a reader started early to read and drop it

	got := make(chan packet.Type, 1)
	_ = tr.On("packet", func(a ...any) {
		if p, ok := a[0].(*packet.Packet); ok {
			got <- p.Type
		}
	})
	tr.(interface{ StartReading() }).StartReading()
	select {
	case typ := <-got:
		if typ != packet.PING {
			t.Fatalf("got packet type %v, want ping", typ)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe sent before anyone listened was lost")
	}
}
