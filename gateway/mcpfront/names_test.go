package mcpfront

import (
	"regexp"
	"strings"
	"testing"
)

var mcpToolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func TestToolNamesNeverCollide(t *testing.T) {
	for _, c := range []struct{ computer, tool, want string }{
		{"pc", "echo", "pc__echo"},
		{"a", "b__c", "a__b__c"},
		{"my-pc", "bundle_1__read_file", "my-pc__bundle_1__read_file"},
	} {
		if got := ToolName(c.computer, c.tool); got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.computer, c.tool, got, c.want)
		}
	}
	// The pair of the issue: both were "a__b__c".
	if a, b := ToolName("a__b", "c"), ToolName("a", "b__c"); a == b {
		t.Fatalf("computer a__b's tool c and computer a's tool b__c are both %q", a)
	}
	long := strings.Repeat("x", 200)
	for _, pair := range [][2]string{{"a__b", "c"}, {"a_", "_b"}, {"pc", long}, {long, "t"}, {"büro", "grüße"}, {"a b", "c/d"}} {
		name := ToolName(pair[0], pair[1])
		if !mcpToolName.MatchString(name) || !strings.Contains(name, ".") {
			t.Errorf("ToolName(%q, %q) = %q: want a valid fallback name", pair[0], pair[1], name)
		}
	}
}

// No two (computer, tool) pairs share a name: readable names have no dot
// and split at their first "__"; fallback names have one and differ in
// their digest.
func FuzzToolName(f *testing.F) {
	for _, s := range [][2]string{{"a__b", "c"}, {"a", "b__c"}, {"a_", "_b"}, {"pc", "echo"}, {"", "x"}, {"x", ""}} {
		f.Add(s[0], s[1], s[0]+"_", s[1])
	}
	f.Fuzz(func(t *testing.T, c1, t1, c2, t2 string) {
		n1, n2 := ToolName(c1, t1), ToolName(c2, t2)
		if !mcpToolName.MatchString(n1) {
			t.Fatalf("ToolName(%q, %q) = %q: not a valid MCP tool name", c1, t1, n1)
		}
		if n1 == n2 && (c1 != c2 || t1 != t2) {
			t.Fatalf("(%q, %q) and (%q, %q) are both %q", c1, t1, c2, t2, n1)
		}
		if !strings.Contains(n1, ".") {
			c, tool, _ := strings.Cut(n1, Separator)
			if c != c1 || tool != t1 {
				t.Fatalf("readable %q does not split back to (%q, %q)", n1, c1, t1)
			}
		}
	})
}
