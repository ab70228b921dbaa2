package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const keysYAML = `
rule_sets:
  echo-only:
    - allow: {tool: echo}
  safe:
    - deny: {computer: "prod-*", tool: "shell*"}
    - deny: {cel: 'tool.name == "read_file" && args.path.startsWith("/etc")'}
    - deny: {resource: "dpe://"}
  tagged:
    - allow: {tag: "read-*"}
    - allow: {resource: "window://"}
  shapes:
    - deny: {cel: 'has(args.opts) && args.opts.force == true'}
    - deny: {cel: 'size(args) > 2 || "secret" in args'}
    - deny: {cel: '"danger" in tool.tags && event == "client:tool_call"'}
  claims:
    - deny: {cel: '"interns" in principal.claims.groups && tool.name == "delete"'}
keys:
  - {id: echo-only, key: k1, rules: [echo-only]}
  - {id: safe, key: k2, rules: [safe]}
  - {id: full, key: k3}
`

func load(t *testing.T, text string) (*Rules, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadFile(p)
}

func toolCall(sets []string, computer, name string, args string, tags ...string) *core.Call {
	return &core.Call{Principal: &core.Principal{ID: "p", RuleSets: sets}, Office: "o", Computer: computer,
		Event: smcp.EventToolCall, Tool: &core.ToolView{Name: name, Exposed: "b__" + name, BundleID: "b", Tags: tags},
		Args: json.RawMessage(args)}
}

func read(sets []string, uri string) *core.Call {
	return &core.Call{Principal: &core.Principal{ID: "p", RuleSets: sets}, Office: "o", Computer: "pc",
		Event: smcp.EventReadResource, URI: uri}
}

func TestRules(t *testing.T) {
	r, err := load(t, keysYAML)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(r)
	groups := func(c *core.Call, g ...any) *core.Call {
		c.Principal.Claims = map[string]any{"groups": g}
		return c
	}
	tests := []struct {
		name    string
		call    *core.Call
		refusal string // "" admitted
	}{
		{"echo allowed", toolCall([]string{"echo-only"}, "pc", "echo", `{}`), ""},
		{"other tool not allowed", toolCall([]string{"echo-only"}, "pc", "add", `{}`), `tool "b__add" of computer "pc": not allowed by rule sets "echo-only"`},
		{"resources not allowed to an allow list of tools", read([]string{"echo-only"}, "window://x"), `not allowed by rule sets "echo-only"`},
		{"listing not bound by allows", &core.Call{Principal: &core.Principal{RuleSets: []string{"echo-only"}}, Event: smcp.EventGetTools, Computer: "pc"}, ""},
		{"no rules: anything", toolCall(nil, "prod-1", "shell", `{}`), ""},
		{"deny by computer and tool", toolCall([]string{"safe"}, "prod-1", "shell_exec", `{}`), `denied by rule set "safe" entry 0`},
		{"deny needs both", toolCall([]string{"safe"}, "dev-1", "shell_exec", `{}`), ""},
		{"cel deny on args", toolCall([]string{"safe"}, "pc", "read_file", `{"path":"/etc/passwd"}`), `denied by rule set "safe" entry 1`},
		{"cel args elsewhere", toolCall([]string{"safe"}, "pc", "read_file", `{"path":"/home/x"}`), ""},
		{"cel on missing arg does not match", toolCall([]string{"safe"}, "pc", "read_file", `{}`), ""},
		{"resource prefix denied", read([]string{"safe"}, "dpe://h/doc"), `denied by rule set "safe" entry 2`},
		{"other resource", read([]string{"safe"}, "window://h/x"), ""},
		{"deny wins over allow", toolCall([]string{"echo-only", "safe"}, "prod-1", "echo", `{}`), ""},
		{"tag allowed", toolCall([]string{"tagged"}, "pc", "x", `{}`, "read-only"), ""},
		{"tag missing", toolCall([]string{"tagged"}, "pc", "x", `{}`, "write"), "not allowed"},
		{"resource allowed", read([]string{"tagged"}, "window://h/x"), ""},
		{"claims", groups(toolCall([]string{"claims"}, "pc", "delete", `{}`), "interns"), `denied by rule set "claims" entry 0`},
		{"claims other group", groups(toolCall([]string{"claims"}, "pc", "delete", `{}`), "staff"), ""},
		{"nested args", toolCall([]string{"shapes"}, "pc", "rm", `{"opts":{"force":true}}`), `denied by rule set "shapes" entry 0`},
		{"nested args false", toolCall([]string{"shapes"}, "pc", "rm", `{"opts":{"force":false}}`), ""},
		{"whole args", toolCall([]string{"shapes"}, "pc", "rm", `{"a":1,"b":2,"c":3}`), `denied by rule set "shapes" entry 1`},
		{"key in args", toolCall([]string{"shapes"}, "pc", "rm", `{"secret":1}`), `denied by rule set "shapes" entry 1`},
		{"tags in cel", toolCall([]string{"shapes"}, "pc", "rm", `{}`, "danger"), `denied by rule set "shapes" entry 2`},
		{"undefined rule set fails closed", toolCall([]string{"gone"}, "pc", "echo", `{}`), `rule set "gone" is not defined`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Admit(context.Background(), tc.call)
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			se, ok := smcp.AsError(err)
			if !ok || se.Code != smcp.CodeForbidden || !strings.Contains(se.Message, tc.refusal) {
				t.Fatalf("got %v, want a 403 with %q", err, tc.refusal)
			}
		})
	}
}

// A listing hides what may not be called, and keeps a tool whose deny
// depends on the arguments of a call.
func TestVisible(t *testing.T) {
	r, err := load(t, keysYAML)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(r)
	if e.Visible(toolCall([]string{"echo-only"}, "pc", "add", "")) {
		t.Fatal("add listed to echo-only")
	}
	if !e.Visible(toolCall([]string{"echo-only"}, "pc", "echo", "")) {
		t.Fatal("echo hidden from echo-only")
	}
	if !e.Visible(toolCall([]string{"safe"}, "pc", "read_file", `{"path":"/etc/x"}`)) {
		t.Fatal("read_file hidden though only some of its calls are denied")
	}
	if e.Visible(toolCall([]string{"safe"}, "prod-2", "shell", "")) {
		t.Fatal("shell of prod-2 listed to safe")
	}
}

// A bad rule refuses to load, naming its rule set and entry; so does a key
// naming a rule set that does not exist.
func TestLoadRefusesBadRules(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"bad cel", "rule_sets:\n  s:\n    - allow: {tool: a}\n    - deny: {cel: 'tool.name =='}\n", `rule set "s" entry 1: cel:`},
		{"cel not bool", "rule_sets:\n  s:\n    - deny: {cel: 'office + computer'}\n", `rule set "s" entry 0: cel: the expression is a string`},
		{"bad glob", "rule_sets:\n  s:\n    - deny: {tool: '[a'}\n", `rule set "s" entry 0: tool: bad pattern`},
		{"empty match", "rule_sets:\n  s:\n    - deny: {}\n", `rule set "s" entry 0: an empty match`},
		{"both", "rule_sets:\n  s:\n    - {allow: {tool: a}, deny: {tool: b}}\n", `rule set "s" entry 0: an entry is an allow or a deny`},
		{"tool and resource", "rule_sets:\n  s:\n    - deny: {tool: a, resource: 'dpe://'}\n", `rule set "s" entry 0: a rule matches tools or resources`},
		{"unknown set", "keys:\n  - {id: k, key: x, rules: [nope]}\n", `key "k": rule set "nope" is not defined`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// Set replaces the rules for the calls that follow (a reload).
func TestEngineSet(t *testing.T) {
	r1, err := load(t, "rule_sets:\n  s:\n    - allow: {tool: echo}\n")
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(r1)
	c := toolCall([]string{"s"}, "pc", "add", `{}`)
	if _, err := e.Admit(context.Background(), c); err == nil {
		t.Fatal("add admitted")
	}
	r2, err := load(t, "rule_sets:\n  s:\n    - allow: {tool: '*'}\n")
	if err != nil {
		t.Fatal(err)
	}
	e.Set(r2)
	if _, err := e.Admit(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAdmitCEL is one call judged by a rule set with patterns and an
// expression over the call's arguments (docs/GOVERNANCE.md quotes it).
func BenchmarkAdmitCEL(b *testing.B) {
	r, err := Compile(map[string][]Rule{"safe": {
		{Deny: &Match{Computer: "prod-*", Tool: "shell*"}},
		{Deny: &Match{CEL: `tool.name == "read_file" && args.path.startsWith("/etc")`}},
		{Deny: &Match{Resource: "dpe://"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	e := NewEngine(r)
	c := toolCall([]string{"safe"}, "pc", "read_file", `{"path":"/home/me/notes.txt"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Admit(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// Rules of patterns alone judge a call without allocating: the evaluation
// context of CEL is made only for an expression (the bench's rule set,
// docs/BENCHMARKS.md "Governance on vs off", is judged on every call).
func TestPatternRulesAllocateNothing(t *testing.T) {
	r, err := Compile(map[string][]Rule{"bench": {
		{Allow: &Match{Tool: "echo"}},
		{Deny: &Match{Computer: "prod-*", Tool: "shell*"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(r)
	c := toolCall([]string{"bench"}, "pc", "echo", `{"text":"hi"}`)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := e.Admit(ctx, c); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call judged by patterns, want 0", allocs)
	}
}
