package mcpfront

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestToMCPTool(t *testing.T) {
	wt := wireTool{
		Name: "search", Description: "Search.",
		ParamsSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		ReturnSchema: json.RawMessage(`{"type":"object","properties":{"hits":{"type":"array"}}}`),
		Meta: map[string]any{
			annotationKey:   `{"title":"Search","readOnlyHint":true,"openWorldHint":false}`,
			"a2c_tool_meta": `{"auto_apply":true}`,
			"owner":         "docs",
		},
	}
	tool, err := toMCPTool("pc-1", wt)
	if err != nil {
		t.Fatal(err)
	}
	if tool.Name != "pc-1__search" || tool.Title != "Search" || tool.Description != "Search." {
		t.Errorf("tool %+v", tool)
	}
	if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
		t.Errorf("annotations %+v", a)
	}
	if string(tool.InputSchema.(json.RawMessage)) != string(wt.ParamsSchema) {
		t.Errorf("input schema changed: %s", tool.InputSchema)
	}
	if string(tool.OutputSchema.(json.RawMessage)) != string(wt.ReturnSchema) {
		t.Errorf("output schema changed: %s", tool.OutputSchema)
	}
	if _, ok := tool.Meta[annotationKey]; ok || tool.Meta["owner"] != "docs" || tool.Meta["a2c_computer"] != "pc-1" ||
		tool.Meta["a2c_tool"] != "search" || tool.Meta["a2c_tool_meta"] == nil {
		t.Errorf("meta %v", tool.Meta)
	}

	for _, c := range []struct {
		params, ret string
		wantIn      string // "" when refused
		wantOut     bool
	}{
		{"", "null", `{"type":"object"}`, false},
		{`{"properties":{}}`, `{"type":"string"}`, `{"properties":{},"type":"object"}`, false},
		{`{"type":"array"}`, "", "", false},
		{`[1]`, "", "", false},
		{`{"type":"object"}`, `{"type":"object"}`, `{"type":"object"}`, true},
	} {
		tool, err := toMCPTool("pc", wireTool{Name: "t", ParamsSchema: json.RawMessage(c.params), ReturnSchema: json.RawMessage(c.ret)})
		if c.wantIn == "" {
			if err == nil {
				t.Errorf("params %s accepted", c.params)
			}
			continue
		}
		if err != nil {
			t.Errorf("params %s: %v", c.params, err)
			continue
		}
		if got := string(tool.InputSchema.(json.RawMessage)); got != c.wantIn {
			t.Errorf("params %s: input schema %s, want %s", c.params, got, c.wantIn)
		}
		if (tool.OutputSchema != nil) != c.wantOut {
			t.Errorf("return %s: output schema %v", c.ret, tool.OutputSchema)
		}
	}
	if _, err := toMCPTool("pc", wireTool{}); err == nil {
		t.Error("a tool without a name was accepted")
	}
}

// A malformed tool from a computer is refused with an error, never a panic.
func TestAddToolRefusesWhatTheSDKWouldPanicOn(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	bad := &mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object","properties":{"h":{"type":"object","x-mcp-header":"X"}}}`)}
	if err := addTool(s, bad, nil); err == nil {
		t.Error("a tool the go-sdk refuses was added")
	}
}

// clientView is a result as an MCP client reads it: encoded by the go-sdk
// server, decoded by the go-sdk.
func clientView(t *testing.T, res *mcp.CallToolResult) (*mcp.CallToolResult, string) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got mcp.CallToolResult
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return &got, string(b)
}

func TestToolResult(t *testing.T) {
	// The gateway's own timeout result: SMCP's "meta" becomes "_meta".
	res, err := toolResult(smcp.GatewayResult(smcp.ComputerTimeoutError(smcp.EventToolCall, "pc", time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if got, b := clientView(t, res); !res.IsError || !got.IsError || got.Meta["a2c_timeout"] != true || got.Content[0].(*mcp.TextContent).Text != "Tool call timeout" {
		t.Errorf("timeout result: %s", b)
	}
	res, err = toolResult(json.RawMessage(`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"structuredContent":{"n":1},"_meta":{"k":"v"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, b := clientView(t, res); len(got.Content) != 2 || got.IsError || got.Meta["k"] != "v" || !strings.Contains(b, `"structuredContent":{"n":1}`) {
		t.Errorf("text result: %s", b)
	}
	// Any content, annotations included.
	res, err = toolResult(json.RawMessage(`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"text","text":"t","annotations":{"priority":0.5}}],"meta":{"a2c_cancelled":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, b := clientView(t, res)
	if len(got.Content) != 2 || got.Meta["a2c_cancelled"] != true {
		t.Fatalf("image result: %s", b)
	}
	if img, ok := got.Content[0].(*mcp.ImageContent); !ok || string(img.Data) != "hi" {
		t.Errorf("image content %+v", got.Content[0])
	}
	if txt, ok := got.Content[1].(*mcp.TextContent); !ok || txt.Annotations == nil || txt.Annotations.Priority != 0.5 {
		t.Errorf("annotated text %+v", got.Content[1])
	}
	for _, bad := range []string{`{"content":"nope"}`, `{"content":[{"type":"text","text":"a"}],"isError":"yes"}`,
		`{"content":[{"type":"text","text":"a"}`, `[]`, `{"content":[{"type":"text","text":"a"}],"_meta":[1]}`,
		`{"content":[],"meta":"m"}`, `{"content":[1]}`, `{"content":[{"text":"a"}]}`, `{"content":[{"type":"bogus"}]}`,
		`{"content":[{"type":7}]}`} {
		if _, err := toolResult(json.RawMessage(bad)); !hasSMCPCode(err, 500) {
			t.Errorf("malformed result %s: %v", bad, err)
		}
	}
}

// An answer in MCP's shape reaches the client as the computer wrote it:
// member order, unknown members, annotations; SMCP's "meta" alone is renamed
// in place.
func TestToolResultRelayedAsIs(t *testing.T) {
	for in, want := range map[string]string{
		`{"isError":false,"content":[{"text":"b","type":"text","annotations":{"audience":["user"]}}],"x-vendor":{"k":[1,2.50]}}`: ``,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x"}],"structuredContent":[1,2],"_meta":{"k":1}}`:          ``,
		`{"content":[{"type":"text","text":"a"}],"meta":{"a2c_tool_meta":"{}"},"isError":true}`:                                  `{"content":[{"type":"text","text":"a"}],"_meta":{"a2c_tool_meta":"{}"},"isError":true}`,
		`{ "content" : [ ] , "meta" : null }`: `{"content":[],"_meta":null}`,
	} {
		res, err := toolResult(json.RawMessage(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if want == "" {
			want = in
		}
		if _, b := clientView(t, res); b != want {
			t.Errorf("%s:\n got  %s\n want %s", in, b, want)
		}
	}
}

// Whether relayed or decoded, a result reads the same to a client as the
// go-sdk's own decoding of the computer's answer.
func TestToolResultMatchesSDKDecoding(t *testing.T) {
	for _, in := range []string{
		`{"content":[{"type":"text","text":"a \"q\" \u00e9\n\ud83d\ude00"}],"isError":true}`,
		`{"isError":false, "content" : [ {"text":"b","type":"text"} ] ,"x":1}`,
		`{"content":[],"structuredContent":null,"_meta":{"k":1}}`,
		`{"content":null}`,
		`{}`,
		`{"content":[{"type":"text","text":"c","_meta":{"m":1}}],"meta":{"smcp":true}}`,
		`{"content":[{"type":"text","text":"c"}],"meta":{"smcp":true},"_meta":{}}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"type":"text","text":"d"},{"type":"resource_link","uri":"file:///x","name":"x"}],"structuredContent":[1,2]}`,
	} {
		res, err := toolResult(json.RawMessage(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got, _ := clientView(t, res)
		var want mcp.CallToolResult
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("go-sdk refuses %s: %v", in, err)
		}
		if len(want.Meta) == 0 {
			var smcpMeta struct {
				Meta map[string]any `json:"meta"`
			}
			_ = json.Unmarshal([]byte(in), &smcpMeta)
			want.Meta = smcpMeta.Meta
		}
		if want.Content == nil {
			want.Content = []mcp.Content{}
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(&want)
		if string(g) != string(w) {
			t.Errorf("%s:\n got  %s\n want %s", in, g, w)
		}
	}
}

func hasSMCPCode(err error, code int) bool {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return false
	}
	var d struct {
		Code int `json:"code"`
	}
	return json.Unmarshal(we.Data, &d) == nil && d.Code == code
}

func TestMCPError(t *testing.T) {
	for _, c := range []struct {
		err  error
		read bool
		code int64
		smcp int
	}{
		{smcp.Errorf(smcp.CodePageOutOfRange, "page 9"), true, jsonrpc.CodeInvalidParams, 4202},
		{smcp.Errorf(smcp.CodeDocumentNotFound, "no doc"), true, mcp.CodeResourceNotFound, 4201},
		{smcp.Errorf(smcp.CodeNotFound, "computer not found in this office"), false, jsonrpc.CodeInvalidParams, 404},
		{smcp.Errorf(smcp.CodeTimeout, "late"), false, codeRequestTimed, 408},
		{smcp.Errorf(core.CodeTooManyPending, "busy"), false, codeServerError, 429},
		{fmt.Errorf("wrapped: %w", smcp.Errorf(smcp.CodeForbidden, "no")), false, codeServerError, 403},
		{errors.New("dial tcp 10.0.0.7:6379: secret detail"), false, jsonrpc.CodeInternalError, 500},
	} {
		err := mcpError(c.err, c.read)
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != c.code || !hasSMCPCode(err, c.smcp) {
			t.Errorf("%v: %v", c.err, fmtErr(err))
		}
		if strings.Contains(we.Message+string(we.Data), "10.0.0.7") {
			t.Errorf("internal detail leaked: %s %s", we.Message, we.Data)
		}
	}
}

func fmtErr(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return fmt.Sprintf("code %d message %q data %s", we.Code, we.Message, we.Data)
	}
	return fmt.Sprint(err)
}

// BenchmarkToolResult weighs what a computer's result costs on every
// tools/call, made into the go-sdk's answer and encoded as the server does:
// "relay" is toolResult (the answer relayed as it is), "sdk" the go-sdk's
// own decoding of the same bytes (what fullToolResult does) and encoding.
func BenchmarkToolResult(b *testing.B) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}],"isError":false}`)
	for name, conv := range map[string]func() (*mcp.CallToolResult, error){
		"relay": func() (*mcp.CallToolResult, error) { return toolResult(raw) },
		"sdk":   func() (*mcp.CallToolResult, error) { return fullToolResult(raw, nil, nil) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := conv()
				if err == nil {
					_, err = json.Marshal(res)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadBody: the body is read whole, up to the limit, whatever its
// Content-Length says (a client may announce it wrong, or not at all), and
// a sized buffer is read in one allocation.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("ab", 700) // longer than io.ReadAll's first 512 bytes
	for _, tc := range []struct {
		name          string
		contentLength int64
		limit         int64
		want          string
	}{
		{"exact", int64(len(body)), 4096, body},
		{"unknown", -1, 4096, body},
		{"understated", 10, 4096, body},
		{"overstated", 4000, 4096, body},
		{"empty", 0, 4096, ""}, // the reader below is empty too
		{"over the limit", int64(len(body)), 100, body[:100]},
		{"over the limit, unknown length", -1, 100, body[:100]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := body
			if tc.want == "" {
				src = ""
			}
			// Short reads exercise the loop.
			got, err := readBody(&shortReader{s: src}, tc.contentLength, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("read %d bytes %.20q..., want %d", len(got), got, len(tc.want))
			}
		})
	}
	// A claimed length is not taken on trust: the first buffer stays small
	// for a body that does not come.
	big, err := readBody(strings.NewReader("{}"), 1<<30, 2<<30)
	if err != nil || string(big) != "{}" || cap(big) > presizeMax {
		t.Fatalf("read %q (cap %d, err %v) for a body claiming 1 GiB", big, cap(big), err)
	}
	r := strings.NewReader(body)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(body)
		if _, err := readBody(r, int64(len(body)), 4096); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations per body with its Content-Length, want 1", allocs)
	}
}

// shortReader returns at most 100 bytes per Read.
type shortReader struct{ s string }

func (r *shortReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 100)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// toolCallRequest makes the request core.ParseRequest makes of the same
// payload, and refuses what it refuses, with its error.
func TestToolCallRequestMatchesParseRequest(t *testing.T) {
	for _, c := range []struct {
		agent, reqID, computer, tool string
		secs                         int32
		args                         string
	}{
		{"mcp-agent", "mcp-x-1", "pc", "echo", 60, `{"text":"hello"}`},
		{"ag\"ent", "id\\1", "pc-ü", "tool\u2028name", 1, `{}`},
		{"a", "r", "c", "t", smcp.MaxToolCallTimeout, `{"n":[1,{"x":null}],"s":"\u00e9"}`},
		{"a", "r", "c", "t", 30, `[1]`},
		{"a", "r", "c", "t", 30, `"text"`},
		{"a", "r", "c", "t", 0, `{}`},
		{"a", "r", "c", "", 30, `{}`},
	} {
		got, gerr := toolCallRequest(c.agent, c.reqID, c.computer, c.tool, c.secs, json.RawMessage(c.args))
		payload, err := smcp.ToolCallPayload(&smcpv1.ToolCallReq{Agent: c.agent, ReqId: c.reqID, Computer: c.computer,
			ToolName: c.tool, Timeout: c.secs}, json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		want, werr := core.ParseRequest(smcp.EventToolCall, payload)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%+v: error %v, ParseRequest's %v", c, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if got.Event != want.Event || got.Agent != want.Agent || got.ReqID != want.ReqID || got.Computer != want.Computer ||
			got.Timeout != want.Timeout || string(got.Payload) != string(want.Payload) || got.GoneAsError != want.GoneAsError {
			t.Errorf("%+v:\n got %+v\nwant %+v", c, got, want)
		}
	}
}
