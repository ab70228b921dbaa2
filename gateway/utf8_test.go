package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/smcpgw/smcp-gateway/gateway"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// invalidUTF8 is what issue 22 sent: a byte that starts no UTF-8 sequence,
// then a lead byte without its continuation.
const invalidUTF8 = "\xff\xc3"

// utf8Office is a relay office whose computer "pc" lists one tool "t" (for
// MCP), answers a call whose params hold "answer-badly" with invalid UTF-8,
// get_config likewise, and echoes anything else.
func utf8Office(t *testing.T) *relayOffice {
	return newRelayOffice(t, gateway.Config{}, func(event string, payload []byte) string {
		var m struct {
			ReqID string `json:"req_id"`
		}
		_ = json.Unmarshal(payload, &m)
		switch {
		case event == "client:get_tools":
			return fmt.Sprintf(`{"tools":[{"name":"t","description":"d","params_schema":{"type":"object"},"return_schema":null,"meta":{}}],"req_id":%q}`, m.ReqID)
		case event == "client:get_config":
			return `{"servers":{"s":{"name":"` + invalidUTF8 + `"}},"inputs":[]}`
		case event != "client:tool_call":
			return `{"req_id":"` + m.ReqID + `"}`
		case bytes.Contains(payload, []byte("answer-badly")):
			return `{"content":[{"type":"text","text":"` + invalidUTF8 + `"}],"isError":false}`
		}
		return `{"content":[{"type":"text","text":"echo"}],"isError":false}`
	})
}

// received reports whether the computer got a payload holding text, and
// fails the test when it ever got bytes that are not UTF-8.
func (o *relayOffice) receivedUTF8(t *testing.T, text string) bool {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	found := false
	for _, r := range o.received {
		if !utf8.Valid(r) {
			t.Errorf("the computer received invalid UTF-8: %q", r)
		}
		found = found || bytes.Contains(r, []byte(text))
	}
	return found
}

func wantUTF8Refusal(t *testing.T, what string, got []byte) {
	t.Helper()
	if !bytes.HasPrefix(got, []byte(`[{"code":400,`)) || !bytes.Contains(got, []byte("invalid UTF-8")) {
		t.Errorf("%s: got %s, want a flat 400 naming invalid UTF-8", what, got)
	}
}

// TestInvalidUTF8OverSocketIO: an agent's event holding invalid UTF-8 is
// answered with a flat 400 and never reaches the computer; a computer's
// answer holding it fails that one call (a gateway-made CallToolResult for
// tool_call, a flat error otherwise) and never reaches the agent; both stay
// connected and their next calls are relayed.
func TestInvalidUTF8OverSocketIO(t *testing.T) {
	o := utf8Office(t)
	got := o.agent.wait(o.agent.emit("client:tool_call", toolCall("bad-params", `{"s":"`+invalidUTF8+`"}`, 10)), 5*time.Second)
	wantUTF8Refusal(t, "tool_call", got)
	// In a key, in the routing fields, as the event name, after valid text.
	for _, frame := range []string{
		`["client:tool_call",{"agent":"ag","req_id":"k","computer":"pc","tool_name":"t","params":{"` + invalidUTF8 + `":1},"timeout":5}]`,
		`["client:tool_call",{"agent":"ag","req_id":"r","computer":"pc` + invalidUTF8 + `","tool_name":"t","params":{},"timeout":5}]`,
		`["client:get_config` + invalidUTF8 + `",{}]`,
		`["client:get_config",{"agent":"ag","req_id":"é` + invalidUTF8 + `","computer":"pc"}]`,
	} {
		wantUTF8Refusal(t, frame, o.agent.wait(o.agent.emitFrame("42/smcp,", frame), 5*time.Second))
	}
	if o.receivedUTF8(t, `"req_id":"bad-params"`) || o.receivedUTF8(t, `"req_id":"k"`) {
		t.Error("a refused call reached the computer")
	}

	got = o.agent.wait(o.agent.emit("client:tool_call", toolCall("bad-answer", `{"x":"answer-badly"}`, 10)), 5*time.Second)
	if !bytes.Contains(got, []byte(`"isError":true`)) || !bytes.Contains(got, []byte(`"a2c_error_code":500`)) ||
		!bytes.Contains(got, []byte("invalid UTF-8")) || !utf8.Valid(got) {
		t.Errorf("invalid answer to tool_call: agent got %q", got)
	}
	got = o.agent.wait(o.agent.emit("client:get_config", `{"agent":"ag","req_id":"cfg","computer":"pc"}`), 5*time.Second)
	if !bytes.HasPrefix(got, []byte(`[{"code":500,`)) || !bytes.Contains(got, []byte("invalid UTF-8")) || !utf8.Valid(got) {
		t.Errorf("invalid answer to get_config: agent got %q", got)
	}

	// Both still connected and joined: a call goes through.
	got = o.agent.wait(o.agent.emit("client:tool_call", toolCall("after", `{"s":"é"}`, 10)), 5*time.Second)
	if !bytes.Contains(got, []byte(`"text":"echo"`)) || !o.receivedUTF8(t, `"req_id":"after"`) {
		t.Errorf("call after the refusals: %s", got)
	}
}

// TestInvalidUTF8OverConnect: a CallTool whose params_json, Struct params
// (Connect JSON) or string field (protobuf) holds invalid UTF-8, or whose
// agent header does, is refused 400 / InvalidArgument and never reaches
// the computer; a computer's invalid answer fails that call with a
// gateway-made error result; the next call is relayed.
func TestInvalidUTF8OverConnect(t *testing.T) {
	o := utf8Office(t)
	if got := o.agent.wait(o.agent.emit("server:leave_office", `{"office_id":"o"}`), 5*time.Second); string(got) != "[true,null]" {
		t.Fatalf("leave: %s", got)
	}
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, o.gw.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t", Timeout: 5,
		ParamsJson: []byte(`{"s":"` + invalidUTF8 + `"}`)})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "invalid UTF-8") {
		t.Errorf("params_json: %v, want InvalidArgument naming invalid UTF-8", err)
	}

	post := func(what, want, contentType string, body []byte, header http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.gw.URL+"/smcp.v1.AgentService/CallTool", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), want) || !utf8.Valid(b) {
			t.Errorf("%s: %d %q, want 400 saying %q", what, resp.StatusCode, b, want)
		}
	}
	post("Connect JSON, Struct params", "invalid UTF-8", "application/json",
		[]byte(`{"office_id":"o","computer":"pc","tool_name":"t","timeout":5,"params":{"s":"`+invalidUTF8+`"}}`), nil)
	var pb []byte
	for _, f := range []struct {
		n protowire.Number
		v string
	}{{1, "o"}, {2, "pc"}, {3, "t" + invalidUTF8}} {
		pb = protowire.AppendTag(pb, f.n, protowire.BytesType)
		pb = protowire.AppendString(pb, f.v)
	}
	post("protobuf, tool_name", "invalid UTF-8", "application/proto", pb, nil)
	// Refused before the name takes the office (protobuf would refuse it
	// only when encoding the call).
	post("agent header", "agent name must be valid UTF-8", "application/json", []byte(`{"office_id":"o","computer":"pc","tool_name":"t","timeout":5}`),
		http.Header{"X-Smcp-Agent": {"ag" + invalidUTF8}})
	if o.receivedUTF8(t, `"tool_name":"t`) {
		t.Error("a refused call reached the computer")
	}

	res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t", Timeout: 5,
		ParamsJson: []byte(`{"x":"answer-badly"}`)})
	if err != nil || !res.GetResult().GetIsError() || !strings.Contains(string(res.GetResultJson()), "invalid UTF-8") {
		t.Errorf("invalid answer: %v %v", res, err)
	}
	res, err = cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t", Timeout: 5,
		ParamsJson: []byte(`{"s":"é"}`)})
	if err != nil || res.GetResult().GetIsError() || !o.receivedUTF8(t, `"params":{"s":"é"}`) {
		t.Errorf("call after the refusals: %v %v", res, err)
	}
}

// TestInvalidUTF8OverMCP: an MCP request body holding invalid UTF-8 is
// refused 400 (the go-sdk would have replaced the bytes with U+FFFD and
// relayed the changed text), as is an office path that decodes to it; the
// session stays usable; a computer's invalid answer is an error result.
func TestInvalidUTF8OverMCP(t *testing.T) {
	o := utf8Office(t)
	if got := o.agent.wait(o.agent.emit("server:leave_office", `{"office_id":"o"}`), 5*time.Second); string(got) != "[true,null]" {
		t.Fatalf("leave: %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcpSession(ctx, o.gw.URL, "o")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()

	post := func(what, path, sid, body string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.gw.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "UTF-8") || !utf8.Valid(b) {
			t.Errorf("%s: %d %q, want 400 naming UTF-8", what, resp.StatusCode, b)
		}
	}
	post("tools/call", "/mcp/o", cs.ID(),
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pc__t","arguments":{"s":"`+invalidUTF8+`"}}}`)
	post("initialize", "/mcp/o", "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"`+invalidUTF8+`","version":"1"}}}`)
	post("office path", "/mcp/o%FF", "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if o.receivedUTF8(t, `"tool_name":"t"`) {
		t.Error("a refused call reached the computer")
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc__t", Arguments: map[string]any{"x": "answer-badly"}})
	if err != nil || !res.IsError {
		t.Errorf("invalid answer: %+v %v", res, err)
	} else if text, _ := res.Content[0].(*mcp.TextContent); text == nil || !strings.Contains(text.Text, "invalid UTF-8") {
		t.Errorf("invalid answer: %+v", res.Content)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc__t", Arguments: map[string]any{"s": "é"}})
	if err != nil || res.IsError || !o.receivedUTF8(t, `"params":{"s":"é"}`) {
		t.Errorf("call after the refusals: %+v %v", res, err)
	}
}
