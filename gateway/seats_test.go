package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const seatLease = 2 * time.Second

// seatGateway runs a gateway whose seats lapse after seatLease, with an
// operator key ("op-key": no scope) and a scoped agent key.
func seatGateway(t *testing.T) *gateway.Running {
	t.Helper()
	ring, err := core.NewKeyRing(
		core.Key{Key: "op-key", ID: "operator"},
		core.Key{Key: "agent-key", ID: "scoped", Roles: []string{smcp.RoleAgent}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return startGateway(t, gateway.Config{Auth: ring, Core: core.Config{SeatLease: seatLease}})
}

// mcpVanish initializes an MCP session as agent in office and sends
// nothing more: a client that crashed. It returns the session id.
func mcpVanish(t *testing.T, base, office, agent string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ghost","version":"1"}}}`
	resp := mcpPost(t, base, office, agent, "", body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

func mcpPost(t *testing.T, base, office, agent, sid, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/mcp/"+office, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", "agent-key")
	req.Header.Set(rpc.AgentHeader, agent)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

func seatAPI(base, key, agent string) smcpv1connect.AgentServiceClient {
	return smcpv1connect.NewAgentServiceClient(http.DefaultClient, base,
		connecttest.Headers("x-api-key", key, rpc.AgentHeader, agent))
}

// wantHolder checks that a refusal names the holder, its front end, since
// when it holds the seat and when the seat lapses, and that it lapses no
// later than the lease after it was taken (plus 2 s: both times are in
// whole seconds, each cut by up to one).
func wantHolder(t *testing.T, err error, holder, front string) {
	t.Helper()
	since, lapses := refusedBy(t, err, holder, front)
	if d := lapses.Sub(since); d < 0 || d > seatLease+2*time.Second {
		t.Fatalf("refusal %q: lapses %v after it was taken, want at most the lease (%v) (+2 s of rounding)", err, d, seatLease)
	}
}

// refusedBy checks that a refusal names the holder and its front end, and
// returns since when it holds the seat and when it lapses.
func refusedBy(t *testing.T, err error, holder, front string) (since, lapses time.Time) {
	t.Helper()
	if err == nil {
		t.Fatalf("taken, want refused naming %s", holder)
	}
	msg := err.Error()
	if !strings.Contains(msg, `"`+holder+`" over `+front+" since ") || !strings.Contains(msg, "lapses at ") {
		t.Fatalf("refusal %q does not name %q over %s with its lapse", msg, holder, front)
	}
	field := func(after string) time.Time {
		v := msg[strings.Index(msg, after)+len(after):]
		v, _, _ = strings.Cut(v, " ")
		v = strings.TrimRight(v, ",")
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t.Fatalf("refusal %q: %s: %v", msg, after, err)
		}
		return at
	}
	return field(" since "), field("lapses at ")
}

// A client that initializes an MCP session and vanishes holds the office
// only for the seat's lease: until then the refusals name it (Socket.IO,
// Connect), after it another agent takes the office, over Socket.IO and
// over the Connect API.
func TestVanishedMCPClientFreesTheSeat(t *testing.T) {
	g := seatGateway(t)
	ctx := longCtx(t)

	mcpVanish(t, g.URL, "o", "ghost")
	taken := time.Now()
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "agent-key", Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	wantHolder(t, bob.JoinOffice(ctx, smcp.RoleAgent, "bob", "o"), "ghost", "mcp")
	_, err = seatAPI(g.URL, "agent-key", "carol").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("RPC while the ghost holds the seat: %v, want permission_denied", err)
	}
	wantHolder(t, err, "ghost", "mcp")

	// Polled: the lapse is checked exactly by the refusal above.
	testwait.Within(t, 30*time.Second, "a Socket.IO agent takes the office after the lease", func() bool {
		return bob.JoinOffice(ctxT(t), smcp.RoleAgent, "bob", "o") == nil
	})
	t.Logf("Socket.IO agent took the office %v after the MCP client vanished (lease %v)", time.Since(taken).Round(10*time.Millisecond), seatLease)
	bob.Close()

	mcpVanish(t, g.URL, "o2", "ghost")
	taken = time.Now()
	carol := seatAPI(g.URL, "agent-key", "carol")
	testwait.Within(t, 30*time.Second, "an RPC agent takes the office after the lease", func() bool {
		_, err := carol.ListRoom(ctxT(t), &smcpv1.ListRoomRequest{OfficeId: "o2"})
		return err == nil
	})
	t.Logf("RPC agent took the office %v after the MCP client vanished (lease %v)", time.Since(taken).Round(10*time.Millisecond), seatLease)
}

// An MCP session whose seat lapsed takes it again on its next request if
// it is free; if another agent has it, the request is refused naming it.
func TestLapsedMCPSessionTakesItsSeatAgainIfFree(t *testing.T) {
	g := seatGateway(t)
	ctx := longCtx(t)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	sid := mcpVanish(t, g.URL, "o", "ghost")
	time.Sleep(seatLease + 500*time.Millisecond)
	if resp := mcpPost(t, g.URL, "o", "ghost", sid, list); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list after the lapse: %d", resp.StatusCode)
	}
	// It holds the seat again.
	_, err := seatAPI(g.URL, "agent-key", "carol").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
	refusedBy(t, err, "ghost", "mcp")

	// Lapsed again, and taken by a Socket.IO agent meanwhile.
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "agent-key", Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	testwait.Within(t, 30*time.Second, "bob takes the lapsed seat", func() bool {
		return bob.JoinOffice(ctxT(t), smcp.RoleAgent, "bob", "o") == nil
	})
	body := mcpCall(t, g.URL, "o", "ghost", sid, list)
	if !strings.Contains(body, `already has an agent: \"bob\" over socket.io since`) {
		t.Fatalf("tools/list of the session whose seat bob took: %s", body)
	}
}

// mcpCall posts body in session sid and returns the answer's body.
func mcpCall(t *testing.T, base, office, agent, sid, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/mcp/"+office, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", "agent-key")
	req.Header.Set(rpc.AgentHeader, agent)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An operator evicts whoever holds a seat: an RPC watch stream ends with
// Aborted saying so, a Socket.IO agent is disconnected, an MCP session is
// closed; the seat is free at once. A scoped key may not evict.
func TestOperatorEvictsTheSeat(t *testing.T) {
	g := seatGateway(t)
	ctx := longCtx(t)
	op := seatAPI(g.URL, "op-key", "operator")

	// A watch stream holds the seat.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := seatAPI(g.URL, "agent-key", "carol").WatchOffice(wctx, &smcpv1.WatchOfficeRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	testwait.Within(t, 20*time.Second, "the watch holds the seat", func() bool {
		_, err := seatAPI(g.URL, "agent-key", "dave").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
		return err != nil
	})
	_, err = seatAPI(g.URL, "agent-key", "carol").EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"})
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("evict with a scoped key: %v, want permission_denied", err)
	}
	// Longer than a lease: the open stream keeps its seat.
	time.Sleep(seatLease + time.Second)
	_, err = seatAPI(g.URL, "agent-key", "dave").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
	refusedBy(t, err, "carol", "rpc")

	res, err := op.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.GetHolders(); len(h) != 1 || h[0].GetAgent() != "carol" || h[0].GetFront() != "rpc" || h[0].GetSince() == "" {
		t.Fatalf("evicted %v, want carol over rpc", h)
	}
	for stream.Receive() {
	}
	if err := stream.Err(); connect.CodeOf(err) != connect.CodeAborted || !strings.Contains(err.Error(), "seat evicted by operator operator at ") {
		t.Fatalf("evicted stream ended with %v, want aborted: seat evicted by operator", err)
	}
	if _, err := seatAPI(g.URL, "agent-key", "dave").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"}); err != nil {
		t.Fatalf("another agent after the eviction: %v", err)
	}

	// A Socket.IO agent is disconnected.
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "agent-key", Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if err := bob.JoinOffice(ctx, smcp.RoleAgent, "bob", "o"); err != nil {
		t.Fatal(err)
	}
	if res, err := op.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"}); err != nil || len(res.GetHolders()) != 1 || res.GetHolders()[0].GetFront() != "socket.io" {
		t.Fatalf("evict bob: %v, %v", res, err)
	}
	select {
	case <-bob.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("evicted Socket.IO agent still connected")
	}

	// An MCP session is closed: its next request finds no session.
	sid := mcpVanish(t, g.URL, "o", "ghost")
	if res, err := op.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"}); err != nil || len(res.GetHolders()) != 1 || res.GetHolders()[0].GetFront() != "mcp" {
		t.Fatalf("evict the MCP session: %v, %v", res, err)
	}
	testwait.Within(t, 20*time.Second, "the evicted MCP session is closed", func() bool {
		return mcpPost(t, g.URL, "o", "ghost", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`).StatusCode == http.StatusNotFound
	})
	if _, err := seatAPI(g.URL, "agent-key", "dave").ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"}); err != nil {
		t.Fatalf("another agent after the MCP session's eviction: %v", err)
	}
}

// longCtx outlasts the waits for lapsing seats.
func longCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// In a cluster on a real redis-server, a seat taken on one node lapses,
// is named in refusals and is evicted from another: the holder and its
// lapse are in Redis, and the eviction reaches the holder's node.
func TestClusterSeatsAcrossNodes(t *testing.T) {
	rd := systest.RedisProcess(t)
	nodes := make([]*gateway.Running, 2)
	for i := range nodes {
		nodes[i] = startGateway(t, gateway.Config{Redis: rd.URL, NodeID: fmt.Sprintf("n%d", i), HeartbeatTTL: clusterTTL,
			Logger: testLogger, Core: core.Config{SeatLease: seatLease}})
	}
	ctx := longCtx(t)
	// The first node settles the registry for a TTL: joins wait meanwhile.
	for _, n := range nodes {
		api := seatAPI(n.URL, "", "settle")
		testwait.Within(t, 20*time.Second, "registry settled", func() bool {
			_, err := api.ListRoom(ctxT(t), &smcpv1.ListRoomRequest{OfficeId: "settle"})
			return err == nil
		})
	}
	mcpVanish(t, nodes[0].URL, "o", "ghost")
	carol := seatAPI(nodes[1].URL, "", "carol")
	_, err := carol.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
	wantHolder(t, err, "ghost", "mcp")
	testwait.Within(t, 30*time.Second, "an RPC agent on node 2 takes the office after the lease", func() bool {
		_, err := carol.ListRoom(ctxT(t), &smcpv1.ListRoomRequest{OfficeId: "o"})
		return err == nil
	})

	// A watch on node 1, evicted from node 2.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := seatAPI(nodes[0].URL, "", "carol").WatchOffice(wctx, &smcpv1.WatchOfficeRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	dave := seatAPI(nodes[1].URL, "", "dave")
	testwait.Within(t, 20*time.Second, "the watch on node 1 holds the seat", func() bool {
		_, err := dave.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
		return err != nil && strings.Contains(err.Error(), `"carol" over rpc`)
	})
	res, err := dave.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"})
	if err != nil || len(res.GetHolders()) != 1 || res.GetHolders()[0].GetNode() != "n0" {
		t.Fatalf("evict from node 2: %v, %v", res, err)
	}
	for stream.Receive() {
	}
	if err := stream.Err(); connect.CodeOf(err) != connect.CodeAborted || !strings.Contains(err.Error(), "seat evicted by operator") {
		t.Fatalf("stream on node 1 evicted from node 2 ended with %v", err)
	}

	// A Socket.IO agent on node 1, evicted from node 2.
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: nodes[0].URL, Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	testwait.Within(t, 20*time.Second, "bob joins on node 1", func() bool {
		return bob.JoinOffice(ctxT(t), smcp.RoleAgent, "bob", "o") == nil
	})
	if res, err := dave.EvictAgent(ctx, &smcpv1.EvictAgentRequest{OfficeId: "o"}); err != nil || len(res.GetHolders()) != 1 {
		t.Fatalf("evict bob from node 2: %v, %v", res, err)
	}
	select {
	case <-bob.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("Socket.IO agent on node 1 evicted from node 2 still connected")
	}
}
