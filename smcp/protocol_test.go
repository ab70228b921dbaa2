package smcp

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

func TestTimeoutResultJSON(t *testing.T) {
	var got smcpv1.CallToolResult
	if err := Unmarshal(GatewayResult(Errorf(CodeTimeout, "x")), &got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&got, ToolTimeoutResult()) {
		t.Fatalf("timeout result %v, want %v", &got, ToolTimeoutResult())
	}
	var gone smcpv1.CallToolResult
	if err := Unmarshal(GatewayResult(ComputerGoneError("pc")), &gone); err != nil {
		t.Fatal(err)
	}
	if !gone.GetIsError() || gone.GetMeta().GetFields()[MetaErrorCode].GetNumberValue() != CodeNotFound ||
		!strings.Contains(gone.GetContent()[0].GetFields()["text"].GetStringValue(), "left the office") {
		t.Fatalf("gone result %v", &gone)
	}
}

// Every entry of the table is complete for its kind, and every event name
// constant is in it exactly once.
func TestProtocolTable(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range protocol {
		if seen[e.Name] {
			t.Errorf("%s declared twice", e.Name)
		}
		seen[e.Name] = true
		if e.NewRequest == nil {
			t.Errorf("%s: no request type", e.Name)
		}
		switch e.Kind {
		case Routed:
			if e.NewAnswer == nil || len(e.Fields) < 3 || !strings.HasPrefix(e.Name, "client:") {
				t.Errorf("%s: incomplete routed entry", e.Name)
			}
		case Server:
			if !strings.HasPrefix(e.Name, "server:") {
				t.Errorf("%s: server event without server: prefix", e.Name)
			}
			if e.Notifies != "" {
				if n, ok := Event(e.Notifies); !ok || n.Kind != Notify {
					t.Errorf("%s notifies %q, not a notify event", e.Name, e.Notifies)
				}
			}
		case Notify:
			if !strings.HasPrefix(e.Name, "notify:") {
				t.Errorf("%s: notify event without notify: prefix", e.Name)
			}
		default:
			t.Errorf("%s: no kind", e.Name)
		}
	}
	if n := len(EventNames(Routed)); n != 6 {
		t.Errorf("%d routed events, want 6", n)
	}
}

func TestCheckRoutedFields(t *testing.T) {
	tc, _ := Event(EventToolCall)
	for _, bad := range []string{
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":"0x10"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":1e400}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5,"params":{"x":NaN}}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5,"params":"s"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":7,"timeout":5}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":5} x`,
	} {
		if _, err := tc.Check([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, good := range []string{
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":"30"}`,
		`{"agent":"a","req_id":"r","computer":"c","tool_name":"t","timeout":3e1,"params":null}`,
		`{"agent":"\u0061","req_id":"r","computer":"c","tool_name":"t","timeout":30.0,"params":{"n":18446744073709551616}}`,
	} {
		f, err := tc.Check([]byte(good))
		if err != nil || f.Timeout != 30 || f.Agent != "a" {
			t.Errorf("%s: %+v %v", good, f, err)
		}
	}
}
