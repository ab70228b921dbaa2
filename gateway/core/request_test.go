package core

import (
	"encoding/json"
	"reflect"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestNewToolCallRequestIsParseRequest holds NewToolCallRequest to what
// ParseRequest makes of the same payload, refusals included: a front end
// that builds its request from the typed fields routes exactly what one
// reading the payload back would.
func TestNewToolCallRequestIsParseRequest(t *testing.T) {
	type fields struct {
		agent, reqID, computer, tool string
		timeout                      int32
		params                       string
	}
	cases := map[string]fields{
		"plain":           {"agent", "r-1", "c1", "echo", 30, `{"text":"hi"}`},
		"no params":       {"agent", "r-1", "c1", "echo", 30, ""},
		"escapes":         {"a\"gent\\", "r\n1", "c/1<>&", "t\u2028", 1, `{}`},
		"unicode":         {"агент", "请求", "컴퓨터", "🛠", 3600, `{"x":[1,2]}`},
		"empty agent":     {"", "r-1", "c1", "echo", 30, `{}`},
		"empty req id":    {"agent", "", "c1", "echo", 30, `{}`},
		"empty computer":  {"agent", "r-1", "", "echo", 30, `{}`},
		"empty tool":      {"agent", "r-1", "c1", "", 30, `{}`},
		"timeout zero":    {"agent", "r-1", "c1", "echo", 0, `{}`},
		"timeout too big": {"agent", "r-1", "c1", "echo", smcp.MaxToolCallTimeout + 1, `{}`},
		"timeout minus":   {"agent", "r-1", "c1", "echo", -5, `{}`},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			call := &smcpv1.ToolCallReq{Agent: f.agent, ReqId: f.reqID, Computer: f.computer, ToolName: f.tool, Timeout: f.timeout}
			var payload []byte
			var err error
			if f.params == "" {
				payload, err = smcp.Marshal(call)
			} else {
				payload, err = smcp.ToolCallPayload(call, json.RawMessage(f.params))
			}
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := ParseRequest(smcp.EventToolCall, payload)
			got, gotErr := NewToolCallRequest(f.agent, f.reqID, f.computer, f.tool, f.timeout, payload)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("error %v, ParseRequest's %v", gotErr, wantErr)
			}
			if want != nil {
				// What ParseRequest keeps of its walk for the guard
				// (guardFieldsOf), which reads it from the payload else.
				want.toolName, want.params = nil, nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("request %+v, ParseRequest's %+v (payload %s)", got, want, payload)
			}
		})
	}
}

// The guard reads a tool call's tool_name and params from ParseRequest's
// walk (guardFieldsOf) as it would from the payload (readGuardFields).
func TestGuardFieldsOfParsedToolCall(t *testing.T) {
	for _, payload := range []string{
		`{"agent":"a","req_id":"r","computer":"pc","tool_name":"echo","params":{"text":"hi"},"timeout":5}`,
		`{"agent":"a","req_id":"r","computer":"pc","tool_name":"t\u00e9\"x","timeout":5}`,
		`{"agent":"a","req_id":"r","computer":"pc","tool_name":"echo","params":null,"timeout":5}`,
		`{"params":{"tool_name":"inner"},"agent":"a","req_id":"r","computer":"pc","tool_name":"outer","timeout":5}`,
	} {
		r, err := ParseRequest(smcp.EventToolCall, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		got, err := guardFieldsOf(r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := readGuardFields(r.Event, r.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if got.toolName != want.toolName || string(got.params) != string(want.params) {
			t.Errorf("%s: read %q %s from the walk, %q %s from the payload", payload, got.toolName, got.params, want.toolName, want.params)
		}
	}
}
