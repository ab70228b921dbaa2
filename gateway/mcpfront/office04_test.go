package mcpfront_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// A real 0.4 computer (bundle ids, skills, blob handles) in office A: its
// MCP server "fx" has the fixture's tools and "picture", whose 100 KB image
// is over the computer's inline budget, so the computer sends it as a blob
// handle; its skill folder has one skill with a binary file.
func startComputer04(t *testing.T, g *gateway.Running) (picture []byte, data []byte) {
	t.Helper()
	fx := testmcp.New("fx", testmcp.Options{})
	picture = make([]byte, 100<<10)
	for i := range picture {
		picture[i] = byte(i * 7)
	}
	mcp.AddTool(fx.Server, &mcp.Tool{Name: "picture", Description: "A picture."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: picture, MIMEType: "image/png"}}}, nil, nil
		})
	srv := httptest.NewServer(fx.HTTPHandler())
	t.Cleanup(srv.Close)
	skills := t.TempDir()
	testfiles.Write(t, filepath.Join(skills, "demo-skill", "SKILL.md"), "---\nname: demo-skill\ndescription: A skill for the test.\n---\n\n# Demo\n\nDo the thing.\n")
	data = make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 13)
	}
	testfiles.Write(t, filepath.Join(skills, "demo-skill", "data.bin"), string(data))
	s, err := config.NewServer("fx", map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	joinComputer04(t, g, "pc4", map[string]*config.Server{"fx": s}, skills)
	return picture, data
}

// runNodeScript runs the Node script in dir against the MCP endpoint url
// with key, and returns what it printed; a failure fails t with its output.
// Only what node needs reaches the child: no secret of this process beyond
// the test key.
func runNodeScript(t *testing.T, dir, script, url, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "MCP_URL=" + url, "MCP_KEY=" + key}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return out
}

// joinComputer04 starts a 0.4 computer named name with servers and a skills
// folder, and joins it to office A with keyA; it is closed when t ends.
func joinComputer04(t *testing.T, g *gateway.Running, name string, servers map[string]*config.Server, skills string) {
	t.Helper()
	pc, err := computer.New(computer.Options{Name: name, Config: &config.Config{Servers: servers},
		Confirm: tools.ConfirmAuto, Logger: quiet, KeepAlive: -1, Protocol: computer.Protocol04, SkillDirs: []string{skills}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	ctx := ctxT(t)
	if err := pc.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	link, err := pc.Connect(ctx, computer.Gateway{URL: g.URL, Office: "A", APIKey: keyA, Dial: sioclient.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
}

// The official TypeScript SDK client in a 0.4 office: it lists and calls
// the computer's tools by their exposed names, gets the image the computer
// sent as a blob handle as real bytes (the gateway drained it), and reads a
// skill, and a binary file of it, as resources.
func TestTypeScriptSDKClient04(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	g := startGateway(t, gateway.Config{})
	picture, data := startComputer04(t, g)
	out := runNodeScript(t, dir, "client04.mjs", endpoint(g, "A"), keyA)
	var got struct {
		Tools []string `json:"tools"`
		Echo  string   `json:"echo"`
		Image struct {
			MIMEType string `json:"mimeType"`
			Size     int    `json:"size"`
			SHA256   string `json:"sha256"`
		} `json:"image"`
		Skill struct {
			URI, Name, Text string
		} `json:"skill"`
		Data struct {
			Size   int    `json:"size"`
			SHA256 string `json:"sha256"`
		} `json:"data"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil {
		t.Fatalf("node printed %s", out)
	}
	for _, want := range []string{"pc4__fx__echo", "pc4__fx__picture"} {
		if !slices.Contains(got.Tools, want) {
			t.Errorf("tools %v, lacking %s", got.Tools, want)
		}
	}
	if got.Echo != "fx: from node" {
		t.Errorf("echo answered %q", got.Echo)
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	if got.Image.MIMEType != "image/png" || got.Image.Size != len(picture) || got.Image.SHA256 != sum(picture) {
		t.Errorf("image %+v, want %d bytes with sha256 %s", got.Image, len(picture), sum(picture))
	}
	if got.Skill.URI != "skill://pc4/demo-skill" || got.Skill.Name != "demo-skill" || !strings.Contains(got.Skill.Text, "Do the thing.") ||
		strings.Contains(got.Skill.Text, "description:") {
		t.Errorf("skill %+v", got.Skill)
	}
	if got.Data.Size != len(data) || got.Data.SHA256 != sum(data) {
		t.Errorf("skill file %+v, want %d bytes with sha256 %s", got.Data, len(data), sum(data))
	}
}
