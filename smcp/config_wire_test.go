package smcp

import (
	"bytes"
	"encoding/json"
	"testing"

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
