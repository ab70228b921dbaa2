package computer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// drainBlob reads a handle through client:get_blob until eof.
func drainBlob(t *testing.T, h *harness, handle string) ([]byte, map[string]any) {
	t.Helper()
	var out bytes.Buffer
	for {
		ans := h.call(smcp.EventGetBlob, map[string]any{"blob_handle": handle, "chunk_offset": out.Len()})
		if _, isErr := ans["code"]; isErr {
			t.Fatalf("get_blob at %d: %v", out.Len(), ans)
		}
		b, err := base64.StdEncoding.DecodeString(ans["blob"].(string))
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		if ans["eof"] == true {
			if int(ans["total_size"].(float64)) != out.Len() {
				t.Fatalf("eof at %d of %v", out.Len(), ans["total_size"])
			}
			return out.Bytes(), ans
		}
	}
}

func errReason(ans map[string]any) (float64, any) {
	d, _ := ans["details"].(map[string]any)
	return ans["code"].(float64), d["reason"]
}

// A 0.4 computer over a skill folder and an MCP server serving a skill as
// resources and a 6 MiB image: get_skills, get_skill inline and as a
// blob, the image drained intact, update_skills after an edit, and the bad
// inputs each refused with its code.
func TestSkillsAndBlobs(t *testing.T) {
	dir := t.TempDir()
	skillDir := filepath.Join(dir, "skills")
	outside := filepath.Join(dir, "outside")
	write(t, filepath.Join(outside, "passwd"), []byte("root:x:0:0\n"))
	write(t, filepath.Join(skillDir, "report", "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\ntags: [docs]\n---\n# Report\n"))
	write(t, filepath.Join(skillDir, "report", ".skillenv"), []byte("TOKEN=s3cret\n"))
	bigText := bytes.Repeat([]byte("line of text\n"), 4<<10) // 52 KiB: over the inline budget
	write(t, filepath.Join(skillDir, "report", "ref", "long.md"), bigText)
	png := make([]byte, 100<<10)
	rand.Read(png)
	write(t, filepath.Join(skillDir, "report", "logo.png"), png)
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(skillDir, "report", "out.txt")); err != nil {
		t.Fatal(err)
	}

	f := testmcp.New("tools", testmcp.Options{})
	image := make([]byte, 6<<20)
	rand.Read(image)
	mcp.AddTool(f.Server, &mcp.Tool{Name: "shot", Description: "A large screenshot."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "screenshot"},
				&mcp.ImageContent{MIMEType: "image/png", Data: image},
			}}, nil, nil
		})
	f.Server.AddResource(&mcp.Resource{URI: "skill://com.example/lint", Name: "lint", Meta: mcp.Meta{"source": "resources", "version": "2.0.0"}},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "---\nname: lint\ndescription: Lint code.\n---\nlint body\n"}}}, nil
		})

	h := newComputer(t, map[string]map[string]any{"My Tools": {"url": fixture(t, f)}}, func(o *computer.Options) {
		o.Protocol = computer.Protocol04
		o.SkillDirs = []string{skillDir}
	})

	list := h.call(smcp.EventGetSkills, map[string]any{"req_id": "s1"})
	skills, _ := list["skills"].([]any)
	if list["req_id"] != "s1" || len(skills) != 2 {
		t.Fatalf("get_skills = %v", list)
	}
	user, mcpSkill := skills[0].(map[string]any), skills[1].(map[string]any)
	if user["name"] != "report" || user["source"] != "user" || user["description"] != "Write reports." || user["tags"].([]any)[0] != "docs" {
		t.Fatalf("user skill = %v", user)
	}
	if mcpSkill["name"] != "mcp:My_Tools:lint" || mcpSkill["source"] != "mcp:My_Tools" || mcpSkill["uri"] != "skill://com.example/lint" || mcpSkill["version"] != "2.0.0" {
		t.Fatalf("mcp skill = %v", mcpSkill)
	}
	if _, ok := user["body"]; ok {
		t.Fatal("get_skills carries a body")
	}

	ans := h.call(smcp.EventGetSkill, map[string]any{"name": "report"})
	body := "# Report\n"
	if ans["body"] != body || ans["rel_path"] != "SKILL.md" || ans["mime_type"] != "text/markdown" || ans["total_size"] != float64(len(body)) || ans["sha256"] != sum([]byte(body)) {
		t.Fatalf("get_skill inline = %v", ans)
	}
	if _, ok := ans["blob_handle"]; ok {
		t.Fatal("inline answer has a handle too")
	}
	ans = h.call(smcp.EventGetSkill, map[string]any{"name": "mcp:My_Tools:lint"})
	if ans["body"] != "lint body\n" {
		t.Fatalf("mcp skill body = %v", ans)
	}
	for _, tc := range []struct {
		rel  string
		data []byte
		mime string
	}{{"ref/long.md", bigText, "text/markdown"}, {"logo.png", png, "image/png"}} {
		ans = h.call(smcp.EventGetSkill, map[string]any{"name": "report", "rel_path": tc.rel})
		handle, _ := ans["blob_handle"].(string)
		if handle == "" || ans["body"] != nil || ans["mime_type"] != tc.mime || ans["sha256"] != sum(tc.data) {
			t.Fatalf("get_skill %s = %.300v", tc.rel, ans)
		}
		got, last := drainBlob(t, h, handle)
		if !bytes.Equal(got, tc.data) || last["sha256"] != sum(got) {
			t.Fatalf("%s drained %d bytes, sha %v", tc.rel, len(got), last["sha256"])
		}
	}

	// A tool result's 6 MiB image goes out as a handle and drains intact.
	res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "My_Tools__shot", "params": map[string]any{}, "timeout": 60})
	items, _ := res["content"].([]any)
	if res["isError"] == true || len(items) != 2 {
		t.Fatalf("tool result = %.300v", res)
	}
	img := items[1].(map[string]any)
	meta, _ := img["_meta"].(map[string]any)
	if img["data"] != "" || img["mimeType"] != "image/png" || meta["a2c_total_size"] != float64(len(image)) || meta["a2c_sha256"] != sum(image) {
		t.Fatalf("image item = %.300v", img)
	}
	got, _ := drainBlob(t, h, meta["a2c_blob_handle"].(string))
	if sum(got) != sum(image) {
		t.Fatal("the drained image differs")
	}

	// Bad input: each a clear code, and nothing of the secrets in any answer.
	for _, tc := range []struct {
		req    map[string]any
		code   float64
		reason any
	}{
		{map[string]any{"name": "../report"}, 4016, nil},
		{map[string]any{"name": "/etc/passwd"}, 4016, nil},
		{map[string]any{"name": "nope"}, 4014, nil},
		{map[string]any{"name": "mcp:Other:lint"}, 4014, nil},
		{map[string]any{"name": "report", "rel_path": "../../outside/passwd"}, 4017, "traversal"},
		{map[string]any{"name": "report", "rel_path": "/etc/passwd"}, 4017, "traversal"},
		{map[string]any{"name": "report", "rel_path": "out.txt"}, 4017, "traversal"},
		{map[string]any{"name": "report", "rel_path": ".skillenv"}, 4017, "forbidden"},
		{map[string]any{"name": "report", "rel_path": "nothing.md"}, 4017, "not_found"},
	} {
		ans := h.call(smcp.EventGetSkill, tc.req)
		if code, reason := errReason(ans); code != tc.code || reason != tc.reason {
			t.Errorf("get_skill %v = %v, want %v %v", tc.req, ans, tc.code, tc.reason)
		}
		if strings.Contains(ans["message"].(string), "s3cret") || strings.Contains(ans["message"].(string), "root:x") {
			t.Errorf("answer leaks a secret: %v", ans)
		}
	}
	handle := h.call(smcp.EventGetSkill, map[string]any{"name": "report", "rel_path": "logo.png"})["blob_handle"].(string)
	for _, bad := range []string{"forged", handle[:len(handle)-2] + "xx", strings.Replace(handle, "a2cb1.", "a2cb1.A", 1)} {
		if code, reason := errReason(h.call(smcp.EventGetBlob, map[string]any{"blob_handle": bad})); code != 4018 || reason != "invalid_handle" {
			t.Errorf("altered handle %q: %v %v", bad, code, reason)
		}
	}
	if code, reason := errReason(h.call(smcp.EventGetBlob, map[string]any{"blob_handle": handle, "chunk_offset": len(png) + 1})); code != 4018 || reason != "range" {
		t.Errorf("offset past the end: %v %v", code, reason)
	}
	// The handle's source is re-checked: the file replaced by a symlink out
	// is forbidden, removed it is gone.
	logo := filepath.Join(skillDir, "report", "logo.png")
	os.Remove(logo)
	if code, reason := errReason(h.call(smcp.EventGetBlob, map[string]any{"blob_handle": handle})); code != 4018 || reason != "gone" {
		t.Errorf("removed file: %v %v", code, reason)
	}
	if err := os.Symlink(filepath.Join(outside, "passwd"), logo); err != nil {
		t.Fatal(err)
	}
	if code, reason := errReason(h.call(smcp.EventGetBlob, map[string]any{"blob_handle": handle})); code != 4018 || reason != "forbidden" {
		t.Errorf("file swapped for a symlink out: %v %v", code, reason)
	}

	// Editing SKILL.md announces update_skills and serves the new body.
	h.upd.drain()
	write(t, filepath.Join(skillDir, "report", "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\n---\n# Report v2\n"))
	h.upd.wait(t, smcp.EventUpdateSkills)
	if ans := h.call(smcp.EventGetSkill, map[string]any{"name": "report"}); ans["body"] != "# Report v2\n" {
		t.Fatalf("after the edit: %v", ans)
	}
}

// Uploads land in the landing root with their sha256; without a root they
// are refused; a 0.3 computer has no put_blob and no tags, a 0.2 one no
// skills and no blob handles.
func TestPutBlobAndProfiles(t *testing.T) {
	root := t.TempDir()
	h := newComputer(t, nil, func(o *computer.Options) { o.Protocol = computer.Protocol04; o.LandingRoot = root })
	data := make([]byte, 6<<20)
	rand.Read(data)
	const step = 256 << 10
	var ans map[string]any
	for off := 0; off < len(data); off += step {
		end := min(off+step, len(data))
		req := map[string]any{"chunk_offset": off, "eof": end == len(data), "blob": base64.StdEncoding.EncodeToString(data[off:end])}
		if off == 0 {
			req["total_size"], req["sha256"], req["name_hint"] = len(data), sum(data), "../../etc/passwd"
		} else {
			req["upload_id"] = ans["upload_id"]
		}
		if ans = h.call(smcp.EventPutBlob, req); ans["code"] != nil {
			t.Fatalf("put_blob at %d: %v", off, ans)
		}
	}
	path, _ := ans["landing_path"].(string)
	if filepath.IsAbs(path) || strings.Contains(path, "/") || !strings.HasSuffix(path, "-passwd") || ans["sha256"] != sum(data) || ans["total_size"] != float64(len(data)) {
		t.Fatalf("eof answer = %v (landing_path: the name in the landing root)", ans)
	}
	landed, err := os.ReadFile(filepath.Join(root, path))
	if err != nil || sum(landed) != sum(data) {
		t.Fatalf("landed file differs (%v)", err)
	}

	noRoot := newComputer(t, nil, func(o *computer.Options) { o.Protocol = computer.Protocol04 })
	ans = noRoot.call(smcp.EventPutBlob, map[string]any{"chunk_offset": 0, "eof": true, "total_size": 1, "sha256": sum([]byte("x")), "blob": "eA=="})
	if code, reason := errReason(ans); code != 4019 || reason != "forbidden" {
		t.Fatalf("no landing root: %v", ans)
	}

	v03 := newComputer(t, nil, func(o *computer.Options) { o.Protocol = computer.Protocol03 })
	if ans := v03.call(smcp.EventPutBlob, map[string]any{}); ans["code"] != 400.0 || !strings.Contains(ans["message"].(string), "unknown event") {
		t.Fatalf("put_blob on 0.3: %v", ans)
	}
	if ans := v03.call(smcp.EventGetSkills, map[string]any{}); ans["skills"] == nil {
		t.Fatalf("get_skills on 0.3: %v", ans)
	}
	v02 := newComputer(t, nil)
	for _, ev := range []string{smcp.EventGetSkills, smcp.EventGetSkill, smcp.EventGetBlob, smcp.EventPutBlob} {
		if ans := v02.call(ev, map[string]any{}); ans["code"] != 400.0 || !strings.Contains(ans["message"].(string), "unknown event") {
			t.Fatalf("%s on 0.2: %v", ev, ans)
		}
	}
}

// TestMaxBlobBytes: Options.MaxBlobBytes (smcp computer --max-blob-bytes)
// is the cap of what the computer serves and takes: at 1 MiB a 2 MiB skill
// file and a 2 MiB upload are refused with too_large, each before a byte
// moves.
func TestMaxBlobBytes(t *testing.T) {
	skillDir := t.TempDir()
	write(t, filepath.Join(skillDir, "report", "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\n---\n# Report\n"))
	big := make([]byte, 2<<20)
	rand.Read(big)
	write(t, filepath.Join(skillDir, "report", "big.bin"), big)
	h := newComputer(t, nil, func(o *computer.Options) {
		o.Protocol = computer.Protocol04
		o.SkillDirs = []string{skillDir}
		o.LandingRoot = t.TempDir()
		o.MaxBlobBytes = 1 << 20
	})
	ans := h.call(smcp.EventGetSkill, map[string]any{"name": "report", "rel_path": "big.bin"})
	if ans["code"] != 4017.0 || ans["details"].(map[string]any)["reason"] != "too_large" {
		t.Fatalf("get_skill of a file over the cap: %.300v", ans)
	}
	ans = h.call(smcp.EventPutBlob, map[string]any{"chunk_offset": 0, "eof": false, "total_size": len(big), "sha256": sum(big),
		"blob": base64.StdEncoding.EncodeToString(big[:1024])})
	if ans["code"] != 4019.0 || ans["details"].(map[string]any)["reason"] != "too_large" {
		t.Fatalf("put_blob over the cap: %v", ans)
	}
}
