package mcpfront

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// skills/list pages: every entry once, in order, across pages of the
// size asked; a cursor goes on after its page's last URI even when that
// entry is gone meanwhile; a cursor that is not one is refused.
func TestSkillsPage(t *testing.T) {
	var entries []*skillEntry
	for i := range 7 {
		entries = append(entries, &skillEntry{URI: fmt.Sprintf("skill://pc/s%d/SKILL.md", i)})
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, next, err := skillsPage(entries, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range page {
			got = append(got, e.URI)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	var want []string
	for _, e := range entries {
		want = append(want, e.URI)
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("%d pages of %v, want 3 of %v", pages, got, want)
	}

	_, next, _ := skillsPage(entries, "", 3)
	gone := slices.Delete(slices.Clone(entries), 2, 3) // the first page's last entry
	page, _, err := skillsPage(gone, next, 3)
	if err != nil || len(page) == 0 || page[0].URI != entries[3].URI {
		t.Errorf("after a removed entry: %v, %v; want the page from %s", page, err, entries[3].URI)
	}
	if _, _, err := skillsPage(entries, "not a cursor!", 3); err == nil {
		t.Error("an invalid cursor was accepted")
	}
}

// A skill's URI: the SMCP name's segments as the path, its front-matter
// name last, escaped as a URI path.
func TestSEPSkillURI(t *testing.T) {
	for _, c := range []struct{ computer, name, want string }{
		{"pc", "demo", "skill://pc/demo/SKILL.md"},
		{"pc", "plugin:pdf", "skill://pc/plugin/pdf/SKILL.md"},
		{"my pc", "mcp:bundle_1:pdf", "skill://my%20pc/mcp/bundle_1/pdf/SKILL.md"},
	} {
		if got := sepSkillURI(c.computer, c.name, skillFile); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.computer, c.name, got, c.want)
		}
	}
}

// skillAt finds the listed skill a URI is of, in the SEP's form and in
// the resources' form, the longest name first; a URI of no listed skill
// resolves to none.
func TestSkillAt(t *testing.T) {
	refs := map[string]*smcpv1.A2CSkillRef{}
	for _, n := range []string{"pdf", "pdf:forms", "mcp:bundle_1:pdf", "plugin:pdf"} {
		refs[n] = &smcpv1.A2CSkillRef{Name: n}
	}
	x := &session{computers: map[string]*computerView{"my pc": {skillRefs: refs}}}
	for _, c := range []struct{ uri, name, rel string }{
		{"skill://my%20pc/pdf/SKILL.md", "pdf", "SKILL.md"},
		{"skill://my%20pc/pdf/refs/a%20b.md", "pdf", "refs/a%20b.md"},
		{"skill://my%20pc/pdf/forms/SKILL.md", "pdf:forms", "SKILL.md"},
		{"skill://my%20pc/plugin/pdf/SKILL.md", "plugin:pdf", "SKILL.md"},
		{"skill://my%20pc/plugin:pdf/SKILL.md", "plugin:pdf", "SKILL.md"},
		{"skill://my%20pc/mcp/bundle_1/pdf/x/y.md", "mcp:bundle_1:pdf", "x/y.md"},
		{"skill://my%20pc/mcp:bundle_1:pdf/SKILL.md", "mcp:bundle_1:pdf", "SKILL.md"},
		{"skill://my%20pc/pdf", "", ""},
		{"skill://my%20pc/other/SKILL.md", "", ""},
		{"skill://pc/pdf/SKILL.md", "", ""},
		{"window://my%20pc/pdf/SKILL.md", "", ""},
	} {
		computer, name, rel, ref := x.skillAt(c.uri)
		if name != c.name || rel != c.rel || (ref == nil) != (c.name == "") || (ref != nil && computer != "my pc") {
			t.Errorf("%s: %q %q %q %v, want %q %q", c.uri, computer, name, rel, ref, c.name, c.rel)
		}
	}
}

// The front matter written at the top of a SKILL.md reads back, as YAML,
// as the entry's frontmatter (JSON) shows it, whatever its values hold:
// colons, dashes, new lines, numbers-as-text, nested metadata.
func TestFrontMatterRoundTrip(t *testing.T) {
	meta, err := structpb.NewStruct(map[string]any{"version": "1.10", "n": 3, "nested": map[string]any{"k": "- v: w"}})
	if err != nil {
		t.Fatal(err)
	}
	ref := &smcpv1.A2CSkillRef{Name: "plugin:pdf", Description: "Use: when a PDF\n- is given\n",
		License: new("'quoted'"), AllowedTools: []string{"Read", "Bash(git:*)"}, Tags: []string{"yes", "no", "1"}, SkillMetadata: meta}
	fm := frontMatterOf(ref.GetName(), ref)
	head, err := frontMatterYAML(fm)
	if err != nil {
		t.Fatal(err)
	}
	y, ok := strings.CutPrefix(string(head), "---\n")
	y, ok2 := strings.CutSuffix(y, "---\n")
	var fromYAML map[string]any
	if !ok || !ok2 || yaml.Unmarshal([]byte(y), &fromYAML) != nil {
		t.Fatalf("front matter %q", head)
	}
	b, err := json.Marshal(fm)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON map[string]any
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatal(err)
	}
	// Numbers: YAML reads 3 as an int, JSON as a float64.
	yb, _ := json.Marshal(fromYAML)
	var yamlAsJSON map[string]any
	_ = json.Unmarshal(yb, &yamlAsJSON)
	if !reflect.DeepEqual(yamlAsJSON, fromJSON) || fromJSON["name"] != "pdf" || fromJSON["allowed-tools"] != "Read Bash(git:*)" {
		t.Errorf("YAML %v\nJSON %v", yamlAsJSON, fromJSON)
	}
}
