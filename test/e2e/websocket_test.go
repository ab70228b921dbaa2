package e2e

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// TestWebSocketCloseReleasesConnection closes an Engine.IO WebSocket from
// the client side, as socket.io-client does on socket.close(): the gateway
// must answer the close frame and close the TCP connection. (It used to
// leave it half-closed in CLOSE-WAIT, and Node clients waited 30 s for it
// before their process could exit.)
func TestWebSocketCloseReleasesConnection(t *testing.T) {
	keys, err := core.NewKeyRing(core.Key{ID: "e2e", Key: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: keys, Logger: slog.New(slog.DiscardHandler)}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()

	url := "ws" + strings.TrimPrefix(gw.URL, "http") + "/socket.io/?EIO=4&transport=websocket"
	c, _, err := ws.DefaultDialer.Dial(url, http.Header{"X-Api-Key": {apiKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, open, err := c.ReadMessage()
	if err != nil || !strings.HasPrefix(string(open), "0{") {
		t.Fatalf("Engine.IO open packet: %q %v", open, err)
	}
	if err := c.WriteControl(ws.CloseMessage, ws.FormatCloseMessage(ws.CloseNormalClosure, ""), time.Now().Add(waitFor)); err != nil {
		t.Fatal(err)
	}
	// The server's close frame...
	_ = c.SetReadDeadline(time.Now().Add(waitFor))
	if _, _, err := c.ReadMessage(); !ws.IsCloseError(err, ws.CloseNormalClosure) {
		t.Fatalf("after the client's close frame: %v, want the server's close frame", err)
	}
	// ...then the end of the TCP connection, not silence until a timeout.
	_, err = c.NetConn().Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("reading the TCP connection after the close handshake: %v, want EOF (the server closing it)", err)
	}
}
