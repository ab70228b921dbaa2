package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func startGateway(t testing.TB, cfg gateway.Config) *gateway.Running {
	t.Helper()
	if cfg.Auth == nil {
		cfg.Auth = core.AllowAll{}
	}
	r, err := gateway.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialAgent(t testing.TB, url, name, office string) *agent.Client {
	t.Helper()
	a, err := agent.Dial(ctxT(t), sioclient.Options{Version: smcp.ProtocolVersion, URL: url, Logger: testLogger}, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if office != "" {
		if err := a.Join(ctxT(t), office); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// computer is a real Socket.IO computer answering every client: event.
type computer struct {
	name string
	c    *sioclient.Client

	mu       sync.Mutex
	received []string // event names
	notes    []string // event + compact payload
	arrived  chan string
	// block, when set, holds tool calls until it is closed.
	block chan struct{}
}

func dialComputer(t testing.TB, url, name, office string) *computer {
	t.Helper()
	return dialComputerWithKey(t, url, "", name, office)
}

func dialComputerWithKey(t testing.TB, url, key, name, office string) *computer {
	t.Helper()
	c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: url, APIKey: key, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	pc := &computer{name: name, c: c, arrived: make(chan string, 1024)}
	for _, ev := range smcp.EventNames(smcp.Routed) {
		c.Handle(ev, func(ctx context.Context, payload json.RawMessage) (any, error) { return pc.answer(ev, payload) })
	}
	for _, ev := range []string{smcp.NotifyEnterOffice, smcp.NotifyLeaveOffice, smcp.NotifyUpdateToolList, smcp.NotifyToolCallCancel} {
		c.On(ev, func(p json.RawMessage) {
			pc.mu.Lock()
			defer pc.mu.Unlock()
			pc.notes = append(pc.notes, ev+" "+compact(p))
		})
	}
	if office != "" {
		if err := c.JoinOffice(ctxT(t), smcp.RoleComputer, name, office); err != nil {
			t.Fatal(err)
		}
	}
	return pc
}

func compact(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func (pc *computer) answer(event string, payload json.RawMessage) (any, error) {
	var req map[string]any
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, smcp.Errorf(400, "bad payload")
	}
	reqID, _ := req["req_id"].(string)
	pc.mu.Lock()
	pc.received = append(pc.received, event)
	block := pc.block
	pc.mu.Unlock()
	select {
	case pc.arrived <- reqID:
	default: // nobody is watching (benchmarks)
	}
	if req["computer"] != pc.name {
		return nil, smcp.Errorf(403, "not this computer")
	}
	switch event {
	case smcp.EventToolCall:
		if block != nil {
			<-block
		}
		if req["tool_name"] == "missing" {
			return nil, smcp.Errorf(404, "tool not found")
		}
		text := pc.name + ":" + reqID
		if p, ok := req["params"].(map[string]any); ok && len(p) > 0 {
			text += ":" + fmt.Sprint(p)
		}
		return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"isError":false}`, text)), nil
	case smcp.EventGetTools:
		return json.RawMessage(fmt.Sprintf(`{"tools":[{"name":"echo","description":"echo","params_schema":{"type":"object"},"return_schema":null,"meta":{}}],"req_id":%q}`, reqID)), nil
	case smcp.EventGetConfig:
		return json.RawMessage(`{"servers":{"s":{"name":"s","type":"stdio","disabled":false,"forbidden_tools":[],"tool_meta":{},"server_parameters":{"command":"x","args":[],"env":null,"cwd":null,"encoding":"utf-8","encoding_error_handler":"strict"}}},"inputs":[]}`), nil
	case smcp.EventGetDesktop:
		return json.RawMessage(fmt.Sprintf(`{"desktops":["window://%s/main"],"req_id":%q}`, pc.name, reqID)), nil
	case smcp.EventGetFinder:
		return json.RawMessage(fmt.Sprintf(`{"documents":[{"doc_ref":"d1","uri":"dpe://h/d1","file_uri":"file:///d1","file_type":"md","title":"D1","page_count":2,"server":"docs"}],"total_count":1,"req_id":%q}`, reqID)), nil
	case smcp.EventReadResource:
		return json.RawMessage(fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/markdown","text":"# hello"}],"req_id":%q}`, req["uri"], reqID)), nil
	}
	return nil, smcp.Errorf(400, "unknown event")
}

func (pc *computer) receivedEvents() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return append([]string(nil), pc.received...)
}

func (pc *computer) notifications() []string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return append([]string(nil), pc.notes...)
}

func wantCode(t testing.TB, err error, code int) {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok || e.Code != code {
		t.Fatalf("want smcp error %d, got %v", code, err)
	}
}

func TestOfficesEndToEnd(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	ctx := ctxT(t)
	var notesMu sync.Mutex
	var agentNotes []string
	a := dialAgent(t, g.URL, "alice", "")
	a.OnNotification(func(n agent.Notification) {
		b, _ := smcp.Marshal(n.Payload)
		notesMu.Lock()
		agentNotes = append(agentNotes, n.Event+" "+compact(b))
		notesMu.Unlock()
	})
	if err := a.Join(ctx, "o1"); err != nil {
		t.Fatal(err)
	}
	pc1 := dialComputer(t, g.URL, "pc1", "o1")
	pc2 := dialComputer(t, g.URL, "pc2", "o1")
	far1 := dialComputer(t, g.URL, "pc1", "o2") // same name, other office
	farX := dialComputer(t, g.URL, "pcX", "o2")
	bob := dialAgent(t, g.URL, "bob", "o2")

	members, err := a.ListRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range members {
		got = append(got, m.GetName()+"/"+m.GetRole()+"/"+m.GetOfficeId())
		if m.GetSid() == "" {
			t.Fatalf("member without sid: %v", m)
		}
	}
	if fmt.Sprint(got) != "[alice/agent/o1 pc1/computer/o1 pc2/computer/o1]" {
		t.Fatalf("list_room: %v", got)
	}

	t.Run("every client event", func(t *testing.T) {
		params, _ := structpb.NewStruct(map[string]any{"text": "hi"})
		res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc1", ToolName: "echo", Params: params, ReqId: "call-1", Timeout: 5})
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.GetContent()[0].GetFields()["text"].GetStringValue(); txt != "pc1:call-1:map[text:hi]" || res.GetIsError() {
			t.Fatalf("tool result %v", res)
		}
		_, err = a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc2", ToolName: "missing", Timeout: 5})
		wantCode(t, err, 404)
		tools, err := a.GetTools(ctx, "pc2")
		if err != nil || tools.GetTools()[0].GetName() != "echo" || tools.GetReqId() == "" {
			t.Fatalf("get_tools %v %v", tools, err)
		}
		cfg, err := a.GetConfig(ctx, "pc1")
		if err != nil || cfg.GetServers()["s"].GetStdio().GetCommand() != "x" {
			t.Fatalf("get_config %v %v", cfg, err)
		}
		desk, err := a.GetDesktop(ctx, &smcpv1.GetDeskTopReq{Computer: "pc2"})
		if err != nil || fmt.Sprint(desk.GetDesktops()) != "[window://pc2/main]" {
			t.Fatalf("get_desktop %v %v", desk, err)
		}
		finder, err := a.GetFinder(ctx, &smcpv1.GetFinderReq{Computer: "pc1", Keywords: []string{"d"}})
		if err != nil || finder.GetTotalCount() != 1 || finder.GetDocuments()[0].GetPageCount() != 2 {
			t.Fatalf("get_finder %v %v", finder, err)
		}
		read, err := a.ReadResource(ctx, "pc1", "dpe://h/d1/pages/0")
		if err != nil || read.GetContents()[0].GetText() != "# hello" || read.GetContents()[0].GetUri() != "dpe://h/d1/pages/0" {
			t.Fatalf("read_resource %v %v", read, err)
		}
	})

	t.Run("cross-office refused, the other computer receives nothing", func(t *testing.T) {
		_, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pcX", ToolName: "echo", Timeout: 5})
		wantCode(t, err, 404)
		if e, _ := smcp.AsError(err); e.Message != "computer not found in this office" {
			t.Fatalf("message %q", e.Message)
		}
		_, err = a.GetTools(ctx, "pcX")
		wantCode(t, err, 404)
		// pc1 of office o1 answered above; pc1 of office o2 must have seen nothing.
		if got := far1.receivedEvents(); len(got) != 0 {
			t.Fatalf("pc1 of o2 received %v", got)
		}
		if got := farX.receivedEvents(); len(got) != 0 {
			t.Fatalf("pcX received %v", got)
		}
		// bob (o2) may reach his own computers only.
		if _, err := bob.GetTools(ctx, "pcX"); err != nil {
			t.Fatal(err)
		}
		_, err = bob.GetTools(ctx, "pc2")
		wantCode(t, err, 404)
	})

	t.Run("notifications scoped to the office, never to the sender", func(t *testing.T) {
		if err := pc2.c.Emit(smcp.EventUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: "spoofed"}); err != nil {
			t.Fatal(err)
		}
		if err := a.CancelToolCall("call-9"); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "pc1 notifications", func() bool { return len(pc1.notifications()) >= 3 })
		testwait.Until(t, "agent notifications", func() bool {
			notesMu.Lock()
			defer notesMu.Unlock()
			return len(agentNotes) >= 3
		})
		notesMu.Lock()
		gotAgent := fmt.Sprint(agentNotes)
		notesMu.Unlock()
		want := `[notify:enter_office {"computer":"pc1","office_id":"o1"} notify:enter_office {"computer":"pc2","office_id":"o1"} notify:update_tool_list {"computer":"pc2"}]`
		if gotAgent != want {
			t.Fatalf("agent notifications\n %s\nwant\n %s", gotAgent, want)
		}
		// Two senders: their notifications may arrive in either order.
		want = `[notify:enter_office {"computer":"pc2","office_id":"o1"} notify:tool_call_cancel {"agent":"alice","req_id":"call-9"} notify:update_tool_list {"computer":"pc2"}]`
		if got := fmt.Sprint(slices.Sorted(slices.Values(pc1.notifications()))); got != want {
			t.Fatalf("pc1 notifications\n %s\nwant\n %s", got, want)
		}
		testwait.Until(t, "pc2 cancel", func() bool { return len(pc2.notifications()) >= 1 })
		if got := fmt.Sprint(pc2.notifications()); got != `[notify:tool_call_cancel {"agent":"alice","req_id":"call-9"}]` {
			t.Fatalf("pc2 notifications %s", got)
		}
		for _, far := range []*computer{far1, farX} {
			for _, n := range far.notifications() {
				if strings.Contains(n, "o1") || strings.Contains(n, "alice") || strings.Contains(n, "pc2") {
					t.Fatalf("office o2 saw %s", n)
				}
			}
		}
	})

	t.Run("leave tells the office", func(t *testing.T) {
		if err := pc2.c.LeaveOffice(ctx, "o1"); err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, "leave notification", func() bool {
			for _, n := range pc1.notifications() {
				if n == `notify:leave_office {"computer":"pc2","office_id":"o1"}` {
					return true
				}
			}
			return false
		})
		_, err := a.GetTools(ctx, "pc2")
		wantCode(t, err, 404)
	})
}

func TestJoinRulesOverSocketIO(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	ctx := ctxT(t)
	dialAgent(t, g.URL, "alice", "o")
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.JoinOffice(ctx, smcp.RoleAgent, "bob", "o")
	if err == nil || !strings.Contains(err.Error(), "already has an agent") {
		t.Fatalf("second agent: %v", err)
	}
	// The raw ack shape: [false, "<reason>"] and [true, null].
	args, err := c.RequestArgs(ctx, smcp.EventJoinOffice, map[string]any{"role": "robot", "name": "x", "office_id": "o"})
	if err != nil || len(args) != 2 || string(args[0]) != "false" || !strings.Contains(string(args[1]), "unknown role") {
		t.Fatalf("ack %s %v", args, err)
	}
	args, err = c.RequestArgs(ctx, smcp.EventJoinOffice, map[string]any{"role": "computer", "name": "pc", "office_id": "o"})
	if err != nil || len(args) != 2 || string(args[0]) != "true" || string(args[1]) != "null" {
		t.Fatalf("ack %s %v", args, err)
	}
	args, err = c.RequestArgs(ctx, smcp.EventJoinOffice, "not an object")
	if err != nil || len(args) != 2 || string(args[0]) != "false" {
		t.Fatalf("ack %s %v", args, err)
	}
	args, err = c.RequestArgs(ctx, smcp.EventJoinOffice, map[string]any{"role": "agent", "name": "pc", "office_id": "o"})
	if err != nil || string(args[0]) != "false" || !strings.Contains(string(args[1]), "role mismatch") {
		t.Fatalf("ack %s %v", args, err)
	}
}

func TestBadPayloadsGetFlatErrorsAndTheConnectionSurvives(t *testing.T) {
	const limit = 64 << 10
	g := startGateway(t, gateway.Config{SIO: sio.Config{MaxMessageBytes: limit}})
	ctx := ctxT(t)
	pc := dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	raw := a.Conn()
	big := strings.Repeat("x", limit+1000)
	tests := []struct {
		name    string
		event   string
		payload any
		code    int
	}{
		{"string payload", smcp.EventToolCall, "hello", 400},
		{"array payload", smcp.EventGetTools, []any{1, 2}, 400},
		{"no payload", smcp.EventGetTools, nil, 400},
		{"wrong type", smcp.EventToolCall, map[string]any{"agent": "alice", "req_id": 7, "computer": "pc", "tool_name": "echo", "timeout": 5}, 400},
		{"missing fields", smcp.EventGetDesktop, map[string]any{"agent": "alice"}, 400},
		{"timeout out of range", smcp.EventToolCall, map[string]any{"agent": "alice", "req_id": "r", "computer": "pc", "tool_name": "echo", "timeout": 0}, 400},
		{"timeout not an integer", smcp.EventToolCall, map[string]any{"agent": "alice", "req_id": "r", "computer": "pc", "tool_name": "echo", "timeout": 2.5}, 400},
		{"oversized", smcp.EventToolCall, map[string]any{"agent": "alice", "req_id": "r", "computer": "pc", "tool_name": "echo", "timeout": 5, "params": map[string]any{"x": big}}, 400},
		{"name mismatch", smcp.EventGetTools, map[string]any{"agent": "mallory", "req_id": "r", "computer": "pc"}, 403},
		{"list_room of another office", smcp.EventListRoom, map[string]any{"agent": "alice", "req_id": "r", "office_id": "other"}, 403},
		{"list_room not an object", smcp.EventListRoom, 12, 400},
		{"unknown event", "client:format_disk", map[string]any{}, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := raw.Request(ctx, tc.event, tc.payload)
			wantCode(t, err, tc.code)
		})
	}
	if got := pc.receivedEvents(); len(got) != 0 {
		t.Fatalf("computer received refused requests: %v", got)
	}
	// Bad fire-and-forget events are ignored, and the connection still works.
	_ = raw.Emit(smcp.EventToolCallCancel, "junk")
	_ = raw.Emit(smcp.EventUpdateConfig, map[string]any{"computer": 5})
	res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Timeout: 5})
	if err != nil || res.GetIsError() {
		t.Fatalf("connection did not survive: %v %v", res, err)
	}
	// Not joined: 4103.
	lone := dialAgent(t, g.URL, "lone", "")
	_, err = lone.GetTools(ctx, "pc")
	wantCode(t, err, 4103)
}

func TestToolCallTimeoutAnsweredAtTimeoutPlusMargin(t *testing.T) {
	const margin = 100 * time.Millisecond
	g := startGateway(t, gateway.Config{Core: core.Config{ToolCallMargin: margin}})
	if got := g.Hub.Deadline(&core.Request{Event: smcp.EventToolCall, Timeout: 1}); got != time.Second+margin {
		t.Fatalf("deadline %s", got)
	}
	pc := dialComputer(t, g.URL, "pc", "o")
	pc.block = make(chan struct{})
	defer close(pc.block)
	a := dialAgent(t, g.URL, "alice", "o")
	start := time.Now()
	res, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "slow", Timeout: 1})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := smcp.Marshal(res)
	if compact(b) != `{"content":[{"text":"Tool call timeout","type":"text"}],"isError":true,"meta":{"a2c_timeout":true}}` {
		t.Fatalf("timeout result %s", b)
	}
	// Never before the tool's own timeout plus the margin.
	if elapsed < time.Second+margin {
		t.Fatalf("answered after %s, before timeout+margin", elapsed)
	}
}

func TestComputerKilledMidCall(t *testing.T) {
	g := startGateway(t, gateway.Config{}) // production deadlines: only the disconnect can end this call
	pc := dialComputer(t, g.URL, "pc", "o")
	pc.block = make(chan struct{})
	defer close(pc.block)
	a := dialAgent(t, g.URL, "alice", "o")
	go func() {
		<-pc.arrived
		pc.c.Close()
	}()
	res, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "slow", Timeout: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if !res.GetIsError() || res.GetMeta().GetFields()["a2c_error_code"].GetNumberValue() != 404 {
		t.Fatalf("result %v", res)
	}
}

func TestConcurrentToolCallsPairedByReqID(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			id := fmt.Sprintf("req-%03d", i)
			res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", ReqId: id, Timeout: 30})
			if err != nil {
				t.Error(err)
				return
			}
			if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "pc:"+id {
				t.Errorf("%s answered with %q", id, got)
			}
		})
	}
	wg.Wait()
}

func TestAuth(t *testing.T) {
	ring, err := core.NewKeyRing(
		core.Key{Key: "agent-key", ID: "alice", Roles: []string{"agent"}, Offices: []string{"o"}},
		core.Key{Key: "pc-key", ID: "pc", Roles: []string{"computer"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring})
	ctx := ctxT(t)
	for _, key := range []string{"", "wrong"} {
		_, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: key, NoReconnect: true})
		wantCode(t, err, 401)
	}
	a, err := agent.Dial(ctx, sioclient.Options{Version: smcp.ProtocolVersion, URL: g.URL, APIKey: "agent-key"}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Join(ctx, "elsewhere"); err == nil || !strings.Contains(err.Error(), "may not enter") {
		t.Fatalf("office outside the key: %v", err)
	}
	if err := a.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "pc-key", KeyInAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.JoinOffice(ctx, smcp.RoleAgent, "x", "o2"); err == nil {
		t.Fatal("computer key joined as agent")
	}
}

func TestRejoinAfterGatewayRestart(t *testing.T) {
	g1, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(g1.URL, "http://")
	pc := dialComputer(t, g1.URL, "pc", "o")
	rejoined := make(chan error, 1)
	pc.c.OnRejoin(func(err error) { rejoined <- err })
	a := dialAgent(t, g1.URL, "alice", "o")
	if err := g1.Stop(); err != nil {
		t.Fatal(err)
	}
	g2 := startGatewayAt(t, addr)
	_ = g2
	select {
	case err := <-rejoined:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("computer did not re-join")
	}
	testwait.Until(t, "agent re-joined and sees the computer", func() bool {
		members, err := a.ListRoom(ctxT(t))
		return err == nil && len(members) == 2
	})
	if _, err := a.GetTools(ctxT(t), "pc"); err != nil {
		t.Fatal(err)
	}
}

func startGatewayAt(t *testing.T, addr string) *gateway.Running {
	t.Helper()
	var r *gateway.Running
	testwait.Until(t, "port free again", func() bool {
		var err error
		r, err = gateway.Start(gateway.Config{Auth: core.AllowAll{}}, addr)
		return err == nil
	})
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

func TestGracefulShutdownFinishesInFlightCalls(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, ShutdownGrace: 10 * time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := dialComputer(t, r.URL, "pc", "o")
	pc.block = make(chan struct{})
	a := dialAgent(t, r.URL, "alice", "o")
	type result struct {
		res *smcpv1.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", ReqId: "last", Timeout: 60})
		done <- result{res, err}
	}()
	<-pc.arrived
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	// New calls are refused while draining...
	testwait.Until(t, "draining", func() bool {
		_, err := a.GetTools(ctxT(t), "pc")
		e, ok := smcp.AsError(err)
		return ok && e.Code == sio.CodeUnavailable
	})
	// ... and the one in flight completes.
	close(pc.block)
	got := <-done
	if got.err != nil || got.res.GetContent()[0].GetFields()["text"].GetStringValue() != "pc:last" {
		t.Fatalf("in-flight call: %v %v", got.res, got.err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// testLogger shows the clients' connection attempts when SMCP_TEST_LOG is set.
var testLogger = func() *slog.Logger {
	if os.Getenv("SMCP_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}()

// Python deployments mount Engine.IO at /smcp: the path is configurable.
func TestCustomEngineIOPath(t *testing.T) {
	g := startGateway(t, gateway.Config{SIO: sio.Config{Path: "/smcp"}})
	ctx := ctxT(t)
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, Path: "/smcp/"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(g.URL + "/socket.io/?EIO=4&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("default path still served: %d", resp.StatusCode)
	}
}
