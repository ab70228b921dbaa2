package rpc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestRefusals checks identity, isolation and error mapping over every
// protocol: each refusal has its Connect code and the SMCP code as detail.
func TestRefusals(t *testing.T) {
	g := startGateway(t)
	pcA := startComputer(t, g, "pc-a", officeA)
	pcB := startComputer(t, g, "pc-b", officeB)
	// A Socket.IO agent holds office B.
	ctx := testContext(t)
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: keyOfficeB, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bob.Close)
	if err := bob.JoinOffice(ctx, smcp.RoleAgent, "bob", officeB); err != nil {
		t.Fatal(err)
	}

	type call func(context.Context, smcpv1connect.AgentServiceClient) error
	listA := func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
		_, err := cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeA})
		return err
	}
	tool := func(office, computer, name string, timeout int32) call {
		return func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
			_, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: office, Computer: computer, ToolName: name, Timeout: timeout})
			return err
		}
	}
	read := func(uri string) call {
		return func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
			_, err := cl.ReadResource(ctx, &smcpv1.ReadResourceRequest{OfficeId: officeA, Computer: "pc-a", Uri: uri})
			return err
		}
	}
	watch := func(officeID string) call {
		return func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
			stream, err := cl.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: officeID})
			if err != nil {
				return err
			}
			defer stream.Close()
			for stream.Receive() {
			}
			return stream.Err()
		}
	}
	cases := []struct {
		name     string
		headers  []string
		call     call
		code     connect.Code
		smcpCode int
	}{
		{"no key", nil, listA, connect.CodeUnauthenticated, smcp.CodeUnauthenticated},
		{"wrong key", []string{"x-api-key", "nope"}, listA, connect.CodeUnauthenticated, smcp.CodeUnauthenticated},
		{"wrong bearer", []string{"authorization", "Bearer nope"}, listA, connect.CodeUnauthenticated, smcp.CodeUnauthenticated},
		{"not bearer", []string{"authorization", "Basic " + keyAgent}, listA, connect.CodeUnauthenticated, smcp.CodeUnauthenticated},
		{"two different keys", []string{"x-api-key", keyAgent, "authorization", "Bearer " + keyAlice}, listA, connect.CodeUnauthenticated, smcp.CodeUnauthenticated},
		{"computer key", []string{"x-api-key", keyComputer}, listA, connect.CodePermissionDenied, smcp.CodeForbidden},
		{"office not allowed", []string{"x-api-key", keyOfficeB}, tool(officeA, "pc-a", "echo", 0), connect.CodePermissionDenied, smcp.CodeForbidden},
		{"name not allowed", []string{"x-api-key", keyAlice, "x-smcp-agent", "mallory"}, listA, connect.CodePermissionDenied, smcp.CodeForbidden},
		{"office held on Socket.IO", []string{"x-api-key", keyAgent}, tool(officeB, "pc-b", "echo", 0), connect.CodePermissionDenied, smcp.CodeForbidden},
		{"computer of another office", []string{"x-api-key", keyAgent}, tool(officeA, "pc-b", "echo", 0), connect.CodeNotFound, smcp.CodeNotFound},
		{"no office", []string{"x-api-key", keyAgent}, tool("", "pc-a", "echo", 0), connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"timeout too long", []string{"x-api-key", keyAgent}, tool(officeA, "pc-a", "echo", 3601), connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"negative timeout", []string{"x-api-key", keyAgent}, tool(officeA, "pc-a", "echo", -1), connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"no tool name", []string{"x-api-key", keyAgent}, tool(officeA, "pc-a", "", 0), connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"unknown tool (computer's 404)", []string{"x-api-key", keyAgent}, tool(officeA, "pc-a", "nope", 0), connect.CodeNotFound, smcp.CodeNotFound},
		{"finder limit (computer's 400)", []string{"x-api-key", keyAgent}, func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
			_, err := cl.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: officeA, Computer: "pc-a", Limit: proto.Int32(0)})
			return err
		}, connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"no uri", []string{"x-api-key", keyAgent}, read(""), connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"document not found", []string{"x-api-key", keyAgent}, read("dpe://docs/nope"), connect.CodeNotFound, smcp.CodeDocumentNotFound},
		{"page out of range", []string{"x-api-key", keyAgent}, read("dpe://docs/rpt-2026/pages/9"), connect.CodeOutOfRange, smcp.CodePageOutOfRange},
		{"invalid dpe uri", []string{"x-api-key", keyAgent}, read("dpe:/bad"), connect.CodeInvalidArgument, smcp.CodeInvalidDPEURI},
		{"cancel without req_id", []string{"x-api-key", keyAgent}, func(ctx context.Context, cl smcpv1connect.AgentServiceClient) error {
			_, err := cl.CancelToolCall(ctx, &smcpv1.CancelToolCallRequest{OfficeId: officeA})
			return err
		}, connect.CodeInvalidArgument, smcp.CodeBadRequest},
		{"watch office not allowed", []string{"x-api-key", keyOfficeB}, watch(officeA), connect.CodePermissionDenied, smcp.CodeForbidden},
		{"watch office held on Socket.IO", []string{"x-api-key", keyAgent}, watch(officeB), connect.CodePermissionDenied, smcp.CodeForbidden},
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cl := newClient(t, g, p, c.headers...)
					wantCode(t, c.call(testContext(t), cl), c.code, c.smcpCode)
				})
			}
		})
	}
	// Nothing refused before routing ever reached a computer.
	pcB.mu.Lock()
	if len(pcB.requests) != 0 {
		t.Errorf("pc-b received %d requests from callers that named another office or were refused", len(pcB.requests))
	}
	pcB.mu.Unlock()
	pcA.mu.Lock()
	for _, r := range pcA.requests {
		if r.event == smcp.EventToolCall && reqID(r.payload) == "" {
			t.Errorf("pc-a received a tool call without req_id: %s", r.payload)
		}
	}
	pcA.mu.Unlock()
}

// TestCallToolComputerGone: the computer leaves while a call is in flight;
// the caller is answered at once with Unavailable and the SMCP 404 detail.
func TestCallToolComputerGone(t *testing.T) {
	g := startGateway(t)
	comp := startComputer(t, g, "pc-gone", officeA)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			if comp == nil {
				comp = startComputer(t, g, "pc-gone", officeA)
			}
			cl := newClient(t, g, p, "x-api-key", keyAgent)
			errc := make(chan error, 1)
			go func() {
				_, err := cl.CallTool(testContext(t), &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-gone", ToolName: "hang", Timeout: 3600})
				errc <- err
			}()
			comp.waitFor(t, "the call", func() bool { return len(comp.requests) > 0 })
			comp.c.Close()
			comp = nil
			wantCode(t, <-errc, connect.CodeUnavailable, smcp.CodeNotFound)
			// The caller is answered as soon as the computer is gone, its
			// name freed in the registry just after: the next subtest joins
			// under the same name once it is.
			testwait.Within(t, 10*time.Second, "pc-gone to leave the room after it left", func() bool {
				room, err := cl.ListRoom(testContext(t), &smcpv1.ListRoomRequest{OfficeId: officeA})
				if err != nil {
					return false
				}
				for _, s := range room.GetSessions() {
					if s.GetName() == "pc-gone" {
						return false
					}
				}
				return true
			})
		})
	}
}

// TestCallToolTimeout: the gateway's own timeout answer is a result, as on
// Socket.IO.
func TestCallToolTimeout(t *testing.T) {
	g := startGateway(t)
	startComputer(t, g, "pc-slow", officeA)
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)
	res, err := cl.CallTool(testContext(t), &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-slow", ToolName: "hang", Timeout: 1})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !res.GetResult().GetIsError() || !res.GetResult().GetMeta().GetFields()["a2c_timeout"].GetBoolValue() {
		t.Fatalf("want the gateway's timeout result, got %v", res)
	}
}

// TestCallToolDeadline: the RPC deadline bounds the call, and the computer
// is asked to cancel the abandoned call.
func TestCallToolDeadline(t *testing.T) {
	g := startGateway(t)
	comp := startComputer(t, g, "pc-d", officeA)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cl := newClient(t, g, p, "x-api-key", keyAgent)
			ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
			defer cancel()
			_, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-d", ToolName: "hang", ReqId: "deadline-" + p.name})
			if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
				t.Fatalf("want DeadlineExceeded, got %v", err)
			}
			comp.waitFor(t, "the cancel of the abandoned call", func() bool {
				for _, c := range comp.cancels {
					if c.GetReqId() == "deadline-"+p.name && c.GetAgent() == rpc.DefaultAgent {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestRequestLimits: the key is checked before the body is read, and a body
// over the limit is refused.
func TestRequestLimits(t *testing.T) {
	g := startGateway(t, func(c *gateway.Config) { c.RPC.MaxRequestBytes = 1024 })
	startComputer(t, g, "pc-l", officeA)
	big, _ := structpb.NewStruct(map[string]any{"text": strings.Repeat("x", 4096)})
	req := &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-l", ToolName: "echo", Params: big}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			_, err := newClient(t, g, p, "x-api-key", "nope").CallTool(testContext(t), req)
			wantCode(t, err, connect.CodeUnauthenticated, smcp.CodeUnauthenticated)
			_, err = newClient(t, g, p, "x-api-key", keyAgent).CallTool(testContext(t), req)
			if connect.CodeOf(err) != connect.CodeResourceExhausted {
				t.Fatalf("oversized request: %v", err)
			}
		})
	}
}

// The case on a live gateway: alice (a key fixed to that name) is
// in office A over Socket.IO; a key without a fixed name calling as "alice"
// is refused 403 on every protocol, so it can neither share her office nor
// cancel her calls (no cancel reaches the office's computer). Socket.IO
// refuses the same name the same way (one rule in the core).
func TestNameOfAnotherKeyRefused(t *testing.T) {
	g := startGateway(t)
	pc := startComputer(t, g, "pc-a", officeA)
	ctx := testContext(t)
	alice, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: keyAlice, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alice.Close)
	if err := alice.JoinOffice(ctx, smcp.RoleAgent, "alice", officeA); err != nil {
		t.Fatal(err)
	}
	for _, p := range protocols {
		cl := newClient(t, g, p, "x-api-key", keyAgent, rpc.AgentHeader, "alice")
		_, err := cl.CancelToolCall(ctx, &smcpv1.CancelToolCallRequest{OfficeId: officeA, ReqId: "alice-call"})
		if e, ok := rpc.SMCPError(err); connect.CodeOf(err) != connect.CodePermissionDenied || !ok || !strings.Contains(e.Message, "belongs to another key") {
			t.Errorf("%s: cancel as alice with a free key: %v", p.name, err)
		}
		_, err = cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeA})
		if connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s: list office A as alice with a free key: %v", p.name, err)
		}
	}
	pc.mu.Lock()
	cancels := len(pc.cancels)
	pc.mu.Unlock()
	if cancels != 0 {
		t.Errorf("the computer got %d cancels from an impostor", cancels)
	}
	other, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: keyAgent, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if err := other.JoinOffice(ctx, smcp.RoleAgent, "alice", officeB); err == nil || !strings.Contains(err.Error(), "belongs to another key") {
		t.Errorf("Socket.IO join as alice with a free key: %v", err)
	}
}
