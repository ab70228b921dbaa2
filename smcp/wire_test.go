package smcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestErrorFromAck(t *testing.T) {
	flat := &Error{Code: 404, Message: "computer not found in this office"}
	withDetails := &Error{Code: 4204, Message: "bad uri", Details: map[string]any{"rule": "limit"}}
	tests := []struct {
		name string
		ack  any
		want *Error
	}{
		{"flat map", map[string]any{"code": float64(404), "message": "computer not found in this office"}, flat},
		{"wrapped map", map[string]any{"error": map[string]any{"code": float64(404), "message": "computer not found in this office"}}, flat},
		{"ack arguments", []any{map[string]any{"code": float64(404), "message": "computer not found in this office"}}, flat},
		{"int code", map[string]any{"code": 404, "message": "computer not found in this office"}, flat},
		{"details", map[string]any{"code": 4204.0, "message": "bad uri", "details": map[string]any{"rule": "limit"}}, withDetails},
		{"raw flat", json.RawMessage(`{"code":404,"message":"computer not found in this office"}`), flat},
		{"raw wrapped", []byte(` {"error":{"code":4204,"message":"bad uri","details":{"rule":"limit"}}}`), withDetails},
		{"raw ack arguments", json.RawMessage(`[{"code":404,"message":"computer not found in this office"}]`), flat},
		{"code-specific fields", json.RawMessage(`{"code":4015,"message":"no resources","mcp_server":"fs","capability":"resources"}`),
			&Error{Code: 4015, Message: "no resources", Fields: map[string]any{"mcp_server": "fs", "capability": "resources"}}},

		{"tool result", map[string]any{"content": []any{}, "isError": true}, nil},
		{"get_tools answer", json.RawMessage(`{"tools":[],"req_id":"r"}`), nil},
		{"office ack", []any{false, "reason"}, nil},
		{"fractional code", map[string]any{"code": 4.5, "message": "x"}, nil},
		{"string code", map[string]any{"code": "404", "message": "x"}, nil},
		{"error not an object", map[string]any{"error": "boom"}, nil},
		{"raw garbage", json.RawMessage(`{"code":`), nil},
		{"raw string", json.RawMessage(`"code"`), nil},
		{"nil", nil, nil},
		{"string", "error", nil},
	}
	for _, tc := range tests {
		got, ok := ErrorFromAck(tc.ack)
		if ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ErrorFromAck = %+v, %v; want %+v", tc.name, got, ok, tc.want)
		}
	}
}

// Code-specific fields sit beside code and message (PROTOCOL-0.4.md §6)
// and never replace them.
func TestErrorWireFields(t *testing.T) {
	e := Errorf(CodeMCPServerNotFound, "no MCP server %q", "x").WithFields(map[string]any{"mcp_server": "x", "code": 1, "message": "m", "details": "d"})
	b, err := json.Marshal(e.Wire())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"code":4014,"mcp_server":"x","message":"no MCP server \"x\""}`; string(b) != want {
		t.Errorf("wire %s, want %s", b, want)
	}
	back, ok := ErrorFromAck(json.RawMessage(b))
	if !ok || back.Fields["mcp_server"] != "x" || back.Code != CodeMCPServerNotFound {
		t.Errorf("read back %+v", back)
	}
}

func TestErrorWireMatchesGolden(t *testing.T) {
	e := &Error{Code: CodeInvalidDPEURI, Message: `invalid dpe URI (rule limit): limit must be an integer in [1, 100], got "500"`,
		Details: map[string]any{"uri": "dpe://com.example.docs/rpt?limit=500", "rule": "limit"}}
	b, err := json.Marshal(e.Wire())
	if err != nil {
		t.Fatal(err)
	}
	want := canonical(t, readFixture(t, "testdata/golden/error.details.json"))
	if got := canonical(t, b); string(got) != string(want) {
		t.Errorf("Wire() = %s, want %s", got, want)
	}
	pb, err := Marshal(e.Proto())
	if err != nil {
		t.Fatal(err)
	}
	if got := canonical(t, pb); string(got) != string(want) {
		t.Errorf("Marshal(Proto()) = %s, want %s", got, want)
	}
}

func TestOfficeAck(t *testing.T) {
	ack := &smcpv1.OfficeAck{Ok: false, Reason: new("role mismatch")}
	if got := OfficeAckArgs(ack); !reflect.DeepEqual(got, []any{false, "role mismatch"}) {
		t.Errorf("OfficeAckArgs = %#v", got)
	}
	if got := OfficeAckArgs(&smcpv1.OfficeAck{Ok: true}); !reflect.DeepEqual(got, []any{true, nil}) {
		t.Errorf("OfficeAckArgs = %#v", got)
	}
	var back smcpv1.OfficeAck
	if err := FromWire([]any{false, "role mismatch"}, &back); err != nil || !proto.Equal(&back, ack) {
		t.Errorf("FromWire = %v, %v", &back, err)
	}
	for _, bad := range []string{`[]`, `[true, null, 1]`, `["yes"]`, `[null]`, `[true, 5]`, `[true, {}]`, `[`, `"true"`} {
		if err := Unmarshal([]byte(bad), &smcpv1.OfficeAck{}); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestCallToolResultMetaAlias(t *testing.T) {
	var r smcpv1.CallToolResult
	// "meta" wins over "_meta" when both are present.
	if err := Unmarshal([]byte(`{"content":[],"_meta":{"a":1},"meta":{"b":2}}`), &r); err != nil {
		t.Fatal(err)
	}
	if got := r.GetMeta().AsMap(); !reflect.DeepEqual(got, map[string]any{"b": 2.0}) {
		t.Errorf("meta = %v", got)
	}
	// A nested "_meta" (in a content block) is left where it is.
	if err := Unmarshal([]byte(`{"content":[{"type":"text","text":"x","_meta":{"k":1}}]}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Meta != nil || r.GetContent()[0].GetFields()["_meta"] == nil {
		t.Errorf("nested _meta moved: %v", &r)
	}
	if err := Unmarshal([]byte(`[1,2]`), &r); err == nil {
		t.Error("a non-object result was accepted")
	}
}

func TestMarshalToolDoesNotModify(t *testing.T) {
	tool := &smcpv1.SMCPTool{Name: "t"}
	ret := &smcpv1.GetToolsRet{Tools: []*smcpv1.SMCPTool{{Name: "full", ParamsSchema: &structpb.Struct{}, ReturnSchema: structpb.NewNullValue(), Meta: &structpb.Struct{}}, tool}, ReqId: "r"}
	b, err := Marshal(ret)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canonical(t, b)), `{"description":"","meta":{},"name":"t","params_schema":{},"return_schema":null}`) {
		t.Errorf("incomplete tool not completed: %s", b)
	}
	if tool.ReturnSchema != nil || tool.Meta != nil || tool.ParamsSchema != nil {
		t.Error("Marshal modified its input")
	}
}

func TestRequiredMessageFields(t *testing.T) {
	tests := []struct {
		m    proto.Message
		want string
	}{
		{&smcpv1.ToolCallReq{Agent: "a", ReqId: "r", Computer: "c", ToolName: "t", Timeout: 5},
			`{"agent":"a","computer":"c","params":{},"req_id":"r","timeout":5,"tool_name":"t"}`},
		{&smcpv1.DPEElementDetail{ElementId: "e", Category: "text", PageIndex: new(int32(0))},
			`{"category":"text","content":{},"element_id":"e","page_index":0}`},
		{&smcpv1.SMCPTool{Name: "t", Meta: &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue("v")}}},
			`{"description":"","meta":{"k":"v"},"name":"t","params_schema":{},"return_schema":null}`},
	}
	for _, tc := range tests {
		before := proto.Clone(tc.m)
		b, err := Marshal(tc.m)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(canonical(t, b)); got != tc.want {
			t.Errorf("Marshal = %s\nwant %s", got, tc.want)
		}
		if !proto.Equal(tc.m, before) {
			t.Errorf("Marshal modified %v", tc.m)
		}
	}
}

func TestServerConfigErrors(t *testing.T) {
	for _, bad := range []string{
		`{"name":"x","type":"ftp","server_parameters":{}}`,
		`{"name":"x","type":"stdio"}`,
		`{"name":"x","type":"stdio","server_parameters":null}`,
		`{"name":"x","type":"stdio","server_parameters":{"command":1}}`,
		`{"name":"x","type":"sse","server_parameters":{"url":"u","timeout":"5"}}`,
		`{"name":"x","type":"streamable","server_parameters":{"url":"u","timeout":-1}}`,
		`{"name":"x","type":"streamable","server_parameters":{"url":"u","timeout":true}}`,
		`{"name":"x","type":"stdio","disabled":"no","server_parameters":{"command":"c"}}`,
		`{"name":"x","type":"stdio","tool_meta":{"t":{"auto_apply":"yes"}},"server_parameters":{"command":"c"}}`,
		`{"servers":{"x":{"type":"nope","server_parameters":{}}}}`,
		`[]`,
	} {
		var err error
		if strings.HasPrefix(bad, `{"servers"`) {
			err = Unmarshal([]byte(bad), &smcpv1.GetComputerConfigRet{})
		} else {
			err = Unmarshal([]byte(bad), &smcpv1.MCPServerConfig{})
		}
		if err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
	for _, c := range []*smcpv1.MCPServerConfig{
		{Name: "none", Type: "stdio"},
		{Name: "mismatch", Type: "sse", ServerParameters: &smcpv1.MCPServerConfig_Stdio{Stdio: &smcpv1.StdioServerParameters{Command: "c"}}},
	} {
		if _, err := Marshal(c); err == nil {
			t.Errorf("Marshal(%v) accepted", c)
		}
	}
	// An empty type is taken from the parameters.
	b, err := Marshal(&smcpv1.MCPServerConfig{Name: "s", ServerParameters: &smcpv1.MCPServerConfig_Sse{Sse: &smcpv1.SseServerParameters{Url: "u"}}})
	if err != nil || !strings.Contains(string(b), `"type":"sse"`) {
		t.Errorf("Marshal = %s, %v", b, err)
	}
}

func TestStreamableTimeoutNumber(t *testing.T) {
	var c smcpv1.MCPServerConfig
	if err := Unmarshal([]byte(`{"name":"d","type":"streamable","server_parameters":{"url":"u","timeout":1.5,"sse_read_timeout":"PT1M","terminate_on_close":false}}`), &c); err != nil {
		t.Fatal(err)
	}
	s := c.GetStreamable()
	if s.GetTimeout() != "PT1.5S" || s.GetSseReadTimeout() != "PT1M" || s.GetTerminateOnClose() {
		t.Errorf("streamable = %v", s)
	}
}

func TestResultHelpersMatchGolden(t *testing.T) {
	for fixture, r := range map[string]*smcpv1.CallToolResult{
		"client_tool_call.result_timeout":       ToolTimeoutResult(),
		"client_tool_call.result_cancelled":     ToolCancelledResult(),
		"client_tool_call.result_computer_gone": ToolErrorResult(&Error{Code: CodeInternal, Message: "computer disconnected"}),
	} {
		b, err := Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		want := canonical(t, readFixture(t, "testdata/golden/"+fixture+".json"))
		if got := canonical(t, b); string(got) != string(want) {
			t.Errorf("%s: got %s, want %s", fixture, got, want)
		}
	}
}
