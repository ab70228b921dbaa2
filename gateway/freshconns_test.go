package gateway_test

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
)

// Connections that never sent a whole request (one a client dialed and did
// not use, one stopped in the middle of its headers) do not hold up the
// shutdown: net/http alone counts them busy for 5 s, so a gateway with an
// MCP session and such a connection took its whole grace to stop (seen as
// mcpfront's TestShutdownEndsSessions taking 5 s).
func TestShutdownClosesConnectionsWithoutRequests(t *testing.T) {
	g := startGateway(t, gateway.Config{ShutdownGrace: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcpSession(ctx, g.URL, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	addr := strings.TrimPrefix(g.URL, "http://")
	var held []net.Conn
	for _, sent := range []string{"", "GET /healthz HTTP/1.1\r\nHost: x\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		if _, err := io.WriteString(c, sent); err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// Accepted and in StateNew before the shutdown begins.
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %s with connections that sent no request", d)
	}
	for i, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF && !isReset(err) {
			t.Errorf("connection %d after shutdown: read %v, want it closed", i, err)
		}
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}
