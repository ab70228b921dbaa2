package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// onlyEcho is a Guard that admits the tool echo alone and records what it
// was asked and told.
type onlyEcho struct {
	mu       sync.Mutex
	calls    []Call
	outcomes []Outcome
}

func (g *onlyEcho) Admit(_ context.Context, c *Call) (func(Outcome), error) {
	g.mu.Lock()
	cc := *c
	if c.Tool != nil {
		t := *c.Tool
		cc.Tool = &t
	}
	g.calls = append(g.calls, cc)
	g.mu.Unlock()
	if c.Event == smcp.EventToolCall && c.Tool.Name != "echo" {
		return nil, smcp.Errorf(smcp.CodeForbidden, "tool %q: denied by rule set \"t\" entry 0", c.Tool.Name)
	}
	if c.Event == smcp.EventReadResource && strings.HasPrefix(c.URI, "dpe://") {
		return nil, smcp.Errorf(CodeTooManyPending, "slow down").WithDetails(map[string]any{"retry_after_ms": 250})
	}
	return func(o Outcome) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.outcomes = append(g.outcomes, o)
	}, nil
}

func (g *onlyEcho) Visible(c *Call) bool { return c.Tool == nil || c.Tool.Name == "echo" }

// A guard sees every routed request before its computer does: a refused
// call never reaches the computer, a listing shows only what may be
// called (0.3 names: the bundle prefix is not part of the tool's name),
// the tools are learnt from the computer once when a call comes before
// any listing, and every admitted call's outcome is reported.
func TestGuardAdmitsFiltersAndReports(t *testing.T) {
	g := &onlyEcho{}
	tools := `{"tools":[` +
		`{"name":"srv__echo","bundle_id":"srv","description":"","params_schema":{},"meta":{"a2c_tool_meta":"{\"tags\":[\"safe\"]}"}},` +
		`{"name":"srv__add","bundle_id":"srv","description":"","params_schema":{}}],"req_id":"x"}`
	o := newTestOfficeOf(t, Config{Guard: g}, v03, func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		switch event {
		case smcp.EventGetTools:
			return json.RawMessage(tools), true
		case smcp.EventToolCall:
			return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), true
		}
		return json.RawMessage(`{}`), true
	})
	ctx := context.Background()
	call := func(tool string) (json.RawMessage, error) {
		r, err := ParseRequest(smcp.EventToolCall, []byte(`{"agent":"alice","req_id":"r-`+tool+`","computer":"pc","tool_name":"`+tool+`","params":{"x":1},"timeout":5}`))
		if err != nil {
			t.Fatal(err)
		}
		return o.agent.Route(ctx, r)
	}

	_, err := call("srv__add")
	wantCode(t, err, smcp.CodeForbidden)
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("refusal %v is not ErrRefused", err)
	}
	if got := o.pcConn.received(); !slices.Equal(got, []string{smcp.EventGetTools}) {
		t.Fatalf("computer received %v, want only the core's own get_tools", got)
	}
	if _, err := call("srv__echo"); err != nil {
		t.Fatal(err)
	}
	if got := o.pcConn.received(); !slices.Equal(got, []string{smcp.EventGetTools, smcp.EventToolCall}) {
		t.Fatalf("computer received %v", got)
	}

	r, _ := ParseRequest(smcp.EventGetTools, []byte(`{"agent":"alice","req_id":"l","computer":"pc"}`))
	raw, err := o.agent.Route(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	var ret struct {
		Tools []struct{ Name string } `json:"tools"`
		ReqID string                  `json:"req_id"`
	}
	if err := json.Unmarshal(raw, &ret); err != nil {
		t.Fatal(err)
	}
	if len(ret.Tools) != 1 || ret.Tools[0].Name != "srv__echo" || ret.ReqID != "x" {
		t.Fatalf("listing %s, want srv__echo alone", raw)
	}

	r, _ = ParseRequest(smcp.EventReadResource, []byte(`{"agent":"alice","req_id":"d","computer":"pc","uri":"dpe://h/doc"}`))
	_, err = o.agent.Route(ctx, r)
	wantCode(t, err, CodeTooManyPending)
	if d, ok := RetryAfter(err); !ok || d.Milliseconds() != 250 {
		t.Fatalf("RetryAfter(%v) = %v, %v", err, d, ok)
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	var echo *Call
	for i := range g.calls {
		if c := &g.calls[i]; c.Tool != nil && c.Tool.Exposed == "srv__echo" {
			echo = c
		}
	}
	if echo == nil {
		t.Fatalf("guard never saw srv__echo: %+v", g.calls)
	}
	if echo.Tool.Name != "echo" || echo.Tool.BundleID != "srv" || !slices.Equal(echo.Tool.Tags, []string{"safe"}) ||
		string(echo.Args) != `{"x":1}` || echo.Office != "o" || echo.Agent != "alice" || echo.Computer != "pc" ||
		echo.Front != FrontSocketIO || echo.ReqID != "r-srv__echo" {
		t.Fatalf("call as the guard saw it: %+v tool %+v", echo, echo.Tool)
	}
	// Admitted: the echo call and the listing.
	if len(g.outcomes) != 2 {
		t.Fatalf("outcomes %+v, want 2", g.outcomes)
	}
	for _, out := range g.outcomes {
		if out.Err != nil || out.BytesIn == 0 || out.BytesOut == 0 {
			t.Fatalf("outcome %+v", out)
		}
	}
}

// A tool list that changes is learnt again: the call after
// notify:update_tool_list is judged on the new list.
func TestGuardForgetsToolsThatChanged(t *testing.T) {
	g := &onlyEcho{}
	var mu sync.Mutex
	name := "echo"
	o := newTestOffice(t, Config{Guard: g}, func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		mu.Lock()
		defer mu.Unlock()
		if event == smcp.EventGetTools {
			return json.RawMessage(`{"tools":[{"name":"` + name + `"}]}`), true
		}
		return json.RawMessage(`{"content":[]}`), true
	})
	call := func() error {
		r, _ := ParseRequest(smcp.EventToolCall, []byte(`{"agent":"alice","req_id":"r","computer":"pc","tool_name":"echo","timeout":5}`))
		_, err := o.agent.Route(context.Background(), r)
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	// An alias now names another tool "echo"; what the guard sees is
	// still the name the computer calls it, so this stays admitted; the
	// point is that the list is asked again.
	if err := o.pc.Update(smcp.EventUpdateToolList); err != nil {
		t.Fatal(err)
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range o.pcConn.received() {
		if ev == smcp.EventGetTools {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("get_tools asked %d times, want 2 (once per list): %v", n, o.pcConn.received())
	}
}

// noSecrets refuses the tool "secret" (and so its blobs), the windows
// under window://secret, the resources under file:///secret and the
// skill x.
type noSecrets struct{}

func (noSecrets) Admit(_ context.Context, c *Call) (func(Outcome), error) {
	if !noSecrets.Visible(noSecrets{}, c) {
		return nil, smcp.Errorf(smcp.CodeForbidden, "secret")
	}
	return nil, nil
}

func (noSecrets) Visible(c *Call) bool {
	return (c.Tool == nil || c.Tool.Name != "secret") && !strings.HasPrefix(c.URI, "window://secret") &&
		!strings.HasPrefix(c.URI, "file:///secret") && c.URI != "skill://x"
}

// A blob is judged as the call whose answer gave its handle: a blob of
// a tool the caller may not call is refused, one of another tool is
// not; a desktop lists only the windows the caller may read, an MCP
// server's resources only the resources, a skills answer only its skills.
func TestGuardJudgesBlobsAndWindows(t *testing.T) {
	o := newTestOfficeOf(t, Config{Guard: noSecrets{}}, v03, func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		switch event {
		case smcp.EventGetTools:
			return json.RawMessage(`{"tools":[{"name":"open"},{"name":"secret"}]}`), true
		case smcp.EventToolCall:
			return json.RawMessage(`{"content":[{"type":"image","data":"","mimeType":"image/png","_meta":{"a2c_blob_handle":"h-open"}}]}`), true
		case smcp.EventGetDesktop:
			return json.RawMessage(`{"desktops":["window://secret/a\n\nhidden","window://public/b\n\nshown"],"req_id":"d"}`), true
		case smcp.EventGetSkills:
			return json.RawMessage(`{"skills":[{"name":"open","description":"o"},{"name":"x"}],"req_id":"s"}`), true
		case smcp.EventGetResources:
			return json.RawMessage(`{"resources":[{"uri":"file:///secret/a","name":"a"},{"uri":"file:///public/b","name":"b"}],"req_id":"r"}`), true
		}
		return json.RawMessage(`{"blob":""}`), true
	})
	route := func(event, payload string) (json.RawMessage, error) {
		r, err := ParseRequest(event, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return o.agent.Route(context.Background(), r)
	}
	if _, err := route(smcp.EventToolCall, `{"agent":"alice","req_id":"1","computer":"pc","tool_name":"open","timeout":5}`); err != nil {
		t.Fatal(err)
	}
	if _, err := route(smcp.EventGetBlob, `{"agent":"alice","req_id":"2","computer":"pc","blob_handle":"h-open"}`); err != nil {
		t.Fatalf("blob of an allowed tool: %v", err)
	}
	// The handle of "secret" as if it had been minted for another caller:
	// recorded with its producer by the core.
	o.h.tools.recordBlobs("o", "pc", json.RawMessage(`{"content":[{"_meta":{"a2c_blob_handle":"h-secret"}}]}`),
		blobOrigin{tool: &ToolView{Name: "secret", Exposed: "secret"}})
	_, err := route(smcp.EventGetBlob, `{"agent":"alice","req_id":"3","computer":"pc","blob_handle":"h-secret"}`)
	wantCode(t, err, smcp.CodeForbidden)

	raw, err := route(smcp.EventGetDesktop, `{"agent":"alice","req_id":"d","computer":"pc"}`)
	if err != nil {
		t.Fatal(err)
	}
	var d struct{ Desktops []string }
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Desktops) != 1 || !strings.HasPrefix(d.Desktops[0], "window://public/b") {
		t.Fatalf("desktop %s, want only window://public/b", raw)
	}
	raw, err = route(smcp.EventGetResources, `{"agent":"alice","req_id":"r","computer":"pc","mcp_server":"fs"}`)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Resources []struct{ URI string } }
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Resources) != 1 || res.Resources[0].URI != "file:///public/b" {
		t.Fatalf("resources %s, want only file:///public/b", raw)
	}
	raw, err = route(smcp.EventGetSkills, `{"agent":"alice","req_id":"s","computer":"pc"}`)
	if err != nil {
		t.Fatal(err)
	}
	var sk struct{ Skills []struct{ Name string } }
	if err := json.Unmarshal(raw, &sk); err != nil {
		t.Fatal(err)
	}
	if len(sk.Skills) != 1 || sk.Skills[0].Name != "open" {
		t.Fatalf("skills %s, want only open", raw)
	}
	if n := slices.Index(o.pcConn.received(), smcp.EventGetBlob); n < 0 {
		t.Fatal("the allowed blob did not reach the computer")
	}
	blobs := 0
	for _, ev := range o.pcConn.received() {
		if ev == smcp.EventGetBlob {
			blobs++
		}
	}
	if blobs != 1 {
		t.Fatalf("%d get_blob reached the computer, want 1", blobs)
	}
}

// A listing asked for before the computer said its tools changed is not
// kept when it comes after: the next call asks for the list again.
func TestGuardDropsListingOvertakenByChange(t *testing.T) {
	g := &onlyEcho{}
	release := make(chan struct{})
	var mu sync.Mutex
	lists := 0
	o := newTestOffice(t, Config{Guard: g}, func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		if event == smcp.EventGetTools {
			mu.Lock()
			lists++
			first := lists == 1
			mu.Unlock()
			if first {
				<-release // answered after the change below
			}
			return json.RawMessage(`{"tools":[{"name":"echo"}]}`), true
		}
		return json.RawMessage(`{"content":[]}`), true
	})
	listed := make(chan error, 1)
	go func() {
		r, _ := ParseRequest(smcp.EventGetTools, []byte(`{"agent":"alice","req_id":"l","computer":"pc"}`))
		_, err := o.agent.Route(context.Background(), r)
		listed <- err
	}()
	testwait.Until(t, "the listing reaches the computer", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return lists == 1
	})
	if err := o.pc.Update(smcp.EventUpdateToolList); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	r, _ := ParseRequest(smcp.EventToolCall, []byte(`{"agent":"alice","req_id":"c","computer":"pc","tool_name":"echo","timeout":5}`))
	if _, err := o.agent.Route(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if lists != 2 {
		t.Fatalf("tools listed %d times, want 2: the stale listing was kept", lists)
	}
}

// TryGo never waits for a guard: a tool call whose computer's tools are
// not known yet, or any call in a cluster (where a guard may wait on the
// network), is left to GoContext; a call it can judge at once is routed.
func TestGuardTryGo(t *testing.T) {
	g := &onlyEcho{}
	o := newTestOffice(t, Config{Guard: g}, func(event string, payload json.RawMessage) (json.RawMessage, bool) {
		if event == smcp.EventGetTools {
			return json.RawMessage(`{"tools":[{"name":"echo"}]}`), true
		}
		return json.RawMessage(`{"content":[]}`), true
	})
	got := make(chan error, 1)
	done := func(_ json.RawMessage, err error) { got <- err }
	call := mustParse(t, smcp.EventToolCall, `{"agent":"alice","req_id":"r1","computer":"pc","tool_name":"echo","timeout":5}`)
	if o.agent.TryGo(call, func(json.RawMessage, error) { t.Error("done called for a call not routed") }) {
		t.Fatal("TryGo routed a call whose tools are not known")
	}
	if got := o.pcConn.received(); len(got) != 0 {
		t.Fatalf("TryGo sent %v", got)
	}
	o.agent.GoContext(context.Background(), call, done)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Known now: judged and routed at once.
	if !o.agent.TryGo(mustParse(t, smcp.EventToolCall, `{"agent":"alice","req_id":"r2","computer":"pc","tool_name":"echo","timeout":5}`), done) {
		t.Fatal("TryGo left a call it could judge")
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if !o.agent.TryGo(mustParse(t, smcp.EventToolCall, `{"agent":"alice","req_id":"r3","computer":"pc","tool_name":"rm","timeout":5}`), done) {
		t.Fatal("TryGo left a call it could refuse")
	}
	wantCode(t, <-got, smcp.CodeForbidden)

	o.h.SetPeers(noPeers{})
	if o.agent.TryGo(mustParse(t, smcp.EventGetTools, `{"agent":"alice","req_id":"r4","computer":"pc"}`), done) {
		t.Fatal("TryGo asked a guard in a cluster")
	}
}

// The guard is told the resource of each request: the URI read, the
// window asked for (or the whole desktop), the finder, the skill's file,
// the MCP server listed.
func TestGuardCallResource(t *testing.T) {
	g := &onlyEcho{}
	o := newTestOfficeOf(t, Config{Guard: g}, v03, func(string, json.RawMessage) (json.RawMessage, bool) {
		return json.RawMessage(`{}`), true
	})
	for _, tc := range []struct{ event, extra, uri, bundle string }{
		{smcp.EventReadResource, `"uri":"window://h/x"`, "window://h/x", ""},
		{smcp.EventGetDesktop, `"window":"window://h/y"`, "window://h/y", ""},
		{smcp.EventGetDesktop, `"window":null`, "window://", ""},
		{smcp.EventGetFinder, `"keywords":["a"]`, "dpe://", ""},
		{smcp.EventGetSkills, `"x":1`, "skill://", ""},
		{smcp.EventGetSkill, `"name":"mcp:b:s"`, "skill://mcp:b:s", ""},
		{smcp.EventGetSkill, `"name":"s","rel_path":"ref/a.md"`, "skill://s/ref/a.md", ""},
		{smcp.EventGetResources, `"mcp_server":"b"`, "", "b"},
	} {
		r := mustParse(t, tc.event, `{"agent":"alice","req_id":"r","computer":"pc",`+tc.extra+`}`)
		if _, err := o.agent.Route(context.Background(), r); err != nil {
			t.Fatalf("%s %s: %v", tc.event, tc.extra, err)
		}
		g.mu.Lock()
		c := g.calls[len(g.calls)-1]
		g.mu.Unlock()
		if c.Event != tc.event || c.URI != tc.uri || c.Bundle != tc.bundle {
			t.Errorf("%s %s: guard saw %q %q %q", tc.event, tc.extra, c.Event, c.URI, c.Bundle)
		}
	}
	_, err := o.agent.Route(context.Background(), mustParse(t, smcp.EventReadResource, `{"agent":"alice","req_id":"r","computer":"pc","uri":"a","x":{"uri":5}}`))
	if err != nil {
		t.Fatalf("a nested key of the same name is not the request's: %v", err)
	}
}

// The outcome of a tool call answered with an error result says why.
func TestGatewayResultError(t *testing.T) {
	r := mustParse(t, smcp.EventToolCall, `{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5}`)
	for _, tc := range []struct {
		raw  string
		code int // 0: nil; -1: context.Canceled
	}{
		{`{"content":[],"isError":false}`, 0},
		{`{"content":[{"type":"text","text":"x"}]}`, 0},
		{string(smcp.GatewayResult(smcp.ComputerTimeoutError(smcp.EventToolCall, "c", time.Second))), smcp.CodeTimeout},
		{string(smcp.GatewayResult(smcp.ComputerGoneError("c"))), smcp.CodeNotFound},
		{`{"content":[],"isError":true,"meta":{"a2c_error_code":4001}}`, 4001},
		{`{"content":[],"isError":true,"meta":{"a2c_cancelled":true,"a2c_cancel_reason":"agent_requested"}}`, -1},
		{`{"content":[],"isError":true}`, 0},
		// The key written with escapes is the same key.
		{`{"content":[],"is\u0045rror" : true,"meta":{"a2c_error_code":4001}}`, 4001},
		{`{"content":[],"isError" :
 true,"meta":{"a2c_error_code":4001}}`, 4001},
		{`{"content":[],"isError":false,"meta":{"a2c_error_code":4001}}`, 0},
		// "isError" inside a text is not the key.
		{`{"content":[{"type":"text","text":"\"isError\":true"}],"meta":{"a2c_error_code":4001}}`, 0},
	} {
		err := gatewayResultError(r, json.RawMessage(tc.raw))
		switch tc.code {
		case 0:
			if err != nil {
				t.Errorf("%s: %v", tc.raw, err)
			}
		case -1:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v", tc.raw, err)
			}
		default:
			if se, ok := smcp.AsError(err); !ok || se.Code != tc.code {
				t.Errorf("%s: %v, want %d", tc.raw, err, tc.code)
			}
		}
	}
}

// admitAll admits everything and counts the outcomes, as a quota or an
// audit that lets every call through.
type admitAll struct{ n atomic.Int64 }

func (g *admitAll) Admit(context.Context, *Call) (func(Outcome), error) {
	return func(Outcome) { g.n.Add(1) }, nil
}
func (*admitAll) Visible(*Call) bool { return true }

// answerAtOnce is a computer's Conn that answers every request at once.
type answerAtOnce struct{ tools, result json.RawMessage }

func (answerAtOnce) Notify(Notification) {}
func (c answerAtOnce) Request(event string, _ json.RawMessage, done func(json.RawMessage, error)) func() {
	if event == smcp.EventGetTools {
		done(c.tools, nil)
	} else {
		done(c.result, nil)
	}
	return nil
}

// BenchmarkGuardedToolCall is the core's part of a tool call to a
// computer of this node answered at once, without a guard and with one
// that admits everything: the cost of the seam itself.
func BenchmarkGuardedToolCall(b *testing.B) {
	for _, tc := range []struct {
		name  string
		guard Guard
	}{{"none", nil}, {"admit-all", &admitAll{}}} {
		b.Run(tc.name, func(b *testing.B) {
			h := New(Config{Guard: tc.guard})
			p := &Principal{ID: "k"}
			agent, err := h.Attach("a", p, answerAtOnce{}, v02)
			if err != nil {
				b.Fatal(err)
			}
			pc, err := h.Attach("pc", p, answerAtOnce{tools: json.RawMessage(`{"tools":[{"name":"echo"}]}`),
				result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"isError":false}`)}, v02)
			if err != nil {
				b.Fatal(err)
			}
			if err := agent.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleAgent, Name: "alice", OfficeId: "o"}); err != nil {
				b.Fatal(err)
			}
			if err := pc.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o"}); err != nil {
				b.Fatal(err)
			}
			r, err := ParseRequest(smcp.EventToolCall,
				[]byte(`{"agent":"alice","req_id":"r","computer":"pc","tool_name":"echo","params":{"message":"hi"},"timeout":5}`))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := agent.Route(context.Background(), r); err != nil { // the tools are listed once
				b.Fatal(err)
			}
			var failed error
			done := func(_ json.RawMessage, err error) { failed = err }
			b.ReportAllocs()
			for b.Loop() {
				if !agent.TryGo(r, done) || failed != nil {
					b.Fatalf("not routed: %v", failed)
				}
			}
		})
	}
}
