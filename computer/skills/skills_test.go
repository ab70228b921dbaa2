package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const skillMD = `---
name: pdf-tools
description: Work with PDF files.
license: MIT
compatibility: needs python3
allowed-tools: Read, Bash
tags: [pdf, docs]
metadata:
  owner: team-a
  level: 2
version: "1.10"
---
# PDF tools

Use ${TFROBOT_SKILL_DIR}/scripts/x.py.
`

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillDir makes a user folder with the pdf-tools skill, a secret next to
// it and a secret outside.
func skillDir(t *testing.T) (dir, outside string) {
	t.Helper()
	base := t.TempDir()
	dir = filepath.Join(base, "skills")
	outside = filepath.Join(base, "outside")
	writeFile(t, filepath.Join(dir, "pdf-tools", "SKILL.md"), skillMD)
	writeFile(t, filepath.Join(dir, "pdf-tools", ".skillenv"), "API_TOKEN=s3cret-value\n")
	writeFile(t, filepath.Join(dir, "pdf-tools", "scripts", "x.py"), "print('x')\n")
	writeFile(t, filepath.Join(dir, "pdf-tools", "ref", "data.json"), `{"a":1}`)
	writeFile(t, filepath.Join(outside, "passwd"), "root:x:0:0\n")
	writeFile(t, filepath.Join(dir, "broken", "SKILL.md"), "no front matter\n")
	return dir, outside
}

func readAll(t *testing.T, c *Content) string {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRegistryListsUserSkills(t *testing.T) {
	dir, _ := skillDir(t)
	r, err := New(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	list := r.List()
	if len(list) != 1 {
		t.Fatalf("skills = %v, want only pdf-tools (broken has no front matter)", list)
	}
	s := list[0]
	if s.GetName() != "pdf-tools" || s.GetSource() != "user" || s.GetPath() != "pdf-tools" || s.GetDescription() != "Work with PDF files." {
		t.Fatalf("ref = %v", s)
	}
	if s.GetLicense() != "MIT" || s.GetCompatibility() != "needs python3" || s.GetVersion() != "1.10" {
		t.Fatalf("optional fields = %v", s)
	}
	if got := strings.Join(s.GetAllowedTools(), ","); got != "Read,Bash" {
		t.Fatalf("allowed_tools = %q", got)
	}
	if got := strings.Join(s.GetTags(), ","); got != "pdf,docs" {
		t.Fatalf("tags = %q", got)
	}
	if s.GetSkillMetadata().AsMap()["owner"] != "team-a" {
		t.Fatalf("metadata = %v", s.GetSkillMetadata())
	}
}

func TestOpenServesBodyWithoutFrontMatter(t *testing.T) {
	dir, _ := skillDir(t)
	r, err := New(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, e := r.Open("pdf-tools", "")
	if e != nil {
		t.Fatal(e)
	}
	defer c.Close()
	want := "# PDF tools\n\nUse ${TFROBOT_SKILL_DIR}/scripts/x.py.\n"
	if got := readAll(t, c); got != want {
		t.Fatalf("body = %q, want %q", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if c.MIME != "text/markdown" || c.Size != int64(len(want)) || c.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("content = %+v", c)
	}
	j, e := r.Open("pdf-tools", "./ref//data.json")
	if e != nil {
		t.Fatal(e)
	}
	defer j.Close()
	if readAll(t, j) != `{"a":1}` || j.MIME != "application/json" {
		t.Fatalf("data.json = %+v", j)
	}
}

func TestOpenRefusals(t *testing.T) {
	dir, outside := skillDir(t)
	root := filepath.Join(dir, "pdf-tools")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(root, "link-out")))
	must(os.Symlink(outside, filepath.Join(root, "dir-out")))
	must(os.Symlink(".skillenv", filepath.Join(root, "notes.txt")))
	must(os.Symlink("scripts/x.py", filepath.Join(root, "inside-link.py")))
	r, err := New(Options{Dirs: []string{dir}, MaxSize: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeFile(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 2<<10))

	for _, tc := range []struct {
		name, rel string
		code      int
		reason    string
	}{
		{"../etc", "", smcp.CodeInvalidSkillName, ""},
		{"/etc/passwd", "", smcp.CodeInvalidSkillName, ""},
		{"pdf-tools/../x", "", smcp.CodeInvalidSkillName, ""},
		{"PDF-tools", "", smcp.CodeInvalidSkillName, ""},
		{"mcp:a__b:x", "", smcp.CodeInvalidSkillName, ""},
		{"a:b:c", "", smcp.CodeInvalidSkillName, ""},
		{"other", "", smcp.CodeMCPServerNotFound, ""},
		{"broken", "", smcp.CodeMCPServerNotFound, ""},
		{"pdf-tools", "../outside/passwd", smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", "scripts/../../outside/passwd", smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", "/etc/passwd", smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", `..\..\etc\passwd`, smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", "link-out", smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", "dir-out/passwd", smcp.CodeSkillResourceNotAccessible, ReasonTraversal},
		{"pdf-tools", ".skillenv", smcp.CodeSkillResourceNotAccessible, ReasonForbidden},
		{"pdf-tools", "./.SkillEnv", smcp.CodeSkillResourceNotAccessible, ReasonForbidden},
		{"pdf-tools", "scripts/.skillenv", smcp.CodeSkillResourceNotAccessible, ReasonForbidden},
		{"pdf-tools", "notes.txt", smcp.CodeSkillResourceNotAccessible, ReasonForbidden},
		{"pdf-tools", "missing.md", smcp.CodeSkillResourceNotAccessible, ReasonNotFound},
		{"pdf-tools", "scripts", smcp.CodeSkillResourceNotAccessible, ReasonNotFound},
		{"pdf-tools", "big.bin", smcp.CodeSkillResourceNotAccessible, ReasonTooLarge},
	} {
		c, e := r.Open(tc.name, tc.rel)
		if e == nil {
			c.Close()
			t.Errorf("Open(%q, %q) served %q", tc.name, tc.rel, tc.rel)
			continue
		}
		if e.Code != tc.code || (tc.reason != "" && e.Details["reason"] != tc.reason) {
			t.Errorf("Open(%q, %q) = %d %v, want %d %s", tc.name, tc.rel, e.Code, e.Details, tc.code, tc.reason)
		}
		if strings.Contains(e.Message, "s3cret") || strings.Contains(e.Message, "root:x") {
			t.Errorf("error leaks content: %v", e)
		}
	}
	if _, e := r.Open("mcp:srv:x", ""); e == nil || e.Details["mcp_server"] != "srv" {
		t.Errorf("unknown mcp skill = %v, want 4014 with mcp_server", e)
	}
	if _, e := r.Open("pdf-tools", "big.bin"); e == nil || e.Details["total_size"] != int64(2<<10) {
		t.Errorf("too_large details = %v", e)
	}
	c, e := r.Open("pdf-tools", "inside-link.py")
	if e != nil {
		t.Fatalf("a symlink inside the skill is served: %v", e)
	}
	c.Close()
}

func TestWatchReportsEdits(t *testing.T) {
	dir, _ := skillDir(t)
	var changes atomic.Int32
	r, err := New(Options{Dirs: []string{dir}, Debounce: 50 * time.Millisecond, OnChange: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writeFile(t, filepath.Join(dir, "pdf-tools", "SKILL.md"), strings.Replace(skillMD, "Use", "Now use", 1))
	testwait.Within(t, 10*time.Second, "update after a SKILL.md edit", func() bool { return changes.Load() >= 1 })
	c, e := r.Open("pdf-tools", "")
	if e != nil {
		t.Fatal(e)
	}
	if !strings.Contains(readAll(t, c), "Now use") {
		t.Fatal("edit not served")
	}
	c.Close()
	n := changes.Load()
	writeFile(t, filepath.Join(dir, "new-skill", "SKILL.md"), "---\nname: new-skill\ndescription: new\n---\nbody\n")
	testwait.Within(t, 10*time.Second, "a new skill folder listed", func() bool { return changes.Load() > n && len(r.List()) == 2 })
	// The secret's content is not part of the fingerprint: editing it is
	// no change an agent could see.
	n = changes.Load()
	r.Rescan()
	if changes.Load() != n {
		t.Fatal("a rescan without edits reported a change")
	}
}

func TestSyncMCPResourcesAndMounted(t *testing.T) {
	mounted := t.TempDir()
	writeFile(t, filepath.Join(mounted, "SKILL.md"), "---\nname: mounted-one\ndescription: m\n---\nmounted body\n")
	files := map[string]string{
		"skill://com.example/csv-agg/SKILL.md":         "---\nname: csv-agg\ndescription: c\n---\ncsv body\n",
		"skill://com.example/csv-agg/scripts/run.sh":   "echo hi\n",
		"skill://com.example/csv-agg/.skillenv":        "TOKEN=zzz\n",
		"skill://com.example/csv-agg/..%2F..%2Fescape": "x",
	}
	read := func(_ context.Context, uri string) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: files[uri]}}}, nil
	}
	var changes atomic.Int32
	r, err := New(Options{OnChange: func() { changes.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	list := []*mcp.Resource{
		{URI: "skill://com.example/csv-agg", Meta: mcp.Meta{"source": "resources", "version": "1.2.0"}},
		{URI: "skill://com.example/csv-agg/SKILL.md"},
		{URI: "skill://com.example/csv-agg/scripts/run.sh"},
		{URI: "skill://com.example/csv-agg/.skillenv"},
		{URI: "skill://com.example/mounted", Meta: mcp.Meta{"source": "mounted", "mount_dir": mounted}},
		{URI: "skill://com.example/arch", Meta: mcp.Meta{"source": "archive"}},
		{URI: "window://x/y"},
	}
	if !r.SyncMCP(context.Background(), "my_srv", list, read) {
		t.Fatal("first sync reported no change")
	}
	got := r.List()
	if len(got) != 2 || got[0].GetName() != "mcp:my_srv:csv-agg" || got[0].GetSource() != "mcp:my_srv" ||
		got[0].GetUri() != "skill://com.example/csv-agg" || got[0].GetVersion() != "1.2.0" || got[1].GetName() != "mcp:my_srv:mounted-one" {
		t.Fatalf("skills = %v", got)
	}
	c, e := r.Open("mcp:my_srv:csv-agg", "scripts/run.sh")
	if e != nil {
		t.Fatal(e)
	}
	if readAll(t, c) != "echo hi\n" {
		t.Fatal("staged file differs")
	}
	c.Close()
	if _, e := r.Open("mcp:my_srv:csv-agg", ".skillenv"); e == nil || e.Details["reason"] != ReasonForbidden {
		t.Fatalf(".skillenv of an MCP skill = %v", e)
	}
	if r.SyncMCP(context.Background(), "my_srv", list, read) {
		t.Fatal("the same resources reported a change")
	}
	files["skill://com.example/csv-agg/SKILL.md"] = "---\nname: csv-agg\ndescription: c\n---\nnew body\n"
	if !r.SyncMCP(context.Background(), "my_srv", list, read) {
		t.Fatal("a changed SKILL.md reported no change")
	}
	// A file that would escape the staging folder refuses the skill.
	bad := append(list[:0:0], list...)
	bad = append(bad, &mcp.Resource{URI: "skill://com.example/csv-agg/..%2F..%2Fescape"})
	r.SyncMCP(context.Background(), "my_srv", bad, read)
	if _, e := r.Lookup("mcp:my_srv:csv-agg"); e == nil {
		t.Fatal("a skill with an escaping file was registered")
	}
	if !r.RemoveMCP("my_srv") || len(r.List()) != 0 {
		t.Fatal("orphans still listed")
	}
	if _, e := r.Lookup("mcp:my_srv:mounted-one"); e == nil || e.Code != smcp.CodeMCPServerNotFound {
		t.Fatalf("orphan lookup = %v", e)
	}
}
