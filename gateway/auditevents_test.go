package gateway_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Joins, leaves, seat evictions and refused joins are recorded once each,
// with who, where and which agent or computer: a Socket.IO computer's and
// agent's joins and the agent's leave, a refused join (the key may not
// act as a computer), an MCP session's seat, the operator's evictions of
// the Socket.IO agent and of the MCP session (neither also recorded as a
// leave), and the seat of an MCP session its client ended.
func TestAuditRecordsJoinLeaveEvict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := core.NewKeyRing(
		core.Key{Key: "op-key", ID: "operator"},
		core.Key{Key: "agent-key", ID: "scoped", Roles: []string{smcp.RoleAgent}},
		core.Key{Key: "full-key", ID: "full", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring, Core: core.Config{SeatLease: seatLease},
		Audit: gateway.AuditConfig{Sinks: []audit.Sink{sink}}, Logger: testLogger})
	ctx := longCtx(t)
	dialComputerWithKey(t, g.URL, "full-key", "pc", "o")

	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "agent-key", Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if err := bob.JoinOffice(ctx, smcp.RoleComputer, "bob", "o"); err == nil {
		t.Fatal("an agent key joined as a computer")
	}
	if err := bob.JoinOffice(ctx, smcp.RoleAgent, "bob", "o"); err != nil {
		t.Fatal(err)
	}
	if err := bob.LeaveOffice(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	if err := bob.JoinOffice(ctx, smcp.RoleAgent, "bob", "o"); err != nil {
		t.Fatal(err)
	}
	op := seatAPI(g.URL, "op-key", "operator")
	if _, err := op.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bob.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("evicted Socket.IO agent still connected")
	}
	sid := mcpVanish(t, g.URL, "o", "ghost")
	if _, err := op.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"}); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 20*time.Second, "the evicted MCP session is closed", func() bool {
		return mcpPost(t, g.URL, "o", "ghost", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`).StatusCode == http.StatusNotFound
	})
	// An MCP session its client ends (DELETE) releases its seat.
	sid = mcpVanish(t, g.URL, "o", "carol")
	del, err := http.NewRequestWithContext(ctx, http.MethodDelete, g.URL+"/mcp/o", nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("x-api-key", "agent-key")
	del.Header.Set(rpc.AgentHeader, "carol")
	del.Header.Set("Mcp-Session-Id", sid)
	del.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("DELETE of the MCP session: %d", resp.StatusCode)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Event, Front, Principal, Office, Agent, Computer, Outcome string
			Node                                                      string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		switch r.Event {
		case core.EventJoin, core.EventLeave, core.EventEvict:
		default:
			continue // routed requests, the MCP session's own listings
		}
		if r.Computer == "pc" && r.Event == core.EventLeave {
			continue // the gateway's stop may or may not close pc before the audit's
		}
		got = append(got, strings.Join([]string{r.Event, r.Front, r.Principal, r.Office, r.Agent, r.Computer, r.Outcome}, " "))
	}
	want := []string{
		"join socket.io full o  pc ok",
		"join socket.io scoped o  bob 403",
		"join socket.io scoped o bob  ok",
		"leave socket.io scoped o bob  ok",
		"join socket.io scoped o bob  ok",
		"evict socket.io operator o bob  ok",
		"join mcp scoped o ghost  ok",
		"evict mcp operator o ghost  ok",
		"join mcp scoped o carol  ok",
		"leave mcp scoped o carol  ok",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit of joins, leaves and evictions:\n got %q\nwant %q\n%s", got, want, b)
	}
}

// With HashArgs and HashResults, a tool call's record holds the SHA-256
// of its arguments and of the answer its agent got (byte for byte), never
// their values.
func TestAuditHashesArgsAndResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(audit.FileOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Audit: gateway.AuditConfig{Sinks: []audit.Sink{sink}, HashArgs: true, HashResults: true},
		Logger: testLogger})
	dialComputerWithKey(t, g.URL, "", "pc", "o")
	// A raw agent: the answer's bytes as the gateway sent them.
	bot := dialRaw(t, g.URL, nil)
	bot.join(smcp.RoleAgent, "bot", "o")
	args := json.RawMessage(`{"text":"secret-arg"}`)
	ack := bot.wait(bot.emit(smcp.EventToolCall, `{"agent":"bot","req_id":"r1","computer":"pc","tool_name":"echo","params":`+
		string(args)+`,"timeout":20}`), 20*time.Second)
	res, ok := bytes.CutPrefix(ack, []byte("["))
	if res, ok = bytes.CutSuffix(res, []byte("]")); !ok || !bytes.Contains(res, []byte(`"content"`)) {
		t.Fatalf("ack %s", ack)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret-arg") {
		t.Fatalf("a record holds the argument's value:\n%s", b)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			RequestID    string `json:"request_id"`
			ArgsSHA256   string `json:"args_sha256"`
			ResultSHA256 string `json:"result_sha256"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.RequestID != "r1" {
			continue
		}
		if r.ArgsSHA256 != audit.Hash(args) || r.ResultSHA256 != audit.Hash(res) {
			t.Fatalf("record %s\nwant args_sha256 %s, result_sha256 %s of %s", line, audit.Hash(args), audit.Hash(res), res)
		}
		return
	}
	t.Fatalf("no record of the call:\n%s", b)
}
