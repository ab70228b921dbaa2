package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Servers keep the order the file writes them in, JSON and YAML alike:
// of two servers sharing a bundle id, the first written starts.
func TestOrderAsWritten(t *testing.T) {
	js := `{"servers": {"zeta": {"type": "stdio", "server_parameters": {"command": "z"}},
	                    "alpha": {"type": "stdio", "server_parameters": {"command": "a"}}},
	        "mcpServers": {"m2": {"command": "x"}, "m1": {"command": "y"}}}`
	yml := "servers:\n  zeta: {type: stdio, server_parameters: {command: z}}\n  alpha: {type: stdio, server_parameters: {command: a}}\n" +
		"mcpServers:\n  m2: {command: x}\n  m1: {command: y}\n"
	for _, doc := range []struct {
		text   string
		asYAML bool
	}{{js, false}, {yml, true}} {
		cfg, err := Parse([]byte(doc.text), doc.asYAML)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.Names(), []string{"zeta", "alpha", "m2", "m1"}; !reflect.DeepEqual(got, want) {
			t.Errorf("yaml=%v: order %q, want %q", doc.asYAML, got, want)
		}
	}
	// A configuration built by hand has no order: names sorted.
	c := &Config{Servers: map[string]*Server{"b": nil, "a": nil}}
	if got := c.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("hand-made order %q", got)
	}
}

func TestServerBundleID(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {
		"My Server!": {"command": "npx", "args": []},
		"你好世界": {"command": "npx", "args": ["-y", "everything"]},
		"tok": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}, "bundle_id": "explicit-1"},
		"bad": {"command": "x", "bundle_id": "a__b"}},
		"inputs": [{"type": "promptString", "id": "token", "description": "t", "password": true}]}`), false)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"My Server!": "My_Server", "你好世界": "bundle_8d2a9232fa76e8a5", "tok": "explicit-1"} {
		if got, err := cfg.Servers[name].BundleID(); err != nil || got != want {
			t.Errorf("%s: bundle id %q (%v), want %q", name, got, err, want)
		}
	}
	if _, err := cfg.Servers["bad"].BundleID(); err == nil || !strings.Contains(err.Error(), "__") {
		t.Errorf("explicit a__b: %v", err)
	}
	// The spec's vector "无名 + http header 含 ${input:*}": an unnamed
	// server's id hashes the placeholder as written.
	s, err := NewServer("", map[string]any{"name": "-", "url": "https://api.example.com/mcp", "headers": map[string]any{"Authorization": "Bearer ${input:token}"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.BundleID(); got != "bundle_6366b4fd89f56f6a" {
		t.Errorf("unnamed streamable with a placeholder header: %q", got)
	}
}

func TestPickStringShapes(t *testing.T) {
	newShape := `{"servers": {}, "inputs": [{"type": "pickString", "id": "env", "description": "where",
		"options": [{"label": "Development", "value": "dev"}, {"label": "Production", "value": "prod"}], "default": "prod"}]}`
	cfg, err := Parse([]byte(newShape), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckProtocol("0.4"); err != nil {
		t.Errorf("0.3.2 shape refused in 0.4: %v", err)
	}
	b, _ := json.Marshal(cfg.WireBundled(nil)["inputs"])
	if want := `[{"default":"prod","description":"where","id":"env","options":[{"label":"Development","value":"dev"},{"label":"Production","value":"prod"}],"type":"pickString"}]`; string(b) != want {
		t.Errorf("0.4 wire %s", b)
	}
	b, _ = json.Marshal(cfg.Wire()["inputs"])
	if !strings.Contains(string(b), `"options":["dev","prod"]`) {
		t.Errorf("0.2 wire of the new shape %s", b)
	}
	// A stored value matching no option is an error, never a fallback.
	r := NewResolver(cfg.Inputs, func(k string) (string, bool) { return "Production", k == "A2C_SMCP_ENV" }, nil)
	if _, _, err := r.Value(t.Context(), "env"); err == nil {
		t.Error("a label was accepted as a value")
	}
	r = NewResolver(cfg.Inputs, func(k string) (string, bool) { return "dev", k == "A2C_SMCP_ENV" }, nil)
	if v, _, err := r.Value(t.Context(), "env"); err != nil || v != "dev" {
		t.Errorf("value dev: %v %v", v, err)
	}

	oldShape := `{"servers": {}, "inputs": [{"type": "pickString", "id": "env", "description": "where", "options": ["dev", "prod"]}]}`
	cfg, err = Parse([]byte(oldShape), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckProtocol("0.2"); err != nil {
		t.Errorf("0.2 shape refused in 0.2: %v", err)
	}
	for _, v := range []string{"0.3", "0.4"} {
		err := cfg.CheckProtocol(v)
		if err == nil || !strings.Contains(err.Error(), `"label"`) || !strings.Contains(err.Error(), `"value"`) {
			t.Errorf("0.2 shape in %s: %v; want an error naming the new shape", v, err)
		}
	}

	for _, bad := range []string{
		`[{"label": "", "value": "x"}]`,
		`[{"label": "x"}]`,
		`["a", {"label": "b", "value": "b"}]`,
		`[{"label": "b", "value": "b"}, "a"]`,
		`[{"label": "A", "value": "a"}], "default": "A"`,
	} {
		doc := `{"servers": {}, "inputs": [{"type": "pickString", "id": "p", "description": "d", "options": ` + bad + `}]}`
		if _, err := Parse([]byte(doc), false); err == nil {
			t.Errorf("accepted options %s", bad)
		}
	}
}
