package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Keys of the isolation test: each key may enter one office only.
const (
	keyA = "key-for-office-a-3f9c"
	keyB = "key-for-office-b-77d1"
)

func isolatedGateway(t *testing.T) *gateway.Running {
	t.Helper()
	ring, err := core.NewKeyRing(
		core.Key{Key: keyA, ID: "a", Offices: []string{"A"}},
		core.Key{Key: keyB, ID: "b", Offices: []string{"B"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return startGateway(t, gateway.Config{Auth: ring})
}

func dialKeyed(t *testing.T, url, key, role, name, office string) *sioclient.Client {
	t.Helper()
	// 0.4, whose profile has every event of the table.
	c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: url, APIKey: key, Logger: testLogger, Version: smcp.V04.Full()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if office != "" {
		if err := c.JoinOffice(ctxT(t), role, name, office); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// recorder counts every event a client receives, notifications and requests.
type recorder struct {
	ch chan string
}

func record(c *sioclient.Client, events ...string) *recorder {
	r := &recorder{ch: make(chan string, 256)}
	for _, ev := range events {
		c.On(ev, func(json.RawMessage) { r.ch <- ev })
	}
	return r
}

func (r *recorder) drain() []string {
	var out []string
	for {
		select {
		case ev := <-r.ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}

var allNotifications = []string{
	smcp.NotifyEnterOffice, smcp.NotifyLeaveOffice, smcp.NotifyUpdateConfig, smcp.NotifyUpdateToolList,
	smcp.NotifyUpdateDesktop, smcp.NotifyUpdateFinder, smcp.NotifyToolCallCancel, smcp.NotifyUpdateSkills,
}

// Every path from office B towards office A is refused or stays in office B,
// on both front ends, and nothing of it reaches a member of office A.
func TestRoomIsolationEveryPath(t *testing.T) {
	g := isolatedGateway(t)
	// One deadline for the whole walk (~10 dials, ~70 requests), as a hang
	// guard generous enough for -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Office A: agent alice and computer pc-a, with a real computer that
	// records every request it gets.
	pcAConn := dialKeyed(t, g.URL, keyA, smcp.RoleComputer, "pc-a", "")
	seenByPCA := &recorder{ch: make(chan string, 256)}
	for _, ev := range smcp.EventNames(smcp.Routed) {
		pcAConn.Handle(ev, func(context.Context, json.RawMessage) (any, error) {
			seenByPCA.ch <- ev
			return map[string]any{}, nil
		})
	}
	notesPCA := record(pcAConn, allNotifications...)
	if err := pcAConn.JoinOffice(ctx, smcp.RoleComputer, "pc-a", "A"); err != nil {
		t.Fatal(err)
	}
	alice := dialKeyed(t, g.URL, keyA, smcp.RoleAgent, "alice", "")
	notesAlice := record(alice, allNotifications...)
	if err := alice.JoinOffice(ctx, smcp.RoleAgent, "alice", "A"); err != nil {
		t.Fatal(err)
	}

	// Office B: agent bob and computer pc-b (same name space, other office).
	pcB := dialKeyed(t, g.URL, keyB, smcp.RoleComputer, "pc-b", "B")
	pcB.Handle(smcp.EventGetTools, func(context.Context, json.RawMessage) (any, error) { return map[string]any{"tools": []any{}}, nil })
	bob := dialKeyed(t, g.URL, keyB, smcp.RoleAgent, "bob", "B")
	// Office A's own life so far (alice entering) is not under test.
	select {
	case ev := <-notesPCA.ch:
		if ev != smcp.NotifyEnterOffice {
			t.Fatalf("pc-a got %s", ev)
		}
	case <-ctx.Done():
		t.Fatal("pc-a was not told of alice")
	}

	// Socket.IO, every event from office B naming office A or its members.
	type sioCase struct {
		name  string
		from  *sioclient.Client
		event string
		body  map[string]any
		code  int // 0: fire and forget, no answer checked
	}
	var cases []sioCase
	for _, ev := range smcp.EventNames(smcp.Routed) {
		body := map[string]any{"agent": "bob", "req_id": "x", "computer": "pc-a", "tool_name": "t", "timeout": 5, "uri": "dpe://h/d"}
		cases = append(cases, sioCase{ev + " to a computer of office A", bob, ev, body, smcp.CodeNotFound})
		spoof := map[string]any{"agent": "alice", "req_id": "x", "computer": "pc-a", "tool_name": "t", "timeout": 5, "uri": "dpe://h/d"}
		cases = append(cases, sioCase{ev + " as office A's agent", bob, ev, spoof, smcp.CodeForbidden})
		cases = append(cases, sioCase{ev + " from a computer", pcB, ev, body, smcp.CodeForbidden})
	}
	cases = append(cases,
		sioCase{"list_room of office A", bob, smcp.EventListRoom, map[string]any{"agent": "bob", "req_id": "x", "office_id": "A"}, smcp.CodeForbidden},
		sioCase{"list_room of office A by a computer", pcB, smcp.EventListRoom, map[string]any{"agent": "bob", "req_id": "x", "office_id": "A"}, smcp.CodeForbidden},
		// No ack from 0.3 on: what it does not do is checked at the end.
		sioCase{"tool_call_cancel as alice", bob, smcp.EventToolCallCancel, map[string]any{"agent": "alice", "req_id": "x"}, 0},
		sioCase{"tool_call_cancel from a computer", pcB, smcp.EventToolCallCancel, map[string]any{"agent": "bob", "req_id": "x"}, 0},
		sioCase{"leave office A", bob, smcp.EventLeaveOffice, map[string]any{"office_id": "A"}, -1},
	)
	for _, e := range smcp.Events(smcp.Server) {
		if e.Notifies == "" || e.Name == smcp.EventToolCallCancel {
			continue
		}
		ev := e.Name
		// An update from a computer of office B naming pc-a is broadcast in
		// office B under pc-b's own name; from an agent it is refused.
		cases = append(cases,
			sioCase{ev + " naming pc-a", pcB, ev, map[string]any{"computer": "pc-a"}, 0},
			sioCase{ev + " from an agent", bob, ev, map[string]any{"computer": "pc-a"}, smcp.CodeForbidden})
	}
	for _, tc := range cases {
		t.Run("sio/"+tc.name, func(t *testing.T) {
			switch {
			case tc.code > 0:
				_, err := tc.from.Request(ctx, tc.event, tc.body)
				wantCode(t, err, tc.code)
			case tc.code < 0: // leave ack: [false, reason]
				args, err := tc.from.RequestArgs(ctx, tc.event, tc.body)
				if err != nil || len(args) == 0 || string(args[0]) != "false" {
					t.Fatalf("leave of another office: %s %v", args, err)
				}
			default:
				if err := tc.from.Emit(tc.event, tc.body); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// Joining office A is refused by the key (both roles), so is a second
	// agent with office A's key.
	for _, role := range []string{smcp.RoleAgent, smcp.RoleComputer} {
		c := dialKeyed(t, g.URL, keyB, "", "", "")
		if err := c.JoinOffice(ctx, role, "intruder", "A"); err == nil {
			t.Fatalf("key of office B joined office A as %s", role)
		}
	}
	if err := dialKeyed(t, g.URL, keyA, "", "", "").JoinOffice(ctx, smcp.RoleAgent, "mallory", "A"); err == nil {
		t.Fatal("a second agent joined office A")
	}

	// RPC, every procedure, with office B's key naming office A, and with
	// office B's own office naming office A's computer.
	rpcB := smcpv1connect.NewAgentServiceClient(http.DefaultClient, g.URL, connecttest.Headers("x-api-key", keyB))
	type rpcCase struct {
		name string
		call func(office, computer string) error
	}
	rpcs := []rpcCase{
		{"ListRoom", func(o, _ string) error {
			_, err := rpcB.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: o})
			return err
		}},
		{"GetTools", func(o, c string) error {
			_, err := rpcB.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: o, Computer: c})
			return err
		}},
		{"GetConfig", func(o, c string) error {
			_, err := rpcB.GetConfig(ctx, &smcpv1.GetConfigRequest{OfficeId: o, Computer: c})
			return err
		}},
		{"CallTool", func(o, c string) error {
			_, err := rpcB.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: o, Computer: c, ToolName: "t", Timeout: 5})
			return err
		}},
		{"CancelToolCall", func(o, _ string) error {
			_, err := rpcB.CancelToolCall(ctx, &smcpv1.CancelToolCallRequest{OfficeId: o, ReqId: "x"})
			return err
		}},
		{"GetDesktop", func(o, c string) error {
			_, err := rpcB.GetDesktop(ctx, &smcpv1.GetDesktopRequest{OfficeId: o, Computer: c})
			return err
		}},
		{"GetFinder", func(o, c string) error {
			_, err := rpcB.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: o, Computer: c})
			return err
		}},
		{"ReadResource", func(o, c string) error {
			_, err := rpcB.ReadResource(ctx, &smcpv1.ReadResourceRequest{OfficeId: o, Computer: c, Uri: "dpe://h/d"})
			return err
		}},
		{"WatchOffice", func(o, _ string) error {
			stream, err := rpcB.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: o})
			if err != nil {
				return err
			}
			defer func() { _ = stream.Close() }()
			stream.Receive()
			return stream.Err()
		}},
	}
	for _, rc := range rpcs {
		t.Run("rpc/"+rc.name+" in office A", func(t *testing.T) {
			if code := connect.CodeOf(rc.call("A", "pc-a")); code != connect.CodePermissionDenied {
				t.Fatalf("code %v, want PermissionDenied", code)
			}
		})
		if rc.name == "ListRoom" || rc.name == "CancelToolCall" || rc.name == "WatchOffice" {
			continue // they name no computer
		}
		t.Run("rpc/"+rc.name+" to office A's computer from office B", func(t *testing.T) {
			// Office B's agent is bob on Socket.IO: the RPC caller may not
			// act as another agent there either.
			if code := connect.CodeOf(rc.call("B", "pc-a")); code != connect.CodePermissionDenied && code != connect.CodeNotFound {
				t.Fatalf("code %v", code)
			}
		})
	}
	// With bob gone, office B's RPC agent reaches pc-b but never pc-a.
	bob.Close()
	testwait.Until(t, "office B free", func() bool {
		_, err := rpcB.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "B", Computer: "pc-b"})
		return err == nil
	})
	for _, rc := range rpcs {
		if rc.name == "ListRoom" || rc.name == "CancelToolCall" || rc.name == "WatchOffice" {
			continue
		}
		if code := connect.CodeOf(rc.call("B", "pc-a")); code != connect.CodeNotFound {
			t.Fatalf("rpc/%s to pc-a from office B: code %v, want NotFound", rc.name, code)
		}
	}
	members, err := rpcB.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "B"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.GetSessions() {
		if m.GetOfficeId() != "B" || strings.HasSuffix(m.GetName(), "-a") || m.GetName() == "alice" {
			t.Fatalf("office B's list shows %v", m)
		}
	}

	// Office A is intact and heard nothing: a last request from alice is
	// answered, and by then anything sent earlier would have arrived.
	if _, err := alice.Request(ctx, smcp.EventGetTools, map[string]any{"agent": "alice", "req_id": "last", "computer": "pc-a"}); err != nil {
		t.Fatal(err)
	}
	if got := seenByPCA.drain(); !slices.Equal(got, []string{smcp.EventGetTools}) {
		t.Fatalf("pc-a received %v, want only alice's get_tools", got)
	}
	if got := notesPCA.drain(); len(got) != 0 {
		t.Fatalf("pc-a was notified of office B's traffic: %v", got)
	}
	if got := notesAlice.drain(); len(got) != 0 {
		t.Fatalf("alice was notified of office B's traffic: %v", got)
	}
}
