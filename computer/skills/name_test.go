package skills

import (
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Name
		ok   bool
	}{
		{"my-helper", Name{Kind: User, Skill: "my-helper"}, true},
		{"acme-audit:audit", Name{Kind: Marketplace, Plugin: "acme-audit", Skill: "audit"}, true},
		{"mcp:tfrobot-tools:code-review", Name{Kind: MCP, BundleID: "tfrobot-tools", Skill: "code-review"}, true},
		{"mcp:My_Server:x", Name{Kind: MCP, BundleID: "My_Server", Skill: "x"}, true},
		{"mcp:bundle_8d2a9232fa76e8a5:s", Name{Kind: MCP, BundleID: "bundle_8d2a9232fa76e8a5", Skill: "s"}, true},
		{"mcp:skill", Name{Kind: Marketplace, Plugin: "mcp", Skill: "skill"}, true},
		{"", Name{}, false},
		{"a:b:c", Name{}, false},
		{"mcp:a:b:c", Name{}, false},
		{"mcp:a__b:c", Name{}, false},
		{"mcp:a.b:c", Name{}, false},
		{"mcp::c", Name{}, false},
		{"..", Name{}, false},
		{"../x", Name{}, false},
		{"a/b", Name{}, false},
		{"-a", Name{}, false},
		{"a-", Name{}, false},
		{"a--b", Name{}, false},
		{"Abc", Name{}, false},
		{"a_b", Name{}, false},
		{strings.Repeat("a", 64), Name{Kind: User, Skill: strings.Repeat("a", 64)}, true},
		{strings.Repeat("a", 65), Name{}, false},
		{"a:", Name{}, false},
		{":a", Name{}, false},
		{"é", Name{}, false},
	} {
		got, err := ParseName(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseName: an accepted name prints back to itself, and never holds
// anything a path could be made of.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"my-helper", "a:b", "mcp:x_y:z", "mcp:a__b:c", "../..", "/etc/passwd", "a:b:c:d", "mcp:.:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseName(s)
		if err != nil {
			if n != (Name{}) {
				t.Fatalf("refused %q but returned %+v", s, n)
			}
			return
		}
		if n.String() != s {
			t.Fatalf("ParseName(%q).String() = %q", s, n.String())
		}
		if strings.ContainsAny(s, "/\\.\x00") || strings.Contains(s, "__") && n.Kind != MCP {
			t.Fatalf("accepted %q", s)
		}
	})
}
