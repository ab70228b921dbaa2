package smcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// The Go computer's extensions of MCPServerConfig (result_jq, and
// inherit_env in stdio parameters) survive the proto form that the Connect
// front end and the Go agent decode client:get_config into, both ways.
func TestServerConfigKeepsGoExtensions(t *testing.T) {
	in := []byte(`{"servers":{"calc":{"name":"calc","type":"stdio","disabled":false,"forbidden_tools":[],"tool_meta":{},` +
		`"server_parameters":{"command":"calc","args":[],"env":null,"cwd":null,"encoding":"utf-8","encoding_error_handler":"strict",` +
		`"inherit_env":["HTTPS_PROXY","NODE_EXTRA_CA_CERTS"]},"result_jq":"{sum: .structuredContent.sum}"}},"inputs":[]}`)
	var ret smcpv1.GetComputerConfigRet
	if err := Unmarshal(in, &ret); err != nil {
		t.Fatal(err)
	}
	c := ret.GetServers()["calc"]
	if c.GetResultJq() != "{sum: .structuredContent.sum}" {
		t.Errorf("result_jq = %q", c.GetResultJq())
	}
	if got := c.GetStdio().GetInheritEnv(); len(got) != 2 || got[0] != "HTTPS_PROXY" || got[1] != "NODE_EXTRA_CA_CERTS" {
		t.Errorf("inherit_env = %q", got)
	}
	out, err := Marshal(&ret)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("round trip changed the config:\n in %s\nout %s", ja, jb)
	}
}

// TestServerModelMatchesProto: the model and the proto have the same
// fields, matched as the copier matches them (JSON key or proto tag =
// json_name), in both directions. A field added to one and not the other
// fails here, before a configuration loses it between a computer and a
// Connect client.
func TestServerModelMatchesProto(t *testing.T) {
	for typ, md := range map[reflect.Type]protoreflect.MessageDescriptor{
		reflect.TypeFor[ServerConfig]():     (&smcpv1.MCPServerConfig{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[StdioParams]():      (&smcpv1.StdioServerParameters{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[SSEParams]():        (&smcpv1.SseServerParameters{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[StreamableParams](): (&smcpv1.StreamableHttpServerParameters{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[ToolMeta]():         (&smcpv1.ToolMeta{}).ProtoReflect().Descriptor(),
	} {
		model := map[string]bool{}
		var collect func(reflect.Type)
		collect = func(typ reflect.Type) {
			for i := range typ.NumField() {
				f := typ.Field(i)
				key := protoKey(f)
				switch {
				case key == "":
					t.Errorf("%s.%s maps to no proto field", typ.Name(), f.Name)
				case md.Fields().ByJSONName(key) != nil:
					model[key] = true
				case f.Type.Kind() == reflect.Struct:
					collect(f.Type) // a group: server_parameters
				default:
					t.Errorf("%s has no field %q for %s.%s", md.FullName(), key, typ.Name(), f.Name)
				}
			}
		}
		collect(typ)
		for i := range md.Fields().Len() {
			if fd := md.Fields().Get(i); !model[fd.JSONName()] {
				t.Errorf("%s.%s (%q) has no field in %s", md.FullName(), fd.Name(), fd.JSONName(), typ.Name())
			}
		}
	}
}

// TestServerConfigProtoCopy: every kind of field the copier handles
// arrives in the proto and comes back: optional scalars set to their zero
// value, maps, nested messages, free-form JSON (an explicit null too), the
// oneof.
func TestServerConfigProtoCopy(t *testing.T) {
	in := &ServerConfig{
		Name: "n", Type: ServerTypeStdio, Disabled: true, ForbiddenTools: []string{"rm"},
		ToolMeta: map[string]ToolMeta{"t": {AutoApply: new(false), Alias: new(""), Tags: []string{"a"},
			RetObjectMapper: json.RawMessage(`{"k":[1,null,"x"]}`)}},
		DefaultToolMeta: &ToolMeta{RetObjectMapper: json.RawMessage(`null`)},
		VRL:             new(""), ResultJQ: new("."),
		Params: ServerParameters{Stdio: &StdioParams{Command: "c", Args: StringList{"-v"}, Env: StringMap{"K": ""},
			Cwd: new(""), Encoding: "e", EncodingErrorHandler: "h", InheritEnv: StringList{"HOME"}}},
	}
	m, err := in.Proto()
	if err != nil {
		t.Fatal(err)
	}
	if m.Vrl == nil || m.GetResultJq() != "." || m.GetStdio().Cwd == nil || m.GetStdio().Env == nil ||
		m.GetToolMeta()["t"].AutoApply == nil || m.GetToolMeta()["t"].GetRetObjectMapper().GetStructValue() == nil ||
		m.GetDefaultToolMeta().GetRetObjectMapper().GetKind() == nil || m.GetStdio().GetInheritEnv()[0] != "HOME" {
		t.Fatalf("proto lacks fields: %v", m)
	}
	out, err := ServerConfigFromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	if !bytes.Equal(a, b) {
		t.Errorf("model -> proto -> model:\n in %s\nout %s", a, b)
	}
	if _, err := (&ServerConfig{Name: "x", Type: ServerTypeSSE, Params: ServerParameters{Stdio: &StdioParams{}}}).Proto(); err == nil {
		t.Error("a type that disagrees with the parameters was copied")
	}
}

// TestWireDefaults: the keys a writer may leave out, as the model
// completes them (computer/config fills get_config answers with these).
func TestWireDefaults(t *testing.T) {
	for typ, want := range map[string]string{
		ServerTypeStdio:      `{"command":"","args":[],"env":null,"cwd":null,"encoding":"utf-8","encoding_error_handler":"strict"}`,
		ServerTypeSSE:        `{"url":"","headers":null,"timeout":5,"sse_read_timeout":300}`,
		ServerTypeStreamable: `{"url":"","headers":null,"timeout":"PT30S","sse_read_timeout":"PT300S","terminate_on_close":true}`,
	} {
		top, params, err := WireDefaults(typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(canonical(t, mustJSON(t, top))); got != `{"disabled":false,"forbidden_tools":[],"tool_meta":{}}` {
			t.Errorf("%s: top %s", typ, got)
		}
		if got, w := canonical(t, mustJSON(t, params)), canonical(t, []byte(want)); !bytes.Equal(got, w) {
			t.Errorf("%s: params %s, want %s", typ, got, w)
		}
	}
	if _, _, err := WireDefaults("ftp"); err == nil {
		t.Error("unknown type accepted")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pickString options travel under one "options" key in two shapes
// (PROTOCOL-0.4.md §5.9): the 0.2 strings stay strings, the 0.3.2
// [{label, value}] objects go to pick_options and come back as objects,
// byte for byte.
func TestPickStringOptionsBothShapes(t *testing.T) {
	for _, in := range []string{
		`{"servers":{},"inputs":[{"type":"pickString","id":"env","description":"d","options":["dev","prod"],"default":"dev"}]}`,
		`{"servers":{},"inputs":[{"type":"pickString","id":"env","description":"d","options":[{"label":"Development","value":"dev"},{"label":"Production","value":"prod"}],"default":"dev"}]}`,
	} {
		var ret smcpv1.GetComputerConfigRet
		if err := Unmarshal([]byte(in), &ret); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := ret.GetInputs()[0]
		if objects := bytes.Contains([]byte(in), []byte(`"label"`)); objects {
			if len(got.GetPickOptions()) != 2 || got.GetPickOptions()[1].GetLabel() != "Production" || got.GetPickOptions()[1].GetValue() != "prod" || len(got.GetOptions()) != 0 {
				t.Errorf("objects decoded as %v", got)
			}
		} else if len(got.GetOptions()) != 2 || len(got.GetPickOptions()) != 0 {
			t.Errorf("strings decoded as %v", got)
		}
		out, err := Marshal(&ret)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip\n got %s\nwant %s", out, in)
		}
		var one smcpv1.MCPServerInput
		if err := Unmarshal([]byte(in[bytes.IndexByte([]byte(in), '[')+1:len(in)-2]), &one); err != nil || len(one.GetOptions())+len(one.GetPickOptions()) != 2 {
			t.Errorf("MCPServerInput alone: %v %v", &one, err)
		}
	}
	var bad smcpv1.MCPServerInput
	if err := Unmarshal([]byte(`{"type":"pickString","id":"x","options":[{"label":1}]}`), &bad); err == nil {
		t.Error("an option object with a numeric label was accepted")
	}
}
