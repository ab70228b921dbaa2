package rpc_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestEveryRPC calls every RPC over every protocol against a live gateway
// with a Socket.IO computer, and checks what the computer received.
func TestEveryRPC(t *testing.T) {
	g := startGateway(t)
	comp := startComputer(t, g, "pc-1", officeA)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx := testContext(t)
			// One agent name for every protocol: a watch holds the office until
			// the gateway sees its cancel, which a next name would race with.
			const agent = "planner"
			cl := newClient(t, g, p, "x-api-key", keyAgent, "x-smcp-agent", agent)

			// WatchOffice first, so that it sees what the calls below cause.
			watch := openWatch(t, ctx, cl, officeA)

			room, err := cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeA})
			if err != nil {
				t.Fatalf("ListRoom: %v", err)
			}
			if len(room.GetSessions()) != 1 || room.GetSessions()[0].GetName() != "pc-1" || room.GetSessions()[0].GetRole() != smcp.RoleComputer {
				t.Fatalf("ListRoom: %v", room.GetSessions())
			}

			tools, err := cl.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: officeA, Computer: "pc-1"})
			if err != nil {
				t.Fatalf("GetTools: %v", err)
			}
			var names []string
			for _, tl := range tools.GetTools() {
				names = append(names, tl.GetName())
			}
			if !slices.Equal(names, []string{"echo", "hang"}) {
				t.Fatalf("GetTools: %v", names)
			}
			checkForwarded(t, comp, smcp.EventGetTools, agent, &smcpv1.GetToolsReq{})

			cfg, err := cl.GetConfig(ctx, &smcpv1.GetConfigRequest{OfficeId: officeA, Computer: "pc-1"})
			if err != nil {
				t.Fatalf("GetConfig: %v", err)
			}
			if got := cfg.GetServers()["docs"].GetStdio().GetArgs(); !slices.Equal(got, []string{"docs", "/srv/docs"}) {
				t.Fatalf("GetConfig: %v", cfg)
			}

			params, _ := structpb.NewStruct(map[string]any{"text": "hello"})
			res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-1", ToolName: "echo", Params: params, ReqId: "req-" + p.name})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if res.GetReqId() != "req-"+p.name || res.GetResult().GetIsError() ||
				res.GetResult().GetContent()[0].GetFields()["text"].GetStringValue() != "echo: hello" {
				t.Fatalf("CallTool: %v", res)
			}
			sent := &smcpv1.ToolCallReq{}
			checkForwarded(t, comp, smcp.EventToolCall, agent, sent)
			if sent.GetTimeout() != 60 || sent.GetReqId() != "req-"+p.name || sent.GetToolName() != "echo" {
				t.Fatalf("tool call forwarded as %v; want timeout 60 (the default) and the caller's req_id", sent)
			}

			desk, err := cl.GetDesktop(ctx, &smcpv1.GetDesktopRequest{OfficeId: officeA, Computer: "pc-1", DesktopSize: proto.Int32(1)})
			if err != nil {
				t.Fatalf("GetDesktop: %v", err)
			}
			if !slices.Equal(desk.GetDesktops(), []string{"window://docs/status\n\n2 documents"}) {
				t.Fatalf("GetDesktop: %q", desk.GetDesktops())
			}
			sentDesk := &smcpv1.GetDeskTopReq{}
			checkForwarded(t, comp, smcp.EventGetDesktop, agent, sentDesk)
			if sentDesk.DesktopSize == nil || sentDesk.GetDesktopSize() != 1 || sentDesk.Window != nil {
				t.Fatalf("desktop request forwarded as %v", sentDesk)
			}

			finder, err := cl.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: officeA, Computer: "pc-1", Keywords: []string{"REPORT"}, Limit: proto.Int32(10)})
			if err != nil {
				t.Fatalf("GetFinder: %v", err)
			}
			if finder.GetTotalCount() != 1 || finder.GetDocuments()[0].GetDocRef() != "rpt-2026" {
				t.Fatalf("GetFinder: %v", finder)
			}

			read, err := cl.ReadResource(ctx, &smcpv1.ReadResourceRequest{OfficeId: officeA, Computer: "pc-1", Uri: "dpe://docs/rpt-2026?format=markdown"})
			if err != nil {
				t.Fatalf("ReadResource: %v", err)
			}
			if c := read.GetContents(); len(c) != 1 || c[0].GetMimeType() != "text/markdown" || c[0].GetText() != "# Annual report 2026\n\nRevenue grew." {
				t.Fatalf("ReadResource: %v", read)
			}

			if _, err := cl.CancelToolCall(ctx, &smcpv1.CancelToolCallRequest{OfficeId: officeA, ReqId: "cancel-" + p.name}); err != nil {
				t.Fatalf("CancelToolCall: %v", err)
			}
			comp.waitFor(t, "the cancel", func() bool {
				return slices.ContainsFunc(comp.cancels, func(c *smcpv1.AgentCallData) bool {
					return c.GetReqId() == "cancel-"+p.name && c.GetAgent() == agent
				})
			})
			n := watch.next(t, smcp.NotifyToolCallCancel)
			if got := n.GetToolCallCancel(); got.GetReqId() != "cancel-"+p.name || got.GetAgent() != agent {
				t.Fatalf("watch: %v", n)
			}

			// A notification caused by the Socket.IO computer.
			if err := comp.c.Emit(smcp.EventUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: "pc-1"}); err != nil {
				t.Fatal(err)
			}
			n = watch.next(t, smcp.NotifyUpdateToolList)
			if n.GetUpdateToolList().GetComputer() != "pc-1" {
				t.Fatalf("watch: %v", n)
			}
			watch.close(t)
		})
	}
}

// checkForwarded decodes the last event the computer received into m and
// checks that it carries the caller's agent name and a request id.
func checkForwarded(t *testing.T, comp *fakeComputer, event, agent string, m interface {
	proto.Message
	GetAgent() string
	GetReqId() string
	GetComputer() string
}) {
	t.Helper()
	if err := smcp.Unmarshal(comp.lastRequest(t, event), m); err != nil {
		t.Fatal(err)
	}
	if m.GetAgent() != agent || m.GetReqId() == "" || m.GetComputer() != comp.name {
		t.Fatalf("%s forwarded as %v; want agent %q, a req_id, computer %q", event, m, agent, comp.name)
	}
}

// watch is an open WatchOffice stream read on its own goroutine.
type watch struct {
	cancel context.CancelFunc
	msgs   chan *smcpv1.WatchOfficeResponse
	done   chan error
}

// openWatch opens WatchOffice and returns once the gateway has registered it
// (its response headers arrived).
func openWatch(t *testing.T, ctx context.Context, cl smcpv1connect.AgentServiceClient, office string) *watch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	stream, err := cl.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: office})
	if err != nil {
		cancel()
		t.Fatalf("WatchOffice: %v", err)
	}
	_ = stream.ResponseHeader() // blocks until the headers arrive
	w := &watch{cancel: cancel, msgs: make(chan *smcpv1.WatchOfficeResponse, 64), done: make(chan error, 1)}
	go func() {
		defer close(w.msgs)
		for stream.Receive() {
			w.msgs <- stream.Msg()
		}
		w.done <- stream.Err()
	}()
	t.Cleanup(cancel)
	return w
}

// next returns the next notification named event, skipping others.
func (w *watch) next(t *testing.T, event string) *smcpv1.WatchOfficeResponse {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case n, ok := <-w.msgs:
			if !ok {
				t.Fatalf("watch ended before %s: %v", event, <-w.done)
			}
			if n.GetEvent() == event {
				return n
			}
		case <-timeout.C:
			t.Fatalf("no %s notification", event)
		}
	}
}

// close cancels the stream and checks that it ended as cancelled.
func (w *watch) close(t *testing.T) {
	t.Helper()
	w.cancel()
	for range w.msgs {
	}
	if err := <-w.done; err != nil && connect.CodeOf(err) != connect.CodeCanceled {
		t.Fatalf("watch ended with %v", err)
	}
}

func TestWatchSeesOfficeLife(t *testing.T) {
	g := startGateway(t)
	ctx := testContext(t)
	cl := newClient(t, g, protocols[2], "authorization", "Bearer "+keyAgent)
	w := openWatch(t, ctx, cl, officeA)
	comp := startComputer(t, g, "pc-2", officeA)
	n := w.next(t, smcp.NotifyEnterOffice)
	if n.GetEnterOffice().GetComputer() != "pc-2" || n.GetEnterOffice().GetOfficeId() != officeA {
		t.Fatalf("enter: %v", n)
	}
	for _, ev := range []string{smcp.EventUpdateConfig, smcp.EventUpdateDesktop, smcp.EventUpdateFinder} {
		if err := comp.c.Emit(ev, &smcpv1.UpdateComputerConfigReq{Computer: "pc-2"}); err != nil {
			t.Fatal(err)
		}
		info, _ := smcp.Event(ev)
		n := w.next(t, info.Notifies)
		var got *smcpv1.UpdateComputerConfigReq
		switch ev {
		case smcp.EventUpdateConfig:
			got = n.GetUpdateConfig()
		case smcp.EventUpdateDesktop:
			got = n.GetUpdateDesktop()
		default:
			got = n.GetUpdateFinder()
		}
		if got.GetComputer() != "pc-2" {
			t.Fatalf("%s: %v", ev, n)
		}
	}
	comp.c.Close()
	n = w.next(t, smcp.NotifyLeaveOffice)
	if n.GetLeaveOffice().GetComputer() != "pc-2" {
		t.Fatalf("leave: %v", n)
	}
	// The wire form of a notification is the Socket.IO payload, under its
	// oneof key.
	b, err := smcp.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if wire["event"] != smcp.NotifyLeaveOffice || wire["leave_office"].(map[string]any)["computer"] != "pc-2" {
		t.Fatalf("wire form %s", b)
	}
	w.close(t)
}
