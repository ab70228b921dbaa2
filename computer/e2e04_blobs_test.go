package computer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// agent04 is a 0.4 Socket.IO agent in one office of a real gateway.
type agent04 struct {
	t     *testing.T
	c     *sioclient.Client
	n     int
	notes chan string
}

// ask sends one routed request to computer pc through the gateway and
// decodes the answer as an agent sees it. Each request gets a generous
// deadline of its own: a 6 MiB transfer is ~24 of them on a loaded
// machine.
func (a *agent04) ask(event string, extra map[string]any) map[string]any {
	a.t.Helper()
	a.n++
	req := map[string]any{"agent": "bot", "req_id": fmt.Sprintf("r%d", a.n), "computer": "pc"}
	for k, v := range extra {
		req[k] = v
	}
	// A hang guard, not a speed bound: a 20 MiB tool result's one answer
	// took close to a minute under -race beside other packages' tests.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args, err := a.c.RequestArgs(ctx, event, req)
	if err != nil || len(args) == 0 {
		a.t.Fatalf("%s: %v %v", event, args, err)
	}
	var out map[string]any
	if err := json.Unmarshal(args[0], &out); err != nil {
		a.t.Fatalf("%s: answer %.300s", event, args[0])
	}
	return out
}

// drain reads handle through the gateway's client:get_blob until eof,
// checking that the chunks arrive in order, at most 256 KiB each, and that
// none is empty before the end.
func (a *agent04) drain(handle string) ([]byte, map[string]any) {
	a.t.Helper()
	var out bytes.Buffer
	for chunks := 0; ; chunks++ {
		ans := a.ask(smcp.EventGetBlob, map[string]any{"blob_handle": handle, "chunk_offset": out.Len()})
		if _, isErr := ans["code"]; isErr {
			a.t.Fatalf("get_blob at %d: %v", out.Len(), ans)
		}
		if ans["chunk_offset"] != float64(out.Len()) {
			a.t.Fatalf("asked for %d, got chunk_offset %v", out.Len(), ans["chunk_offset"])
		}
		b, err := base64.StdEncoding.DecodeString(ans["blob"].(string))
		if err != nil {
			a.t.Fatal(err)
		}
		out.Write(b)
		if ans["eof"] == true {
			if int(ans["total_size"].(float64)) != out.Len() {
				a.t.Fatalf("eof at %d of %v", out.Len(), ans["total_size"])
			}
			return out.Bytes(), ans
		}
		if len(b) > 256<<10 {
			a.t.Fatalf("a chunk of %d bytes, over 256 KiB", len(b))
		}
		if len(b) == 0 || chunks > 10000 {
			a.t.Fatalf("no progress at %d", out.Len())
		}
	}
}

// waitNote waits for notification event.
func (a *agent04) waitNote(event string) {
	a.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-a.notes:
			if got == event {
				return
			}
		case <-deadline:
			a.t.Fatalf("agent got no %s", event)
		}
	}
}

// A 0.4 office's skills and blobs end to end through the real gateway: a
// 0.4 computer with a skill folder, a landing root and a go-sdk MCP server
// whose tool returns a 6 MiB image; a 0.4 Socket.IO agent lists and reads
// skills (inline and as a blob), drains the image's handle chunk by chunk,
// uploads 6 MiB in 256 KiB chunks, hears update_skills after a SKILL.md
// edit and gets 4018 for a forged handle.
func TestE2ESkillsAndBlobs04(t *testing.T) {
	dir := t.TempDir()
	skillDir := filepath.Join(dir, "skills")
	landing := filepath.Join(dir, "landing")
	if err := os.Mkdir(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(skillDir, "report", "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\n---\n# Report\n"))
	logo := make([]byte, 700<<10) // over the inline budget and over two chunks
	rand.Read(logo)
	write(t, filepath.Join(skillDir, "report", "logo.png"), logo)

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

	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	h := newComputer(t, map[string]map[string]any{"My Tools": {"url": fixture(t, f)}}, func(o *computer.Options) {
		o.Protocol = computer.Protocol04
		o.SkillDirs = []string{skillDir}
		o.LandingRoot = landing
	})
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-04", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)

	c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Version: "0.4.0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ag := &agent04{t: t, c: c, notes: make(chan string, 256)}
	c.On(smcp.NotifyUpdateSkills, func(json.RawMessage) {
		select {
		case ag.notes <- smcp.NotifyUpdateSkills:
		default:
		}
	})
	if err := c.JoinOffice(ctxT(t), smcp.RoleAgent, "bot", "office-04"); err != nil {
		t.Fatal(err)
	}

	// The computer's join races the agent's: poll until the office routes.
	var list map[string]any
	if !testwait.Poll(30*time.Second, func() bool {
		list = ag.ask(smcp.EventGetSkills, nil)
		s, _ := list["skills"].([]any)
		return len(s) > 0
	}) {
		t.Fatalf("get_skills through the gateway: %v", list)
	}
	skills := list["skills"].([]any)
	if len(skills) != 1 || skills[0].(map[string]any)["name"] != "report" || skills[0].(map[string]any)["description"] != "Write reports." {
		t.Fatalf("get_skills = %v", list)
	}
	// A skill's path is its folder among the skills served, not the host's.
	if p := skills[0].(map[string]any)["path"]; p != "report" {
		t.Errorf("skill path %v, want report", p)
	}
	noHostPath(t, "get_skills", list, dir)

	ans := ag.ask(smcp.EventGetSkill, map[string]any{"name": "report"})
	if body := "# Report\n"; ans["body"] != body || ans["sha256"] != sum([]byte(body)) || ans["blob_handle"] != nil {
		t.Fatalf("get_skill inline = %v", ans)
	}
	ans = ag.ask(smcp.EventGetSkill, map[string]any{"name": "report", "rel_path": "logo.png"})
	skillHandle, _ := ans["blob_handle"].(string)
	if skillHandle == "" || ans["body"] != nil || ans["mime_type"] != "image/png" || ans["sha256"] != sum(logo) {
		t.Fatalf("get_skill as a blob = %.300v", ans)
	}
	got, last := ag.drain(skillHandle)
	if !bytes.Equal(got, logo) || last["sha256"] != sum(logo) {
		t.Fatalf("skill blob drained %d bytes, sha %v", len(got), last["sha256"])
	}

	// The tool result's 6 MiB image is a handle in _meta, drained intact
	// through the gateway.
	res := ag.ask(smcp.EventToolCall, map[string]any{"tool_name": "My_Tools__shot", "params": map[string]any{}, "timeout": 120})
	items, _ := res["content"].([]any)
	if res["isError"] != false || len(items) != 2 {
		t.Fatalf("tool result = %.300v", res)
	}
	img := items[1].(map[string]any)
	meta, _ := img["_meta"].(map[string]any)
	imgHandle, _ := meta["a2c_blob_handle"].(string)
	if imgHandle == "" || img["data"] != "" || meta["a2c_total_size"] != float64(len(image)) || meta["a2c_sha256"] != sum(image) {
		t.Fatalf("image item = %.300v", img)
	}
	if got, _ := ag.drain(imgHandle); sum(got) != sum(image) {
		t.Fatalf("the drained image (%d bytes) differs", len(got))
	}

	// 6 MiB up in 256 KiB chunks, landed under the landing root.
	data := make([]byte, 6<<20)
	rand.Read(data)
	const step = 256 << 10
	for off := 0; off < len(data); off += step {
		end := min(off+step, len(data))
		req := map[string]any{"chunk_offset": off, "eof": end == len(data), "blob": base64.StdEncoding.EncodeToString(data[off:end])}
		if off == 0 {
			req["total_size"], req["sha256"], req["name_hint"] = len(data), sum(data), "upload.bin"
		} else {
			req["upload_id"] = ans["upload_id"]
		}
		if ans = ag.ask(smcp.EventPutBlob, req); ans["code"] != nil {
			t.Fatalf("put_blob at %d: %v", off, ans)
		}
	}
	// landing_path is the file's name in the landing root, not a host path.
	path, _ := ans["landing_path"].(string)
	if filepath.IsAbs(path) || strings.Contains(path, "/") || !strings.HasSuffix(path, "upload.bin") || ans["sha256"] != sum(data) || ans["total_size"] != float64(len(data)) {
		t.Fatalf("put_blob eof answer = %v", ans)
	}
	noHostPath(t, "put_blob", ans, dir)
	if landed, err := os.ReadFile(filepath.Join(landing, path)); err != nil || sum(landed) != sum(data) {
		t.Fatalf("landed file differs (%v)", err)
	}
	if parts, _ := filepath.Glob(filepath.Join(landing, "*.part")); len(parts) != 0 {
		t.Errorf("part files left behind: %q", parts)
	}

	// A forged handle, and one altered by a byte, are 4018 through the
	// gateway.
	for _, bad := range []string{"a2cb1.forged", imgHandle[:len(imgHandle)-2] + "xx"} {
		ans := ag.ask(smcp.EventGetBlob, map[string]any{"blob_handle": bad})
		if code, reason := errReason(ans); code != float64(smcp.CodeBlobNotAccessible) || reason != "invalid_handle" {
			t.Errorf("forged handle %q through the gateway: %v", bad, ans)
		}
	}

	// A SKILL.md edit reaches the agent as notify:update_skills (one heard
	// earlier, at the join, does not count).
	for len(ag.notes) > 0 {
		<-ag.notes
	}
	write(t, filepath.Join(skillDir, "report", "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\n---\n# Report v2\n"))
	ag.waitNote(smcp.NotifyUpdateSkills)
	if !testwait.Poll(30*time.Second, func() bool {
		ans = ag.ask(smcp.EventGetSkill, map[string]any{"name": "report"})
		return ans["body"] == "# Report v2\n"
	}) {
		t.Fatalf("after the edit: %v", ans)
	}
}

// TestUploadsEndWithTheirAgent: an upload belongs to the agent that opened
// it and ends with it: once the agent leaves the office, the computer
// discards its .part and frees its slot at once, not after the idle
// timeout (120 s).
func TestUploadsEndWithTheirAgent(t *testing.T) {
	landing := t.TempDir()
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	h := newComputer(t, nil, func(o *computer.Options) {
		o.Protocol = computer.Protocol04
		o.LandingRoot = landing
	})
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-04", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Version: "0.4.0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.JoinOffice(ctxT(t), smcp.RoleAgent, "bot", "office-04"); err != nil {
		t.Fatal(err)
	}
	ag := &agent04{t: t, c: c}
	data := make([]byte, 1<<20)
	rand.Read(data)
	req := map[string]any{"chunk_offset": 0, "eof": false, "total_size": len(data), "sha256": sum(data),
		"blob": base64.StdEncoding.EncodeToString(data[:64<<10])}
	var ans map[string]any
	// The computer's join races the agent's: poll until the office routes.
	if !testwait.Poll(30*time.Second, func() bool { ans = ag.ask(smcp.EventPutBlob, req); return ans["upload_id"] != nil }) {
		t.Fatalf("put_blob: %v", ans)
	}
	part := filepath.Join(landing, ans["upload_id"].(string)+".part")
	if _, err := os.Stat(part); err != nil {
		t.Fatal(err)
	}
	if err := c.LeaveOffice(ctxT(t), "office-04"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the agent's upload discarded once it left", func() bool {
		_, err := os.Stat(part)
		return os.IsNotExist(err)
	})
}
