package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestParseRequest(t *testing.T) {
	ok := `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","params":{},"timeout":5}`
	tests := []struct {
		name, event, payload string
		wantErr              string // substring; "" means valid
	}{
		{"valid tool call", smcp.EventToolCall, ok, ""},
		{"unknown event", "client:nope", ok, "unknown event"},
		{"not an object", smcp.EventToolCall, `[1,2]`, "must be a JSON object"},
		{"a string", smcp.EventGetTools, `"hello"`, "must be a JSON object"},
		{"empty", smcp.EventGetTools, ``, "must be a JSON object"},
		{"wrong type", smcp.EventGetTools, `{"agent":5,"req_id":"r","computer":"c"}`, "agent"},
		{"missing agent", smcp.EventGetTools, `{"req_id":"r","computer":"c"}`, "agent is required"},
		{"missing req_id", smcp.EventGetTools, `{"agent":"a","computer":"c"}`, "req_id is required"},
		{"missing computer", smcp.EventGetTools, `{"agent":"a","req_id":"r"}`, "computer is required"},
		{"missing tool", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","timeout":5}`, "tool_name"},
		{"timeout missing", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t"}`, "timeout"},
		{"timeout 0", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":0}`, "timeout"},
		{"timeout 3601", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":3601}`, "timeout"},
		{"timeout fraction", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":1.5}`, "timeout"},
		{"timeout 3600", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":3600}`, ""},
		{"params not object", smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":1,"params":[1]}`, "params must be an object"},
		{"read without uri", smcp.EventReadResource, `{"agent":"a","req_id":"r","computer":"c"}`, "uri is required"},
		{"finder with paging", smcp.EventGetFinder, `{"agent":"a","req_id":"r","computer":"c","offset":0,"limit":5,"keywords":["x"]}`, ""},
		{"unknown keys pass", smcp.EventGetConfig, `{"agent":"a","req_id":"r","computer":"c","extra":{"x":1}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest(tc.event, []byte(tc.payload))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if string(r.Payload) != tc.payload {
					t.Fatalf("payload changed: %s", r.Payload)
				}
				return
			}
			wantCode(t, err, 400)
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not mention %q", err, tc.wantErr)
			}
		})
	}
}

// The production deadlines follow from the defaults: timeout + 5 s for a
// tool call, 30 s for everything else.
func TestProductionDeadlines(t *testing.T) {
	h := New(Config{})
	if got := h.Deadline(&Request{Event: smcp.EventToolCall, Timeout: 7}); got != 12*time.Second {
		t.Fatalf("tool call deadline = %s, want 12s", got)
	}
	if got := h.Deadline(&Request{Event: smcp.EventGetTools}); got != 30*time.Second {
		t.Fatalf("get_tools deadline = %s, want 30s", got)
	}
	h = New(Config{ToolCallMargin: time.Millisecond, RequestTimeout: time.Second})
	if got := h.Deadline(&Request{Event: smcp.EventToolCall, Timeout: 1}); got != time.Second+time.Millisecond {
		t.Fatalf("configured deadline = %s", got)
	}
}

// office builds: agent alice and computer pc in "o"; computer pc in "other".
type testOffice struct {
	h        *Hub
	agent    *Session
	pc       *Session
	pcConn   *fakeConn
	far      *Session
	farConn  *fakeConn
	arrived  chan string // req_ids seen by pc
	cfg      Config
	answerFn func(event string, payload json.RawMessage) (json.RawMessage, bool)
}

func newTestOffice(t *testing.T, cfg Config, answer func(event string, payload json.RawMessage) (json.RawMessage, bool)) *testOffice {
	return newTestOfficeOf(t, cfg, v02, answer)
}

// newTestOfficeOf is newTestOffice with members that speak proto.
func newTestOfficeOf(t *testing.T, cfg Config, proto Protocol, answer func(event string, payload json.RawMessage) (json.RawMessage, bool)) *testOffice {
	t.Helper()
	o := &testOffice{h: New(cfg), arrived: make(chan string, 1024)}
	o.agent, _ = attachProto(t, o.h, "a", proto)
	o.pc, o.pcConn = attachProto(t, o.h, "pc", proto)
	o.far, o.farConn = attachProto(t, o.h, "far", proto)
	o.pcConn.handler = func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		var m struct {
			ReqID string `json:"req_id"`
		}
		_ = json.Unmarshal(payload, &m)
		o.arrived <- m.ReqID
		return answer(event, payload)
	}
	o.farConn.handler = o.pcConn.handler
	join(t, o.agent, smcp.RoleAgent, "alice", "o")
	join(t, o.pc, smcp.RoleComputer, "pc", "o")
	join(t, o.far, smcp.RoleComputer, "faraway", "other")
	return o
}

func echo(event string, payload json.RawMessage) (json.RawMessage, bool) {
	return payload, true
}

func mustParse(t *testing.T, event, payload string) *Request {
	t.Helper()
	r, err := ParseRequest(event, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouteForwardsUnchanged(t *testing.T) {
	o := newTestOfficeOf(t, Config{}, v04, echo)
	for _, event := range smcp.EventNames(smcp.Routed) {
		payload := `{"agent":"alice","req_id":"r-` + event + `","computer":"pc","tool_name":"t","timeout":3,"uri":"dpe://h/d","extra":[1,"x"]}`
		got, err := o.agent.Route(context.Background(), mustParse(t, event, payload))
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		if string(got) != payload {
			t.Fatalf("%s: answer changed: %s", event, got)
		}
	}
	if got := o.pcConn.received(); fmt.Sprint(got) != fmt.Sprint(smcp.EventNames(smcp.Routed)) {
		t.Fatalf("computer received %v", got)
	}
}

func TestRouteCallerChecks(t *testing.T) {
	o := newTestOffice(t, Config{}, echo)
	outsider, _ := attach(t, o.h, "outsider")
	tests := []struct {
		name    string
		caller  *Session
		payload string
		code    int
		message string
	}{
		{"not joined", outsider, `{"agent":"alice","req_id":"r","computer":"pc"}`, 4103, ""},
		{"computer caller", o.pc, `{"agent":"pc","req_id":"r","computer":"pc"}`, 403, ""},
		{"name mismatch", o.agent, `{"agent":"mallory","req_id":"r","computer":"pc"}`, 403, ""},
		{"unknown computer", o.agent, `{"agent":"alice","req_id":"r","computer":"nobody"}`, 404, "computer not found in this office"},
		{"computer of another office", o.agent, `{"agent":"alice","req_id":"r","computer":"faraway"}`, 404, "computer not found in this office"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.caller.Route(context.Background(), mustParse(t, smcp.EventGetTools, tc.payload))
			wantCode(t, err, tc.code)
			if e, _ := smcp.AsError(err); tc.message != "" && e.Message != tc.message {
				t.Fatalf("message %q, want %q", e.Message, tc.message)
			}
		})
	}
	if got := o.farConn.received(); len(got) != 0 {
		t.Fatalf("computer of another office received %v", got)
	}
	if got := o.pcConn.received(); len(got) != 0 {
		t.Fatalf("computer received refused requests %v", got)
	}
}

func TestToolCallTimeoutResult(t *testing.T) {
	never := func(string, json.RawMessage) (json.RawMessage, bool) { return nil, false }
	o := newTestOffice(t, Config{ToolCallMargin: 10 * time.Millisecond, RequestTimeout: 10 * time.Millisecond}, never)
	got, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventToolCall,
		`{"agent":"alice","req_id":"r","computer":"pc","tool_name":"t","timeout":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"content":[{"type":"text","text":"Tool call timeout"}],"isError":true,"meta":{"a2c_timeout":true}}` {
		t.Fatalf("timeout answer %s", got)
	}
	_, err = o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r2","computer":"pc"}`))
	wantCode(t, err, 408)
}

func TestComputerGoneFailsPendingAtOnce(t *testing.T) {
	never := func(string, json.RawMessage) (json.RawMessage, bool) { return nil, false }
	o := newTestOffice(t, Config{}, never) // production deadlines: only "gone" can end these calls
	type result struct {
		raw json.RawMessage
		err error
	}
	tool := make(chan result, 1)
	tools := make(chan result, 1)
	go func() {
		raw, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventToolCall,
			`{"agent":"alice","req_id":"t1","computer":"pc","tool_name":"t","timeout":3600}`))
		tool <- result{raw, err}
	}()
	go func() {
		raw, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"t2","computer":"pc"}`))
		tools <- result{raw, err}
	}()
	<-o.arrived
	<-o.arrived
	o.pc.Close()
	r := <-tool
	if r.err != nil {
		t.Fatal(r.err)
	}
	var res struct {
		IsError bool `json:"isError"`
		Meta    struct {
			Code int `json:"a2c_error_code"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(r.raw, &res); err != nil || !res.IsError || res.Meta.Code != smcp.CodeNotFound {
		t.Fatalf("gone tool call answer %s (%v)", r.raw, err)
	}
	r = <-tools
	if !errors.Is(r.err, ErrComputerGone) {
		t.Fatalf("gone get_tools error %v", r.err)
	}
	wantCode(t, r.err, 404)
}

func TestAgentGoneDropsRequest(t *testing.T) {
	never := func(string, json.RawMessage) (json.RawMessage, bool) { return nil, false }
	o := newTestOffice(t, Config{}, never)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := o.agent.Route(ctx, mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r","computer":"pc"}`))
		done <- err
	}()
	<-o.arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

// A request the gateway gives up on frees its --max-pending slot at once and
// tells the transport to forget it; its late answer is ignored and does not
// free a slot a second time.
func TestPendingBound(t *testing.T) {
	release := make(chan struct{})
	answer := func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		if event == smcp.EventToolCall {
			return nil, false // never
		}
		<-release
		return payload, true
	}
	o := newTestOffice(t, Config{MaxPending: 2, RequestTimeout: time.Millisecond, ToolCallMargin: time.Millisecond}, answer)
	for i := range 5 {
		_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, fmt.Sprintf(`{"agent":"alice","req_id":"r%d","computer":"pc"}`, i)))
		wantCode(t, err, 408)
	}
	if n := o.pc.pending.Load(); n != 0 {
		t.Fatalf("pending = %d after the timeouts, want 0", n)
	}
	if n := o.pcConn.forgotten.Load(); n != 5 {
		t.Fatalf("%d requests forgotten, want 5", n)
	}
	// The late answers change nothing.
	close(release)
	time.Sleep(50 * time.Millisecond)
	if n := o.pc.pending.Load(); n != 0 {
		t.Fatalf("pending = %d after the late answers, want 0", n)
	}
	// The bound holds: two calls in flight, the third is refused.
	for len(o.arrived) > 0 {
		<-o.arrived
	}
	results := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventToolCall,
				fmt.Sprintf(`{"agent":"alice","req_id":"t%d","computer":"pc","tool_name":"x","timeout":1}`, i)))
			results <- err
		}()
	}
	<-o.arrived
	<-o.arrived
	_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventToolCall, `{"agent":"alice","req_id":"t3","computer":"pc","tool_name":"x","timeout":1}`))
	wantCode(t, err, CodeTooManyPending)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
}

func TestTypedCalls(t *testing.T) {
	answer := func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		var m map[string]any
		_ = json.Unmarshal(payload, &m)
		switch event {
		case smcp.EventToolCall:
			if m["tool_name"] == "missing" {
				return json.RawMessage(`{"code":404,"message":"tool not found"}`), true
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"` + fmt.Sprint(m["params"]) + `"}],"isError":false}`), true
		case smcp.EventGetTools:
			return json.RawMessage(`{"tools":[{"name":"echo","description":"d","params_schema":{"type":"object"},"meta":{}}],"req_id":"` + m["req_id"].(string) + `"}`), true
		case smcp.EventGetDesktop:
			return json.RawMessage(`{"error":{"code":500,"message":"wrapped"}}`), true
		}
		return json.RawMessage(`{"not":"decodable","req_id":5}`), true
	}
	o := newTestOffice(t, Config{}, answer)
	ctx := context.Background()
	params, _ := structpb.NewStruct(map[string]any{"x": "y"})
	res, err := o.agent.CallTool(ctx, &smcpv1.ToolCallReq{Agent: "alice", ReqId: "r1", Computer: "pc", ToolName: "echo", Params: params, Timeout: 5})
	if err != nil || res.GetContent()[0].GetFields()["text"].GetStringValue() != "map[x:y]" {
		t.Fatalf("CallTool: %v %v", res, err)
	}
	_, err = o.agent.CallTool(ctx, &smcpv1.ToolCallReq{Agent: "alice", ReqId: "r2", Computer: "pc", ToolName: "missing", Timeout: 5})
	wantCode(t, err, 404)
	_, err = o.agent.CallTool(ctx, &smcpv1.ToolCallReq{Agent: "alice", ReqId: "r3", Computer: "pc", ToolName: "echo"})
	wantCode(t, err, 400)
	tools, err := o.agent.GetTools(ctx, &smcpv1.GetToolsReq{Agent: "alice", ReqId: "r4", Computer: "pc"})
	if err != nil || tools.GetReqId() != "r4" || tools.GetTools()[0].GetName() != "echo" {
		t.Fatalf("GetTools: %v %v", tools, err)
	}
	_, err = o.agent.GetDesktop(ctx, &smcpv1.GetDeskTopReq{Agent: "alice", ReqId: "r5", Computer: "pc"})
	wantCode(t, err, 500)
	_, err = o.agent.GetFinder(ctx, &smcpv1.GetFinderReq{Agent: "alice", ReqId: "r6", Computer: "pc"})
	wantCode(t, err, 500)
}

func TestConcurrentCallsPairedByReqID(t *testing.T) {
	answer := func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		var m struct {
			ReqID string `json:"req_id"`
		}
		_ = json.Unmarshal(payload, &m)
		return json.RawMessage(`{"content":[{"type":"text","text":"` + m.ReqID + `"}]}`), true
	}
	o := newTestOffice(t, Config{}, answer)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			id := fmt.Sprintf("req-%d", i)
			res, err := o.agent.CallTool(context.Background(), &smcpv1.ToolCallReq{Agent: "alice", ReqId: id, Computer: "pc", ToolName: "t", Timeout: 5})
			if err != nil {
				t.Error(err)
				return
			}
			if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != id {
				t.Errorf("%s answered with %s", id, got)
			}
		})
	}
	wg.Wait()
}

// An agent that goes away frees its calls' slots on the computer at once,
// not at their deadlines (an hour for a long tool call); the calls' answers
// are not delivered to anyone.
func TestAgentCloseFreesItsCalls(t *testing.T) {
	never := func(string, json.RawMessage) (json.RawMessage, bool) { return nil, false }
	o := newTestOffice(t, Config{}, never)
	results := make(chan error, 3)
	for i := range 3 {
		o.agent.Go(mustParse(t, smcp.EventToolCall,
			fmt.Sprintf(`{"agent":"alice","req_id":"t%d","computer":"pc","tool_name":"x","timeout":3600}`, i)),
			func(_ json.RawMessage, err error) { results <- err })
	}
	if n := o.pc.pending.Load(); n != 3 {
		t.Fatalf("pending = %d, want 3", n)
	}
	o.agent.Close()
	for range 3 {
		if err := <-results; !errors.Is(err, errCallerGone) {
			t.Fatalf("err %v, want errCallerGone", err)
		}
	}
	if n := o.pc.pending.Load(); n != 0 {
		t.Fatalf("pending = %d after the agent closed, want 0", n)
	}
	if n := o.pcConn.forgotten.Load(); n != 3 {
		t.Fatalf("%d forgotten, want 3", n)
	}
}

// lookupCounter counts the registry's computer lookups.
type lookupCounter struct {
	*MemRegistry
	lookups atomic.Int64
}

func (r *lookupCounter) Computer(ctx context.Context, officeID, name string) (Member, bool, error) {
	r.lookups.Add(1)
	return r.MemRegistry.Computer(ctx, officeID, name)
}

// noPeers is a cluster of one: there is nobody to reach.
type noPeers struct{}

func (noPeers) Request(_ Member, _ string, _ json.RawMessage, _ time.Duration, done func(json.RawMessage, error)) func() {
	done(nil, errors.New("no peers"))
	return nil
}
func (noPeers) Publish(Notification, string) {}

// TryGo routes what needs no registry and leaves the rest to Go: a call to a
// computer of this node is sent; on one node an unknown computer is a 404
// at once; in a cluster a computer not on this node is not routed (ok false,
// done not called), and Go then asks the registry.
func TestTryGo(t *testing.T) {
	reg := &lookupCounter{MemRegistry: NewMemRegistry()}
	o := newTestOffice(t, Config{Registry: reg}, echo)
	got := make(chan answer, 1)
	done := func(raw json.RawMessage, err error) { got <- answer{raw, err} }
	req := `{"agent":"alice","req_id":"r1","computer":"pc"}`
	if ok := o.agent.TryGo(mustParse(t, smcp.EventGetTools, req), done); !ok {
		t.Fatal("a call to a computer of this node was not routed")
	}
	if a := <-got; a.err != nil || string(a.raw) != req {
		t.Fatalf("answer %s %v", a.raw, a.err)
	}
	if ok := o.agent.TryGo(mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r2","computer":"nobody"}`), done); !ok {
		t.Fatal("on one node an unknown computer was left to Go")
	}
	wantCode(t, (<-got).err, 404)
	_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r2","computer":"nobody"}`))
	wantCode(t, err, 404)
	if n := reg.lookups.Load(); n != 0 {
		t.Fatalf("one node asked the registry %d times", n)
	}

	h := New(Config{Registry: reg, Node: "n1"})
	h.SetPeers(noPeers{})
	agent, _ := attach(t, h, "a2")
	join(t, agent, smcp.RoleAgent, "bob", "o2")
	r := mustParse(t, smcp.EventGetTools, `{"agent":"bob","req_id":"r3","computer":"elsewhere"}`)
	if ok := agent.TryGo(r, func(json.RawMessage, error) { t.Error("done called for a call not routed") }); ok {
		t.Fatal("a call needing the registry was routed by TryGo")
	}
	if n := reg.lookups.Load(); n != 0 {
		t.Fatalf("TryGo asked the registry %d times", n)
	}
	_, err = agent.Route(context.Background(), r)
	wantCode(t, err, 404)
	if n := reg.lookups.Load(); n != 1 {
		t.Fatalf("Go asked the registry %d times, want 1", n)
	}
}
