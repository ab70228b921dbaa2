package gateway_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testtls"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// levels records every log record: its level, message and attributes.
type levels struct {
	mu     sync.Mutex
	counts map[slog.Level]int
	lines  []string
}

type levelHandler struct {
	l     *levels
	attrs []slog.Attr
}

func (h levelHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h levelHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	h.l.counts[r.Level]++
	line := r.Level.String() + " " + r.Message
	for _, a := range h.attrs {
		line += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.l.lines = append(h.l.lines, line)
	return nil
}

func (h levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return levelHandler{l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}
func (h levelHandler) WithGroup(string) slog.Handler { return h }

func (l *levels) snapshot() (map[slog.Level]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[slog.Level]int{}
	for k, v := range l.counts {
		counts[k] = v
	}
	return counts, append([]string(nil), l.lines...)
}

// A burst of what a fuzzer sends, on every front end, logs no ERROR and no
// WARN: bad Socket.IO frames, packets, handshakes and events; Connect bodies
// that do not decode, keys that are wrong or of another office, calls to no
// one; MCP bodies that are not JSON-RPC, methods out of order, sessions that
// do not exist; random bytes; and notifications an MCP client without an
// event stream cannot be sent (logged at DEBUG: the spec lets a client open
// no stream). ERROR is for the gateway's own faults, and none happened.
// Before, the MCP front end logged ERROR for each protocol mistake and WARN
// for each undeliverable notification to each session.
func TestClientMistakesLogNoError(t *testing.T) {
	ring, err := core.NewKeyRing(
		core.Key{Key: "key-a", ID: "a", Offices: []string{"o"}},
		core.Key{Key: "key-b", ID: "b", Offices: []string{"other"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	rec := &levels{counts: map[slog.Level]int{}}
	g := startGateway(t, gateway.Config{Auth: ring, Logger: slog.New(levelHandler{l: rec})})
	base := g.URL
	ctx := t.Context()
	client := &http.Client{}
	post := func(path, contentType, body string, headers ...string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}

	// An MCP session that never opens its event stream: every change of
	// the office is a notification it cannot be sent.
	mcpInit := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp/o", strings.NewReader(mcpInit))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", "key-a")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s", resp.Status)
	}
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "x-api-key", "key-a", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"}
	post("/mcp/o", "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, mcpHeaders...)

	rng := rand.New(rand.NewPCG(22, 7))
	for round := range 20 {
		// Computers come and go, each a notification to the office.
		pc := dialComputerWithKey(t, base, "key-a", fmt.Sprintf("pc-%d", round), "o")
		_ = pc.c.Emit(smcp.EventUpdateToolList, map[string]any{"computer": pc.name})

		// Socket.IO: a wrong key, then frames and packets of every wrong kind.
		if bad, err := sioclient.Dial(ctx, sioclient.Options{URL: base, APIKey: "nope", NoReconnect: true}); err == nil {
			bad.Close()
		}
		url := "ws" + strings.TrimPrefix(base, "http") + "/socket.io/?EIO=4&transport=websocket"
		if c, _, err := ws.DefaultDialer.Dial(url, nil); err == nil {
			// Connected to the namespace first, so that the events reach the
			// gateway's handlers; the frames that break the connection last.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _, _ = c.ReadMessage() // Engine.IO open
			_ = c.WriteMessage(ws.TextMessage, []byte(`40/smcp,{"api_key":"key-a"}`))
			_, _, _ = c.ReadMessage() // namespace connect
			events := []string{`42/smcp,["no-such-event",1]`, `42/smcp,0["server:join_office",{"role":"king"}]`,
				`42/smcp,1["client:tool_call",{"computer":"ghost"}]`, `42/smcp,2["server:join_office","x"]`,
				`42/smcp,["client:tool_call",{"computer":"pc"}]`, `42/smcp,["server:update_tool_list",{}]`,
				`42/smcp,3["client:tool_call",{"agent":1,"params":[` + strings.Repeat("[", 200) + `]}]`, `42/smcp,4`}
			for _, frame := range events {
				_ = c.WriteMessage(ws.TextMessage, []byte(frame))
			}
			// The answers to the events with an ack id (0-3), then garbage.
			for range 4 {
				if _, _, err := c.ReadMessage(); err != nil {
					break
				}
			}
			for _, frame := range []string{"41/nope,", "4", "9garbage", "42/smcp,["} {
				_ = c.WriteMessage(ws.TextMessage, []byte(frame))
			}
			_ = c.WriteMessage(ws.BinaryMessage, []byte{0xff, 0x00})
			_ = c.Close()
		}
		// Engine.IO polling that is not.
		post("/socket.io/?EIO=4&transport=polling&sid=nope", "text/plain", "40")
		post("/socket.io/?EIO=9&transport=carrier-pigeon", "text/plain", "x")

		// Connect: undecodable bodies, wrong keys, the wrong office, no one to call.
		for _, body := range []string{`{`, `{"office_id":"o","computer":"ghost","tool_name":"t"}`, `{"office_id":"o","params":` + strings.Repeat("[", 300) + `}`, "\x00\x01", ``} {
			post(smcpv1connect.AgentServiceCallToolProcedure, "application/json", body, "x-api-key", "key-a")
			post(smcpv1connect.AgentServiceGetToolsProcedure, "application/proto", body, "x-api-key", "key-a")
		}
		post(smcpv1connect.AgentServiceCallToolProcedure, "application/json", `{"office_id":"o"}`, "x-api-key", "key-b")
		post(smcpv1connect.AgentServiceCallToolProcedure, "application/json", `{"office_id":"o"}`, "x-api-key", "nope")
		post(smcpv1connect.AgentServiceCallToolProcedure, "application/json", `{"office_id":"o"}`, "Authorization", "Basic x")
		post(smcpv1connect.AgentServiceWatchOfficeProcedure, "application/connect+json", "\x00\x00\x00\x00\x05{\"of", "x-api-key", "key-a")
		post("/smcp.v1.AgentService/NoSuchMethod", "application/json", `{}`, "x-api-key", "key-a")

		// Bytes of no format at all, to every front end.
		noise := make([]byte, 1+rng.IntN(300))
		for i := range noise {
			noise[i] = byte(rng.UintN(256))
		}
		post(smcpv1connect.AgentServiceListRoomProcedure, "application/proto", string(noise), "x-api-key", "key-a")
		post("/mcp/o", "application/json", string(noise), mcpHeaders...)
		post("/socket.io/?EIO=4&transport=polling", "text/plain", string(noise))

		// MCP: not JSON-RPC, out of order, unknown sessions and methods.
		for _, body := range []string{`{`, `[]`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"1.0","id":"x","method":"initialize"}`, mcpInit} {
			post("/mcp/o", "application/json", body, "Accept", "application/json, text/event-stream", "x-api-key", "key-a")
		}
		for _, body := range []string{mcpInit, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":3,"method":"no/such"}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ghost__t","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"dpe://nowhere/x"}}`,
			`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"x"}`, `{`} {
			post("/mcp/o", "application/json", body, mcpHeaders...)
		}
		post("/mcp/o", "application/json", mcpInit, "Accept", "application/json, text/event-stream", "x-api-key", "key-a", "Mcp-Session-Id", "no-such-session")
		post("/mcp/o", "application/json", mcpInit, "Accept", "application/json, text/event-stream", "x-api-key", "key-b")
		post("/mcp/o", "application/json", mcpInit, "Accept", "application/json, text/event-stream", "x-api-key", "nope")
		post("/mcp/o", "text/plain", "hello", "Accept", "text/html", "x-api-key", "key-a")
		pc.c.Close()
	}

	counts, lines := rec.snapshot()
	t.Logf("records by level: %v", counts)
	var loud []string
	undeliverable := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "WARN") {
			loud = append(loud, l)
		}
		if strings.HasPrefix(l, "DEBUG calling notifications/") && strings.Contains(l, "rejected by transport") {
			undeliverable++
		}
	}
	if len(loud) > 0 {
		t.Errorf("%d ERROR or WARN lines from client mistakes, e.g.:\n%s", len(loud), strings.Join(loud[:min(len(loud), 20)], "\n"))
	}
	// The burst did what it is meant to: the notifications were tried, and
	// the mistakes reached the front ends (each logs its refusals at INFO).
	if undeliverable == 0 {
		t.Error("no undeliverable notification was tried: the test shows nothing about them")
	}
	for _, want := range []string{"INFO connection refused", "INFO join refused", "DEBUG client event without an ack",
		"INFO rpc refused", "INFO mcp refused", "INFO method invalid during initialization"} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no %q record: that mistake did not reach the gateway", want)
		}
	}
}

// Connections that fail the TLS handshake (plain HTTP to the HTTPS port,
// bytes of no protocol) are the client's doing: net/http reports each one,
// and the gateway logs it at DEBUG, not WARN (it was WARN, one line per
// connection). A real TLS client is still served.
func TestTLSHandshakeFailuresLogAtDebug(t *testing.T) {
	cert, pool := testtls.SelfSigned(t)
	rec := &levels{counts: map[slog.Level]int{}}
	g := startGateway(t, gateway.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Logger: slog.New(levelHandler{l: rec})})
	addr := strings.TrimPrefix(g.URL, "https://")
	for _, junk := range []string{"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", "\x16\x03\x01\x00\x05hello", "\x00\x01\x02\x03\x04\x05"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(junk))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.Copy(io.Discard, c) // until the gateway closes it
		_ = c.Close()
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(g.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a TLS client: %s", resp.Status)
	}
	var handshakes int
	testwait.Within(t, 10*time.Second, "three handshake failures logged", func() bool {
		_, lines := rec.snapshot()
		handshakes = 0
		for _, l := range lines {
			if strings.Contains(l, "TLS handshake error") {
				if !strings.HasPrefix(l, "DEBUG") {
					t.Fatalf("a failed handshake logged as %q", l)
				}
				handshakes++
			}
		}
		return handshakes == 3
	})
	counts, _ := rec.snapshot()
	if counts[slog.LevelWarn]+counts[slog.LevelError] > 0 {
		_, lines := rec.snapshot()
		t.Errorf("WARN or ERROR lines: %q", lines)
	}
}
