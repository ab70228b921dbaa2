package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The Go model of an MCP server configuration (Resolved and its parameter
// structs) is the source of truth; the proto MCPServerConfig, which the
// Connect front end and the Go agent decode client:get_config into, and
// the smcp codec between the two must carry every field of it. A field
// added to the model and not to the proto or the codec fails here (as
// result_jq and inherit_env once were dropped by get_config over RPC).
func TestServerModelSurvivesTheProtoForm(t *testing.T) {
	fixture := []byte(`{"servers": {
	  "calc": {"type": "stdio", "disabled": true, "forbidden_tools": ["rm"],
	           "tool_meta": {"add": {"auto_apply": true, "alias": "plus", "tags": ["math"], "ret_object_mapper": {"a": 1}}},
	           "default_tool_meta": {"tags": ["x"]}, "vrl": "", "result_jq": ".",
	           "server_parameters": {"command": "calc", "args": ["-v"], "env": {"K": "v"}, "inherit_env": ["HTTPS_PROXY"],
	                                 "cwd": "/tmp", "encoding": "latin-1", "encoding_error_handler": "replace"}},
	  "old": {"type": "sse", "server_parameters": {"url": "http://h/sse", "headers": {"H": "v"}, "timeout": 7, "sse_read_timeout": 70}},
	  "web": {"type": "streamable", "server_parameters": {"url": "http://h/mcp", "headers": {"H": "v"}, "timeout": "PT9S",
	          "sse_read_timeout": "PT90S", "terminate_on_close": false}}
	}}`)
	cfg, err := Parse(fixture, false)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(cfg.Wire())
	if err != nil {
		t.Fatal(err)
	}
	var ret smcpv1.GetComputerConfigRet
	if err := smcp.Unmarshal(wire, &ret); err != nil {
		t.Fatal(err)
	}
	back, err := smcp.Marshal(&ret)
	if err != nil {
		t.Fatal(err)
	}
	var before, after struct {
		Servers map[string]map[string]any `json:"servers"`
	}
	if err := json.Unmarshal(wire, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &after); err != nil {
		t.Fatal(err)
	}

	// The fixture sets every field of the model, so that the comparison
	// below covers them all.
	top := map[reflect.Type]string{
		reflect.TypeFor[Resolved](): "", reflect.TypeFor[StdioParams](): "calc",
		reflect.TypeFor[SSEParams](): "old", reflect.TypeFor[StreamableParams](): "web",
	}
	for typ, server := range top {
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if key == "-" || key == "" {
				continue
			}
			obj := before.Servers["calc"]
			if server != "" {
				obj, _ = before.Servers[server]["server_parameters"].(map[string]any)
			}
			if _, ok := obj[key]; !ok {
				t.Errorf("the fixture does not set %s.%s (%q): add it", typ.Name(), typ.Field(i).Name, key)
			}
		}
	}
	for name, b := range before.Servers {
		a := after.Servers[name]
		if !reflect.DeepEqual(b, a) {
			bj, _ := json.Marshal(b)
			aj, _ := json.Marshal(a)
			t.Errorf("server %s changed through the proto form:\n model %s\n proto %s", name, bj, aj)
		}
	}

	// And the proto declares each of them (json_name), so that Connect
	// clients see them as fields, not only through the codec.
	msgs := map[reflect.Type]protoreflect.MessageDescriptor{
		reflect.TypeFor[Resolved]():         (&smcpv1.MCPServerConfig{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[StdioParams]():      (&smcpv1.StdioServerParameters{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[SSEParams]():        (&smcpv1.SseServerParameters{}).ProtoReflect().Descriptor(),
		reflect.TypeFor[StreamableParams](): (&smcpv1.StreamableHttpServerParameters{}).ProtoReflect().Descriptor(),
	}
	for typ, md := range msgs {
		for i := range typ.NumField() {
			key, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if key == "-" || key == "" {
				continue
			}
			if md.Fields().ByJSONName(key) == nil {
				t.Errorf("%s has no field for %s.%s (%q)", md.FullName(), typ.Name(), typ.Field(i).Name, key)
			}
		}
	}
}
