package smcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
)

// goldenTypes maps each fixture of testdata/golden (by the part of its name
// before the first '.', or the full name) to the proto type it decodes into.
var goldenTypes = map[string]func() proto.Message{
	"server_join_office":              func() proto.Message { return &smcpv1.EnterOfficeReq{} },
	"server_join_office.ack_ok":       func() proto.Message { return &smcpv1.OfficeAck{} },
	"server_join_office.ack_refused":  func() proto.Message { return &smcpv1.OfficeAck{} },
	"server_leave_office":             func() proto.Message { return &smcpv1.LeaveOfficeReq{} },
	"server_leave_office.ack_ok":      func() proto.Message { return &smcpv1.OfficeAck{} },
	"server_leave_office.ack_refused": func() proto.Message { return &smcpv1.OfficeAck{} },
	"server_list_room":                func() proto.Message { return &smcpv1.ListRoomReq{} },
	"server_list_room.ret":            func() proto.Message { return &smcpv1.ListRoomRet{} },
	"server_list_room.ret_empty":      func() proto.Message { return &smcpv1.ListRoomRet{} },
	"server_update_config":            func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"server_update_tool_list":         func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"server_update_desktop":           func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"server_update_finder":            func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"server_tool_call_cancel":         func() proto.Message { return &smcpv1.AgentCallData{} },
	"notify_enter_office":             func() proto.Message { return &smcpv1.EnterOfficeNotification{} },
	"notify_leave_office":             func() proto.Message { return &smcpv1.LeaveOfficeNotification{} },
	"notify_update_config":            func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"notify_update_tool_list":         func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"notify_update_desktop":           func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"notify_update_finder":            func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	"notify_tool_call_cancel":         func() proto.Message { return &smcpv1.AgentCallData{} },
	"client_tool_call":                func() proto.Message { return &smcpv1.ToolCallReq{} },
	"client_tool_call.result":         func() proto.Message { return &smcpv1.CallToolResult{} },
	"client_get_tools":                func() proto.Message { return &smcpv1.GetToolsReq{} },
	"client_get_tools.ret":            func() proto.Message { return &smcpv1.GetToolsRet{} },
	"client_get_config":               func() proto.Message { return &smcpv1.GetComputerConfigReq{} },
	"client_get_config.ret":           func() proto.Message { return &smcpv1.GetComputerConfigRet{} },
	"client_get_desktop":              func() proto.Message { return &smcpv1.GetDeskTopReq{} },
	"client_get_desktop.ret":          func() proto.Message { return &smcpv1.GetDeskTopRet{} },
	"client_get_finder":               func() proto.Message { return &smcpv1.GetFinderReq{} },
	"client_get_finder.ret":           func() proto.Message { return &smcpv1.GetFinderRet{} },
	"client_read_resource":            func() proto.Message { return &smcpv1.ReadResourceReq{} },
	"client_read_resource.ret":        func() proto.Message { return &smcpv1.ReadResourceRet{} },
	"error":                           func() proto.Message { return &smcpv1.Error{} },
}

// goldenType finds the type of a fixture: the longest registered prefix of
// its name made of whole dot/underscore-separated parts ("client_get_tools.ret_x"
// -> "client_get_tools.ret", "server_join_office.agent" -> "server_join_office").
func goldenType(t *testing.T, name string) proto.Message {
	for key := name; ; {
		if mk, ok := goldenTypes[key]; ok {
			return mk()
		}
		i := strings.LastIndexAny(key, "._")
		if i < 0 {
			t.Fatalf("fixture %s: no proto type registered", name)
		}
		key = key[:i]
	}
}

// compatFixtures are input-only forms and the canonical fixture each must
// decode to.
var compatFixtures = map[string]string{
	"client_tool_call.result_underscore_meta": "client_tool_call.result_timeout",
	"error.wrapped":                        "error",
	"error.wrapped_details":                "error.details",
	"server_join_office.ack_object":        "server_join_office.ack_ok",
	"server_join_office.ack_one_arg":       "server_join_office.ack_ok",
	"client_get_tools.ret_unset_schemas":   "client_get_tools.ret",
	"client_get_config.ret_defaults":       "client_get_config.ret",
	"client_get_finder.ret_unordered_keys": "client_get_finder.ret",
}

// canonical re-renders JSON with sorted keys, no spaces, and numbers kept as
// written, so that two documents compare byte for byte.
func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(out.Bytes())
}

func readFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureNames(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata/%s: %v", dir, err)
	}
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = strings.TrimSuffix(filepath.Base(p), ".json")
	}
	return names
}

// TestGolden decodes every golden fixture into its proto type and encodes it
// again: the result must equal the fixture byte for byte after canonical key
// ordering. The same holds for the path a Socket.IO library takes (a decoded
// any value through FromWire).
func TestGolden(t *testing.T) {
	for _, name := range fixtureNames(t, "golden") {
		t.Run(name, func(t *testing.T) {
			fixture := readFixture(t, filepath.Join("testdata", "golden", name+".json"))
			want := canonical(t, fixture)

			m := goldenType(t, name)
			if err := Unmarshal(fixture, m); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			got, err := Marshal(m)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if c := canonical(t, got); !bytes.Equal(c, want) {
				t.Errorf("re-encoded\n got %s\nwant %s", c, want)
			}

			var v any
			if err := json.Unmarshal(fixture, &v); err != nil {
				t.Fatal(err)
			}
			m2 := goldenType(t, name)
			if err := FromWire(v, m2); err != nil {
				t.Fatalf("FromWire: %v", err)
			}
			if !proto.Equal(m, m2) {
				t.Errorf("FromWire decoded %v, Unmarshal %v", m2, m)
			}
		})
	}
}

func TestCompatFixtures(t *testing.T) {
	names := fixtureNames(t, "compat")
	if len(names) != len(compatFixtures) {
		t.Errorf("testdata/compat has %d fixtures, the table %d", len(names), len(compatFixtures))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			canon, ok := compatFixtures[name]
			if !ok {
				t.Fatalf("compat fixture %s has no canonical form in the table", name)
			}
			m := goldenType(t, canon)
			if err := Unmarshal(readFixture(t, filepath.Join("testdata", "compat", name+".json")), m); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			got, err := Marshal(m)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			want := canonical(t, readFixture(t, filepath.Join("testdata", "golden", canon+".json")))
			if c := canonical(t, got); !bytes.Equal(c, want) {
				t.Errorf("decoded to\n got %s\nwant %s", c, want)
			}
		})
	}
}
