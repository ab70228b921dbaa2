package mcpfront_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
)

// nodeDir holds the official MCP clients from npm (package-lock.json
// committed; nodetest installs them with npm ci).
const nodeDir = "testdata/node"

// The official TypeScript SDK client lists the office's tools, calls one
// on each of two computers, cancels a slow call (the MCP server under the
// computer sees it), reads a dpe:// page and a window, and hears
// tools/list_changed when a computer joins.
func TestTypeScriptSDKClient(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	o := newOffice(t, gateway.Config{})
	runTypeScriptClient(t, dir, endpoint(o.g, "A"), o.pc2, func() {
		startComputer(t, o.g, keyA, "A", "pc3", map[string]string{"fx": newFixture(t, "pc3").url})
	})
}

// A quota's refusal reaches the official TypeScript SDK client as an
// error of the call (its StreamableHTTPError: the HTTP 429, and the
// JSON-RPC error's text, which names the bound and the wait); the session
// goes on.
func TestTypeScriptSDKClientQuotaRefusal(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	o := newOffice(t, gateway.Config{Quotas: &quota.Table{Default: &quota.Limits{Bound: quota.Bound{CallsPerSecond: 0.1, Burst: 1}}}})
	out := runNodeScript(t, dir, "quota.mjs", endpoint(o.g, "A"), keyA)
	t.Logf("TypeScript SDK: %s", out)
	var got struct {
		First   string
		Refusal *struct {
			Name    string
			Code    int
			Message string
		}
		Tools int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	if got.First != "pc1: one" || got.Tools == 0 {
		t.Fatalf("first call %q, then %d tools listed", got.First, got.Tools)
	}
	if r := got.Refusal; r == nil || r.Code != http.StatusTooManyRequests ||
		!strings.Contains(r.Message, "quota: this key may make 0.1 calls per second (burst 1); retry after") {
		t.Fatalf("the second call: %+v", got.Refusal)
	}
}

// runTypeScriptClient runs client.mjs against the office A endpoint at url,
// whose computers are pc1 (with documents) and pc2 (fixture pc2); join makes
// a computer pc3 join the office.
func runTypeScriptClient(t *testing.T, dir, url string, pc2 *fixture, join func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	// Only what node needs: no secret of this process reaches the child
	// beyond the test key it is given.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"MCP_URL=" + url, "MCP_KEY=" + keyA}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		if err := cmd.Wait(); err != nil && !t.Failed() {
			t.Errorf("node: %v\n%s", err, stderr.String())
		}
	}()
	lines := bufio.NewScanner(stdout)
	step := func(want string) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				continue // a library's own output
			}
			if m["step"] != want {
				t.Fatalf("node step %v, want %s\nstderr: %s", m["step"], want, stderr.String())
			}
			return m
		}
		_ = cmd.Process.Kill()
		t.Fatalf("node ended before step %s: %v\nstderr: %s", want, lines.Err(), stderr.String())
		return nil
	}
	names := func(m map[string]any) []string {
		var out []string
		for _, n := range m["names"].([]any) {
			out = append(out, n.(string))
		}
		return out
	}

	tools := names(step("tools"))
	for _, want := range []string{"pc1__echo", "pc2__echo", "pc1__search_documents"} {
		if !slices.Contains(tools, want) {
			t.Errorf("TypeScript client lists %v, lacking %s", tools, want)
		}
	}
	if got := fmt.Sprint(step("call")["texts"]); got != "[pc1: from node pc2: from node]" {
		t.Errorf("calls answered %s", got)
	}
	step("slow-sent")
	if tag := recv(t, pc2.started, "the TypeScript client's slow call"); tag != "node" {
		t.Fatalf("started %q", tag)
	}
	if _, err := io.WriteString(stdin, "abort\n"); err != nil {
		t.Fatal(err)
	}
	if tag := recv(t, pc2.cancelled, "the computer's MCP server to see the TypeScript client's cancellation"); tag != "node" {
		t.Errorf("cancelled %q", tag)
	}
	if e := step("cancelled")["error"].(string); !strings.Contains(e, "gave up") && !strings.Contains(e, "Abort") {
		t.Errorf("the aborted call ended with %q", e)
	}
	read := step("read")
	if !strings.Contains(read["page"].(string), "None known.") || read["window"] != "status of pc1" {
		t.Errorf("reads: %v", read)
	}
	step("ready-for-join")
	join()
	if joined := names(step("joined")); !slices.Contains(joined, "pc3__echo") {
		t.Errorf("after pc3 joined the TypeScript client lists %v", joined)
	}
	step("done")
}

// The MCP Inspector's CLI mode lists the office's tools.
func TestInspectorCLI(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	o := newOffice(t, gateway.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitFor)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("node_modules", ".bin", "mcp-inspector"),
		"--cli", endpoint(o.g, "A"), "--transport", "http", "--method", "tools/list",
		"--header", "Authorization: Bearer "+keyA)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("inspector: %v\n%s\n%s", err, out, stderr)
	}
	// The CLI may print a notice before the JSON answer.
	start := strings.Index(string(out), "{")
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if start < 0 || json.Unmarshal(out[start:], &res) != nil {
		t.Fatalf("inspector printed %s", out)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
	}
	for _, want := range []string{"pc1__echo", "pc2__slow", "pc1__list_documents"} {
		if !slices.Contains(got, want) {
			t.Errorf("inspector lists %v, lacking %s", got, want)
		}
	}
}
