package computer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// e2e is an agent and a computer in one office of a real gateway on loopback.
type e2e struct {
	*harness
	ag    *agent.Client
	notes chan agent.Notification
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newE2E(t *testing.T, servers map[string]map[string]any) *e2e {
	t.Helper()
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	h := newComputer(t, servers)
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-1", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Logger: quietLogger(), Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	notes := make(chan agent.Notification, 256)
	ag.OnNotification(func(n agent.Notification) {
		select {
		case notes <- n:
		default:
		}
	})
	if err := ag.Join(ctxT(t), "office-1"); err != nil {
		t.Fatal(err)
	}
	return &e2e{harness: h, ag: ag, notes: notes}
}

func (e *e2e) waitNote(t *testing.T, event string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case n := <-e.notes:
			if n.Event == event {
				if u, ok := n.Payload.(*smcpv1.UpdateComputerConfigReq); ok && u.GetComputer() != "pc" {
					t.Fatalf("%s for %q", event, u.GetComputer())
				}
				return
			}
		case <-deadline:
			t.Fatalf("agent got no %s", event)
		}
	}
}

func params(t *testing.T, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func text0(r *smcpv1.CallToolResult) string {
	if len(r.GetContent()) == 0 {
		return ""
	}
	return r.GetContent()[0].GetFields()["text"].GetStringValue()
}

func TestE2ETools(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	b := testmcp.New("b", testmcp.Options{})
	c := testmcp.New("c", testmcp.Options{})
	e := newE2E(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "tool_meta": map[string]any{"echo": map[string]any{"alias": "a_echo"}}, "forbidden_tools": []any{"pid"}},
		"b": {"url": fixture(t, b), "forbidden_tools": []any{"pid", "add"}},
		// c's slow clashes with b's: neither is listed or callable.
		"c": {"url": fixture(t, c), "forbidden_tools": []any{"pid", "add", "echo"}},
	})
	ctx := ctxT(t)
	tools, err := e.ag.GetTools(ctx, "pc")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*smcpv1.SMCPTool{}
	for _, tl := range tools.GetTools() {
		names[tl.GetName()] = tl
	}
	if names["a_echo"] == nil || names["echo"] == nil || names["add"] == nil || names["pid"] != nil || names["slow"] != nil || len(names) != 3 {
		t.Fatalf("tools: %v", tools)
	}
	if !strings.Contains(names["a_echo"].GetMeta().GetFields()[smcp.MetaToolMeta].GetStringValue(), `"alias":"a_echo"`) {
		t.Fatalf("meta: %v", names["a_echo"].GetMeta())
	}
	res, err := e.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "a_echo", Params: params(t, map[string]any{"text": "hi"}), Timeout: 10})
	if err != nil || res.GetIsError() || text0(res) != "a: hi" {
		t.Fatalf("a_echo: %v %v", res, err)
	}
	res, err = e.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "pid", Timeout: 10})
	if err != nil || !res.GetIsError() {
		t.Fatalf("forbidden: %v %v", res, err)
	}
	res, err = e.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "slow", Params: params(t, map[string]any{"tag": "e2e", "seconds": 0}), Timeout: 10})
	if err != nil || !res.GetIsError() || !strings.Contains(text0(res), "alias") {
		t.Fatalf("clash: %v %v", res, err)
	}

	// Timeout: the computer answers at the call's timeout, before the gateway's margin.
	slowFix := map[string]map[string]any{"s": {"url": fixture(t, testmcp.New("s", testmcp.Options{}))}}
	e2 := newE2E(t, slowFix)
	start := time.Now()
	res, err = e2.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "slow", Params: params(t, map[string]any{"tag": "e2e", "seconds": 30}), Timeout: 1})
	if err != nil || !res.GetIsError() || !res.GetMeta().GetFields()[smcp.MetaTimeout].GetBoolValue() {
		t.Fatalf("timeout: %v %v", res, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("timeout answered after %s: by the gateway, not the computer", time.Since(start))
	}

	// Cancel: the agent's server:tool_call_cancel reaches the computer as notify:tool_call_cancel.
	done := make(chan *smcpv1.CallToolResult, 1)
	go func() {
		r, err := e2.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ReqId: "cancel-me", ToolName: "slow",
			Params: params(t, map[string]any{"tag": "e2e", "seconds": 30}), Timeout: 60})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	deadline := time.Now().Add(15 * time.Second)
	for res = nil; res == nil; {
		if err := e2.ag.CancelToolCall("cancel-me"); err != nil {
			t.Fatal(err)
		}
		select {
		case res = <-done:
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("not cancelled")
			}
		}
	}
	m := res.GetMeta().GetFields()
	if !res.GetIsError() || !m[smcp.MetaCancelled].GetBoolValue() || m[smcp.MetaCancelReason].GetStringValue() != smcp.CancelReasonAgent {
		t.Fatalf("cancel: %v", res)
	}
}

func TestE2ENotifications(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	f.SetWindow(testmcp.Window{URI: "window://s/w", Text: "one"})
	f.SetDocs("s.docs", docs("s", 2)...)
	e := newE2E(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})
	f.AddEcho("shout")
	e.waitNote(t, smcp.NotifyUpdateToolList)
	if err := f.SetWindowText(context.Background(), "window://s/w", "two"); err != nil {
		t.Fatal(err)
	}
	e.waitNote(t, smcp.NotifyUpdateDesktop)
	if err := f.TouchDoc(context.Background(), "s.docs", "s-000", "new title"); err != nil {
		t.Fatal(err)
	}
	e.waitNote(t, smcp.NotifyUpdateFinder)
	if err := e.c.DisableServer("s"); err != nil {
		t.Fatal(err)
	}
	e.waitNote(t, smcp.NotifyUpdateConfig)
}

func TestE2EDesktop(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetWindow(testmcp.Window{URI: "window://a/low", Text: "low", Priority: ptr(0.2)})
	a.SetWindow(testmcp.Window{URI: "window://a/high", Text: "high", Priority: ptr(0.8)})
	b := testmcp.New("b", testmcp.Options{})
	b.SetWindow(testmcp.Window{URI: "window://b/side", Text: "side", Priority: ptr(1.0)})
	b.SetWindow(testmcp.Window{URI: "window://b/full", Text: "full", Fullscreen: true})
	e := newE2E(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "tool_meta": map[string]any{"echo": map[string]any{"alias": "a_echo"}}, "forbidden_tools": []any{"add", "slow", "pid"}},
		"b": {"url": fixture(t, b), "tool_meta": map[string]any{"echo": map[string]any{"alias": "b_echo"}}, "forbidden_tools": []any{"add", "slow", "pid"}},
	})
	ctx := ctxT(t)
	get := func(req *smcpv1.GetDeskTopReq) []string {
		t.Helper()
		req.Computer = "pc"
		ret, err := e.ag.GetDesktop(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return ret.GetDesktops()
	}
	want := []string{"window://a/high\n\nhigh", "window://a/low\n\nlow", "window://b/full\n\nfull"}
	if got := get(&smcpv1.GetDeskTopReq{}); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("desktop %q", got)
	}
	if got := get(&smcpv1.GetDeskTopReq{DesktopSize: ptr[int32](1)}); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("size: %q", got)
	}
	if got := get(&smcpv1.GetDeskTopReq{Window: ptr("window://b/side")}); len(got) != 1 || got[0] != "window://b/side\n\nside" {
		t.Fatalf("window filter: %q", got)
	}
	if got := get(&smcpv1.GetDeskTopReq{Window: ptr("window://b/none")}); len(got) != 0 {
		t.Fatalf("no match: %q", got)
	}
	if _, err := e.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "b_echo", Params: params(t, map[string]any{"text": "x"})}); err != nil {
		t.Fatal(err)
	}
	if got := get(&smcpv1.GetDeskTopReq{}); got[0] != "window://b/full\n\nfull" {
		t.Fatalf("history order: %q", got)
	}
}

func TestE2EFinderAndReadResource(t *testing.T) {
	a := testmcp.New("a", testmcp.Options{})
	a.SetDocs("a.docs", docs("a", 25)...)
	b := testmcp.New("b", testmcp.Options{})
	b.SetDocs("b.docs", docs("b", 5)...)
	e := newE2E(t, map[string]map[string]any{
		"a": {"url": fixture(t, a), "tool_meta": map[string]any{"echo": map[string]any{"alias": "a_echo"}}, "forbidden_tools": []any{"add", "slow", "pid"}},
		"b": {"url": fixture(t, b), "tool_meta": map[string]any{"echo": map[string]any{"alias": "b_echo"}}, "forbidden_tools": []any{"add", "slow", "pid"}},
	})
	ctx := ctxT(t)
	find := func(req *smcpv1.GetFinderReq) *smcpv1.GetFinderRet {
		t.Helper()
		req.Computer = "pc"
		ret, err := e.ag.GetFinder(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return ret
	}
	ret := find(&smcpv1.GetFinderReq{})
	if ret.GetTotalCount() != 30 || len(ret.GetDocuments()) != 20 || ret.GetDocuments()[0].GetServer() != "a" {
		t.Fatalf("default: %d %d", ret.GetTotalCount(), len(ret.GetDocuments()))
	}
	ret = find(&smcpv1.GetFinderReq{Offset: ptr[int32](20), Limit: ptr[int32](20)})
	if ret.GetTotalCount() != 30 || len(ret.GetDocuments()) != 10 || ret.GetDocuments()[9].GetServer() != "b" {
		t.Fatalf("page 2: %d %d", ret.GetTotalCount(), len(ret.GetDocuments()))
	}
	ret = find(&smcpv1.GetFinderReq{Keywords: []string{"B REPORT"}, FileType: ptr("pdf")})
	if ret.GetTotalCount() != 3 {
		t.Fatalf("keywords+file_type: %v", ret)
	}
	for _, d := range ret.GetDocuments() {
		if d.GetServer() != "b" || d.GetFileType() != "pdf" {
			t.Fatalf("filtered doc: %v", d)
		}
	}
	if _, err := e.ag.GetFinder(ctx, &smcpv1.GetFinderReq{Computer: "pc", Limit: ptr[int32](101)}); err == nil {
		t.Fatal("limit 101 accepted")
	} else if se, ok := smcp.AsError(err); !ok || se.Code != 400 {
		t.Fatalf("limit 101: %v", err)
	}
	if _, err := e.ag.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "b_echo", Params: params(t, map[string]any{"text": "x"})}); err != nil {
		t.Fatal(err)
	}
	if ret = find(&smcpv1.GetFinderReq{Limit: ptr[int32](5)}); ret.GetDocuments()[0].GetServer() != "b" {
		t.Fatalf("history order: %v", ret.GetDocuments()[0])
	}

	read := func(uri string) (map[string]any, error) {
		ret, err := e.ag.ReadResource(ctx, "pc", uri)
		if err != nil {
			return nil, err
		}
		if len(ret.GetContents()) == 0 {
			t.Fatalf("%s: no contents", uri)
		}
		c := ret.GetContents()[0]
		if c.GetMimeType() != "application/json" {
			return map[string]any{"markdown": c.GetText()}, nil
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(c.GetText()), &m); err != nil {
			t.Fatal(err)
		}
		return m, nil
	}
	for uri, check := range map[string]func(map[string]any) bool{
		"dpe://a.docs":                                  func(m map[string]any) bool { return m["total_count"] == 25.0 },
		"dpe://a.docs/a-003":                            func(m map[string]any) bool { return m["title"] == "a report 3" },
		"dpe://a.docs/a-003?depth=pages&limit=1":        func(m map[string]any) bool { return len(m["pages"].([]any)) == 1 },
		"dpe://a.docs/a-003/pages/0?categories=heading": func(m map[string]any) bool { return m["element_count"] == 1.0 },
		"dpe://a.docs/a-003/pages/0?format=markdown":    func(m map[string]any) bool { return strings.Contains(m["markdown"].(string), "[table: numbers]") },
		"dpe://a.docs/a-003/elements/h1":                func(m map[string]any) bool { return m["category"] == "heading" },
		"dpe://a.docs/a-003/elements/t1?format=json":    func(m map[string]any) bool { return m["category"] == "table" },
	} {
		m, err := read(uri)
		if err != nil || !check(m) {
			t.Errorf("%s: %v %v", uri, m, err)
		}
	}
	for uri, code := range map[string]int{
		"dpe://a.docs/missing":                        4201,
		"dpe://a.docs/a-003/pages/9":                  4202,
		"dpe://a.docs/a-003/elements/nope":            4203,
		"dpe://a.docs/a-003?format=pdf":               4204,
		"dpe://a.docs/a-003/pages/0?categories=bogus": 4204,
		"dpe://unknown.host/x":                        4201,
	} {
		_, err := read(uri)
		if se, ok := smcp.AsError(err); !ok || se.Code != code {
			t.Errorf("%s: %v, want %d", uri, err, code)
		}
	}
}

// TestE2ERejoinAfterGatewayRestart restarts the gateway on the same address:
// the computer reconnects, re-joins its office and answers agents again.
func TestE2ERejoinAfterGatewayRestart(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(gw.URL, "http://")
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-1",
		Dial: sioclient.Options{Logger: quietLogger(), ReconnectDelay: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	if err := gw.Stop(); err != nil {
		t.Fatal(err)
	}
	gw2, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw2.Stop() })
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: gw2.URL, Logger: quietLogger(), Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "office-1"); err != nil {
		t.Fatal(err)
	}
	var tools *smcpv1.GetToolsRet
	if !testwait.Poll(20*time.Second, func() bool {
		tools, err = ag.GetTools(ctxT(t), "pc")
		return err == nil && len(tools.GetTools()) == 4
	}) {
		t.Fatalf("computer not back in the office: %v %v", tools, err)
	}
}

// TestE2EGetConfig decodes client:get_config with the protocol codec, as a
// typed agent does.
func TestE2EGetConfig(t *testing.T) {
	f := testmcp.New("s", testmcp.Options{})
	e := newE2E(t, map[string]map[string]any{
		"s":     {"url": fixture(t, f), "headers": map[string]any{"Authorization": "Bearer s3cret"}},
		"local": {"command": fixtureBin, "args": []any{"-name", 7}, "env": map[string]any{"N": 1}, "disabled": true},
	})
	ret, err := e.ag.GetConfig(ctxT(t), "pc")
	if err != nil {
		t.Fatal(err)
	}
	s := ret.GetServers()["s"].GetStreamable()
	if s.GetUrl() == "" || s.GetHeaders()["Authorization"] != "***" || s.GetTimeout() != "PT30S" {
		t.Fatalf("s: %v", ret.GetServers()["s"])
	}
	local := ret.GetServers()["local"]
	if !local.GetDisabled() || local.GetStdio().GetArgs()[1] != "7" || local.GetStdio().GetEncoding() != "utf-8" {
		t.Fatalf("local: %v", local)
	}
}

// TestRunLogsRefusedTools: a computer without a terminal under the default
// --confirm=deny says once, when it starts, which tools it will refuse and
// how to allow them.
func TestRunLogsRefusedTools(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	url := fixture(t, testmcp.New("a", testmcp.Options{}))
	for _, policy := range []string{tools.ConfirmDeny, tools.ConfirmAuto} {
		s, err := config.NewServer("a", map[string]any{"url": url, "tool_meta": map[string]any{"echo": map[string]any{"auto_apply": true}}})
		if err != nil {
			t.Fatal(err)
		}
		var logs testwait.Buffer
		c, err := computer.New(computer.Options{Name: "pc", Confirm: policy, Config: &config.Config{Servers: map[string]*config.Server{"a": s}},
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- c.Run(ctx, computer.Gateway{URL: gw.URL, Office: "o-" + policy, Dial: sioclient.Options{Logger: quietLogger()}})
		}()
		if !testwait.Poll(15*time.Second, func() bool { return strings.Contains(logs.String(), "joined office") }) {
			t.Fatalf("%s: computer did not join: %s", policy, logs.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		n := strings.Count(logs.String(), "need confirmation and will be refused")
		switch policy {
		case tools.ConfirmDeny:
			line := logs.String()[strings.Index(logs.String(), "3 of 4 tools need confirmation"):]
			line = line[:strings.IndexByte(line, '\n')]
			if n != 1 || !strings.Contains(line, `tools="add, pid, slow"`) || !strings.Contains(line, "--confirm=auto") || !strings.Contains(line, "auto_apply: true") {
				t.Fatalf("deny: %d lines; %s", n, line)
			}
		default:
			if n != 0 {
				t.Fatalf("auto: %d refusal lines", n)
			}
		}
	}
}

// TestGetFinderOfComputerWithoutFinder: a computer that answers
// client:get_finder with nothing (an SDK 0.1.x computer has no handler;
// python-socketio then acks with no value) gives the agent a clear "not
// supported by this computer" (501; Unimplemented over Connect), not a 500
// "malformed answer".
func TestGetFinderOfComputerWithoutFinder(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	old, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Close)
	old.Handle(smcp.EventGetFinder, func(context.Context, json.RawMessage) (any, error) { return nil, nil })
	if err := old.JoinOffice(ctxT(t), smcp.RoleComputer, "old-pc", "o"); err != nil {
		t.Fatal(err)
	}
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Logger: quietLogger(), Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "o"); err != nil {
		t.Fatal(err)
	}
	_, err = ag.GetFinder(ctxT(t), &smcpv1.GetFinderReq{Computer: "old-pc"})
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeNotSupported || !strings.Contains(e.Message, "not supported by this computer") {
		t.Fatalf("Socket.IO agent: %v", err)
	}
	api := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connecttest.Headers(rpc.AgentHeader, "bot"))
	_, err = api.GetFinder(ctxT(t), &smcpv1.GetFinderRequest{OfficeId: "o", Computer: "old-pc"})
	if connect.CodeOf(err) != connect.CodeUnimplemented || !strings.Contains(err.Error(), "not supported by this computer") {
		t.Fatalf("Connect agent: %v (%v)", err, connect.CodeOf(err))
	}
}
