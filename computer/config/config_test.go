package config

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

func noEnv(string) (string, bool) { return "", false }

func TestParseSDKShape(t *testing.T) {
	cfg, err := Parse([]byte(`{
	  "servers": {
	    "fs": {"type": "stdio", "disabled": false, "forbidden_tools": ["rm"],
	           "tool_meta": {"read": {"alias": "fs_read", "auto_apply": true}},
	           "default_tool_meta": {"tags": ["fs"]},
	           "server_parameters": {"command": "mcp-fs", "args": ["--root", "${input:root}"], "env": {"TOKEN": "${input:token}"}, "cwd": null,
	                                 "encoding": "utf-8", "encoding_error_handler": "strict"}},
	    "web": {"type": "streamable", "server_parameters": {"url": "http://h/mcp", "headers": null, "timeout": "PT30S",
	            "sse_read_timeout": "PT300S", "terminate_on_close": true}},
	    "old": {"type": "sse", "server_parameters": {"url": "http://h/sse", "timeout": 5.5, "sse_read_timeout": 300}}
	  },
	  "inputs": [{"type": "promptString", "id": "root", "description": "root", "default": "/data"},
	             {"type": "promptString", "id": "token", "description": "token", "password": true}]
	}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 3 || len(cfg.Inputs) != 2 {
		t.Fatalf("servers %d inputs %d", len(cfg.Servers), len(cfg.Inputs))
	}
	r := NewResolver(cfg.Inputs, func(k string) (string, bool) {
		if k == "A2C_SMCP_TOKEN" {
			return "s3cret", true
		}
		return "", false
	}, nil)
	fs, unknown, err := cfg.Servers["fs"].Resolve(context.Background(), r)
	if err != nil || len(unknown) != 0 {
		t.Fatal(err, unknown)
	}
	if fs.Type != TypeStdio || fs.Params.Stdio.Command != "mcp-fs" || !reflect.DeepEqual(fs.Params.Stdio.Args, smcp.StringList{"--root", "/data"}) ||
		fs.Params.Stdio.Env["TOKEN"] != "s3cret" || *fs.ToolMeta["read"].Alias != "fs_read" || fs.ForbiddenTools[0] != "rm" {
		t.Fatalf("fs: %+v %+v", fs, fs.Params.Stdio)
	}
	web, _, err := cfg.Servers["web"].Resolve(context.Background(), r)
	if err != nil || web.Params.Streamable.URL != "http://h/mcp" || web.ConnectTimeout() != 30*time.Second || !web.Params.Streamable.TerminateOnClose {
		t.Fatalf("web: %+v %v", web, err)
	}
	old, _, err := cfg.Servers["old"].Resolve(context.Background(), r)
	if err != nil || old.ConnectTimeout() != 5500*time.Millisecond {
		t.Fatalf("old: %+v %v", old, err)
	}
	// get_config: placeholders unrendered, secrets redacted, defaults filled.
	w := cfg.Wire()
	fsw := w["servers"].(map[string]any)["fs"].(map[string]any)
	if fsw["server_parameters"].(map[string]any)["env"].(map[string]any)["TOKEN"] != Redacted {
		t.Fatalf("env not redacted: %v", fsw)
	}
	if oldw := w["servers"].(map[string]any)["old"].(map[string]any); oldw["disabled"] != false || oldw["name"] != "old" {
		t.Fatalf("defaults: %v", oldw)
	}
}

func TestParseMCPServersShape(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		yaml      bool
	}{
		{"claude json", `{"mcpServers": {
			"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}},
			"remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
			"legacy": {"type": "sse", "url": "https://example.com/sse"}}}`, false},
		{"yaml", "mcpServers:\n  files:\n    command: npx\n    args: [-y, '@modelcontextprotocol/server-filesystem', /tmp]\n    env: {A: 1}\n" +
			"  remote:\n    type: http\n    url: https://example.com/mcp\n    headers: {Authorization: Bearer x}\n  legacy:\n    type: sse\n    url: https://example.com/sse\n", true},
		{"vscode", `{"inputs": [], "servers": {
			"files": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"A": "1"}},
			"remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
			"legacy": {"type": "sse", "url": "https://example.com/sse"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc), tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			r := NewResolver(nil, noEnv, nil)
			files, _, err := cfg.Servers["files"].Resolve(context.Background(), r)
			if err != nil || files.Params.Stdio == nil || files.Params.Stdio.Command != "npx" || len(files.Params.Stdio.Args) != 3 || files.Params.Stdio.Env["A"] != "1" {
				t.Fatalf("files: %+v %v", files, err)
			}
			remote, _, err := cfg.Servers["remote"].Resolve(context.Background(), r)
			if err != nil || remote.Params.Streamable == nil || remote.Params.Streamable.Headers["Authorization"] != "Bearer x" {
				t.Fatalf("remote: %+v %v", remote, err)
			}
			legacy, _, err := cfg.Servers["legacy"].Resolve(context.Background(), r)
			if err != nil || legacy.Params.SSE == nil || legacy.Params.SSE.URL != "https://example.com/sse" {
				t.Fatalf("legacy: %+v %v", legacy, err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`[]`, "must be an object"},
		{`{"foo": 1}`, "neither"},
		{`{"mcpServers": {"x": {}}}`, `needs "command"`},
		{`{"mcpServers": {"x": {"command": "a", "type": "sse"}}}`, `type "sse" does not fit`},
		{`{"servers": {"x": {"type": "ftp", "server_parameters": {}}}}`, `unknown type "ftp"`},
		{`{"servers": {"x": {"type": "stdio", "server_parameters": {"command": "a", "bogus": 1}}}}`, `unknown field "bogus"`},
		{`{"servers": {"x": {"type": "streamable", "server_parameters": {"url": "u", "timeout": "30s"}}}}`, "ISO-8601"},
		{`{"servers": [{"type": "stdio", "server_parameters": {"command": "a"}}]}`, "needs a name"},
		{`{"servers": {}, "inputs": [{"type": "pickString", "id": "p", "description": "d"}]}`, "needs options"},
		{`{"servers": {}, "inputs": [{"type": "promptString", "id": "a"}, {"type": "promptString", "id": "a"}]}`, "declared twice"},
		{`{"servers": {"x": {"command": "a"}}, "mcpServers": {"x": {"command": "b"}}}`, "configured twice"},
	} {
		_, err := Parse([]byte(tc.doc), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	inputs := []Input{
		{Type: InputPromptString, ID: "port", Description: "port", Default: float64(8080)},
		{Type: InputPromptString, ID: "db.name", Description: "database"},
		{Type: InputPickString, ID: "mode", Description: "mode", Options: []string{"fast", "safe"}, Default: "safe"},
		{Type: InputCommand, ID: "cmd", Description: "from a command", Command: `printf '%s-out\n' "$WHO"`, Args: map[string]any{"WHO": "me"}},
		{Type: InputPromptString, ID: "missing", Description: "nobody sets it"},
	}
	env := map[string]string{"A2C_SMCP_DB_NAME": "prod"}
	r := NewResolver(inputs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	out, unknown, err := r.Render(context.Background(), map[string]any{
		"whole":   "${input:port}",
		"partial": "http://h:${input:port}/${input:db.name}",
		"list":    []any{"${input:mode}", "${input:cmd}"},
		"unknown": "${input:nope}",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"whole": float64(8080), "partial": "http://h:8080/prod", "list": []any{"safe", "me-out"}, "unknown": "${input:nope}"}
	if !reflect.DeepEqual(out, want) || !reflect.DeepEqual(unknown, []string{"nope"}) {
		t.Fatalf("got %v %v", out, unknown)
	}
	_, _, err = r.Render(context.Background(), "x ${input:missing}")
	if !errors.Is(err, ErrUnresolved) || !strings.Contains(err.Error(), `"missing"`) || !strings.Contains(err.Error(), "A2C_SMCP_MISSING") {
		t.Fatalf("err = %v", err)
	}
	env["A2C_SMCP_MODE"] = "turbo"
	r2 := NewResolver(inputs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil)
	if _, _, err := r2.Value(context.Background(), "mode"); err == nil || !strings.Contains(err.Error(), "not one of") {
		t.Fatalf("pickString check: %v", err)
	}
}

type fakeAsker struct{ asked []string }

func (a *fakeAsker) AskInput(_ context.Context, in Input) (string, error) {
	a.asked = append(a.asked, in.ID)
	return "typed-" + in.ID, nil
}

func TestResolverAsksOnceAndPrefersEnv(t *testing.T) {
	a := &fakeAsker{}
	inputs := []Input{{Type: InputPromptString, ID: "a"}, {Type: InputPromptString, ID: "b"}}
	r := NewResolver(inputs, func(k string) (string, bool) { return "env", k == "A2C_SMCP_B" }, a)
	for range 2 {
		if v, _, _ := r.Value(context.Background(), "a"); v != "typed-a" {
			t.Fatalf("a = %v", v)
		}
	}
	if v, _, _ := r.Value(context.Background(), "b"); v != "env" {
		t.Fatalf("b = %v", v)
	}
	if !reflect.DeepEqual(a.asked, []string{"a"}) {
		t.Fatalf("asked %v", a.asked)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.yaml")
	if err := os.WriteFile(p, []byte("servers:\n  - name: a\n    type: stdio\n    server_parameters: {command: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p)
	if err != nil || cfg.Servers["a"] == nil {
		t.Fatal(cfg, err)
	}
	if _, err := Load(filepath.Join(dir, "none.json")); err == nil {
		t.Fatal("missing file loaded")
	}
}

func TestEnvName(t *testing.T) {
	if got := EnvName("github-token.v2"); got != "A2C_SMCP_GITHUB_TOKEN_V2" {
		t.Fatal(got)
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT30S": 30 * time.Second, "PT1M30.5S": 90500 * time.Millisecond, "P1DT1H": 25 * time.Hour} {
		if got, err := ParseISODuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "30", "PT", "P1M", "PTS", "-PT1S"} {
		if _, err := ParseISODuration(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestNumbersInFiles: YAML numbers and booleans where the wire has strings
// load as strings, and a streamable timeout in seconds is a duration, both
// for the computer and in its get_config answer.
func TestNumbersInFiles(t *testing.T) {
	cfg, err := Load("testdata/numbers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(nil, noEnv, nil)
	api, _, err := cfg.Servers["api"].Resolve(context.Background(), r)
	if err != nil || api.ConnectTimeout() != 12500*time.Millisecond || api.Params.Streamable.SSEReadTimeout != "PT600S" ||
		api.Params.Streamable.Headers["X-Version"] != "2" {
		t.Fatalf("api: %+v %v", api.Params.Streamable, err)
	}
	tool, _, err := cfg.Servers["tool"].Resolve(context.Background(), r)
	if err != nil || !slices.Equal(tool.Params.Stdio.Args, []string{"--port", "8080", "--fast", "true"}) ||
		!maps.Equal(tool.Params.Stdio.Env, smcp.StringMap{"WORKERS": "4", "DEBUG": "false", "EMPTY": ""}) {
		t.Fatalf("tool: %+v %v", tool.Params.Stdio, err)
	}
	p := cfg.Wire()["servers"].(map[string]any)["api"].(map[string]any)["server_parameters"].(map[string]any)
	if p["timeout"] != "PT12.5S" || p["sse_read_timeout"] != "PT600S" {
		t.Errorf("get_config: %v", p)
	}
}
