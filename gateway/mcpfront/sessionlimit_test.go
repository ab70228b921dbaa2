package mcpfront_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// postMCP sends body to office's endpoint with keyA, as a client at
// 127.0.0.1, and returns the status and the body of the answer.
func postMCP(t *testing.T, g *gateway.Running, office, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, endpoint(g, office), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantTooMany checks that an initialize is refused with HTTP 429 and the
// SMCP error naming the limit.
func wantTooMany(t *testing.T, g *gateway.Running, message string) {
	t.Helper()
	status, body := postMCP(t, g, "A", initializeBody)
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil ||
		e.Code != core.CodeTooManyPending || e.Message != message {
		t.Fatalf("initialize beyond the limit: %d %s, want 429 with %q", status, body, message)
	}
}

// fromAddr is an HTTP transport whose connections come from ip (another
// loopback address: a second client host).
func fromAddr(t *testing.T, ip string) http.RoundTripper {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	probe, err := d.Dial("tcp", "127.0.0.1:1")
	if probe != nil {
		probe.Close()
	}
	if err != nil && strings.Contains(err.Error(), "assign requested address") {
		t.Skipf("cannot bind %s: %v", ip, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// One address holds at most MaxSessionsPerAddr sessions: the next
// initialize is a 429 naming the limit, another address is still served,
// and a session ended by its client's DELETE gives its slot back.
func TestSessionsPerAddress(t *testing.T) {
	const limit = 3
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessionsPerAddr: limit}})
	var open []*mcp.ClientSession
	for range limit {
		open = append(open, mustDial(t, g, "A", nil, "x-api-key", keyA))
	}
	wantTooMany(t, g, "too many MCP sessions from this address (3)")
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA); err == nil {
		t.Fatal("the go-sdk client opened a session beyond the address's limit")
	}
	if n := g.MCP.Sessions(); n != limit {
		t.Fatalf("%d sessions open after refusals, want %d", n, limit)
	}
	// Another client host is not locked out by the first.
	if _, err := dialVia(t, g, "A", sessionVersion, fromAddr(t, "127.0.0.2"), nil, "x-api-key", keyA); err != nil {
		t.Fatalf("a session from another address: %v", err)
	}
	if err := open[0].Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	testwait.Within(t, waitFor, "the closed session to end", func() bool { return g.MCP.Sessions() == limit })
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA); err != nil {
		t.Fatalf("a session after one of the address's ended: %v", err)
	}
	wantTooMany(t, g, "too many MCP sessions from this address (3)")
}

// A session that ends idle gives its address's slot back.
func TestIdleSessionFreesItsAddressSlot(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessionsPerAddr: 1, SessionTimeout: 300 * time.Millisecond}})
	_ = mustDial(t, g, "A", nil, "x-api-key", keyA)
	testwait.Within(t, waitFor, "the idle session to end", func() bool { return g.MCP.Sessions() == 0 })
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA); err != nil {
		t.Fatalf("a session after the address's idle one ended: %v", err)
	}
}

// Initializes that fail, before the session exists (the office is held by
// another agent) or in the go-sdk (a first request that is not an
// initialize), take no slot for good.
func TestFailedInitializeFreesItsAddressSlot(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessionsPerAddr: 1}})
	ctx := ctxT(t)
	other, err := agent.Dial(ctx, sioclient.Options{Version: "0.2.0", URL: g.URL, APIKey: keyA, Logger: quiet}, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Join(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if status, body := postMCP(t, g, "A", initializeBody); status == http.StatusOK || status == http.StatusTooManyRequests {
			t.Fatalf("initialize in an office held by another agent: %d %s", status, body)
		}
	}
	if err := other.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		status, body := postMCP(t, g, "A", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		// The go-sdk answers a JSON-RPC error (with HTTP 200).
		if status == http.StatusTooManyRequests || !strings.Contains(body, `"error"`) {
			t.Fatalf("tools/list without a session: %d %s", status, body)
		}
	}
	if n := g.MCP.Sessions(); n != 0 {
		t.Fatalf("%d sessions after failed initializes", n)
	}
	if _, err := dial(t, g, "A", nil, "x-api-key", keyA); err != nil {
		t.Fatalf("a session after failed initializes: %v", err)
	}
}

// The gateway-wide MaxSessions holds whatever the per-address limit, and a
// shutdown gives every slot back.
func TestMaxSessions(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessions: 2, MaxSessionsPerAddr: -1}})
	_ = mustDial(t, g, "A", nil, "x-api-key", keyA)
	if _, err := dialVia(t, g, "A", sessionVersion, fromAddr(t, "127.0.0.2"), nil, "x-api-key", keyA); err != nil {
		t.Fatal(err)
	}
	wantTooMany(t, g, "too many MCP sessions (2)")
	if _, err := dialVia(t, g, "A", sessionVersion, fromAddr(t, "127.0.0.3"), nil, "x-api-key", keyA); err == nil {
		t.Fatal("a third session from a third address beyond MaxSessions 2")
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := g.MCP.Sessions(); n != 0 {
		t.Errorf("%d sessions after shutdown", n)
	}
}
