package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// bufCurl runs `buf curl` (tools/buf, at the version tools/bufnpm pins) with reflection, no schema
// files, and returns its stdout; a failure returns stderr as the error text.
func bufCurl(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tools/buf", append([]string{"curl"}, args...)...)
	cmd.Dir = repoRoot(t)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestBufCurl runs the tour's buf curl commands (README.md, docs/TOUR.md) against a live gateway.
func TestBufCurl(t *testing.T) {
	g := startGateway(t)
	startComputer(t, g, "pc-1", officeA)
	startBlobComputer(t, g, "pc-04", officeB, "0.4.0")
	key := "x-api-key: " + keyAgent

	decode := func(t *testing.T, out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("buf curl output is not JSON: %v\n%s", err, out)
		}
		return m
	}
	run := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		out, stderr, err := bufCurl(t, args...)
		if err != nil {
			t.Fatalf("buf curl %v: %v\n%s", args, err, stderr)
		}
		return decode(t, out)
	}

	t.Run("GetFinder over gRPC", func(t *testing.T) {
		m := run(t, "--protocol", "grpc", "--http2-prior-knowledge", "-H", key,
			"-d", `{"office_id":"office-a","computer":"pc-1","keywords":["report"],"limit":5}`,
			g.URL+"/smcp.v1.AgentService/GetFinder")
		docs, _ := m["documents"].([]any)
		if m["total_count"] != float64(1) || len(docs) != 1 || docs[0].(map[string]any)["doc_ref"] != "rpt-2026" {
			t.Fatalf("GetFinder: %v", m)
		}
	})
	t.Run("ReadResource over Connect, reflection v1alpha", func(t *testing.T) {
		m := run(t, "--protocol", "connect", "--http2-prior-knowledge", "--reflect-protocol", "grpc-v1alpha", "-H", key,
			"-d", `{"office_id":"office-a","computer":"pc-1","uri":"dpe://docs/rpt-2026?format=markdown"}`,
			g.URL+"/smcp.v1.AgentService/ReadResource")
		contents, _ := m["contents"].([]any)
		if len(contents) != 1 || contents[0].(map[string]any)["text"] != "# Annual report 2026\n\nRevenue grew." {
			t.Fatalf("ReadResource: %v", m)
		}
	})
	t.Run("CallTool over gRPC-Web with a bearer key", func(t *testing.T) {
		m := run(t, "--protocol", "grpcweb", "--http2-prior-knowledge", "-H", "authorization: Bearer "+keyAgent,
			"-d", `{"office_id":"office-a","computer":"pc-1","tool_name":"echo","params":{"text":"hi"},"timeout":30}`,
			g.URL+"/smcp.v1.AgentService/CallTool")
		res, _ := m["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != "echo: hi" || m["req_id"] == "" {
			t.Fatalf("CallTool: %v", m)
		}
	})
	t.Run("key from a headers file (docs/OPERATIONS.md: -H @<(echo ...))", func(t *testing.T) {
		headers := filepath.Join(t.TempDir(), "headers")
		if err := os.WriteFile(headers, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m := run(t, "--protocol", "grpc", "--http2-prior-knowledge", "-H", "@"+headers,
			"-d", `{"office_id":"office-a","computer":"pc-1"}`, g.URL+"/smcp.v1.AgentService/GetFinder")
		if m["total_count"] == nil {
			t.Fatalf("GetFinder: %v", m)
		}
	})
	t.Run("GetSkills of a 0.4 office over gRPC", func(t *testing.T) {
		m := run(t, "--protocol", "grpc", "--http2-prior-knowledge", "-H", key,
			"-d", `{"office_id":"office-b","computer":"pc-04"}`,
			g.URL+"/smcp.v1.AgentService/GetSkills")
		skills, _ := m["skills"].([]any)
		if len(skills) != 2 || skills[1].(map[string]any)["name"] != "mcp:docs:search" {
			t.Fatalf("GetSkills: %v", m)
		}
	})
	t.Run("reflection lists the 0.3/0.4 calls", func(t *testing.T) {
		out, stderr, err := bufCurl(t, "--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", g.URL)
		if err != nil {
			t.Fatalf("buf curl --list-methods: %v\n%s", err, stderr)
		}
		for _, m := range []string{"GetResources", "GetSkills", "GetSkill", "ReadBlob", "PutBlob"} {
			if !strings.Contains(out, "smcp.v1.AgentService/"+m+"\n") {
				t.Fatalf("reflection does not list %s:\n%s", m, out)
			}
		}
	})
	t.Run("health", func(t *testing.T) {
		m := run(t, "--protocol", "grpc", "--http2-prior-knowledge",
			g.URL+"/grpc.health.v1.Health/Check")
		if m["status"] != "SERVING" {
			t.Fatalf("health: %v", m)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		_, stderr, err := bufCurl(t, "--protocol", "grpc", "--http2-prior-knowledge", "-H", "x-api-key: nope",
			"-d", `{"office_id":"office-a"}`, g.URL+"/smcp.v1.AgentService/ListRoom")
		if err == nil {
			t.Fatal("buf curl with a wrong key succeeded")
		}
		m := decode(t, stderr)
		details, _ := m["details"].([]any)
		if m["code"] != "unauthenticated" || len(details) != 1 || details[0].(map[string]any)["type"] != "smcp.v1.Error" {
			t.Fatalf("error output: %s", stderr)
		}
		// buf curl prints the detail undecoded: base64 of the binary message.
		value, _ := details[0].(map[string]any)["value"].(string)
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(value, "="))
		detail := &smcpv1.Error{}
		if err != nil || proto.Unmarshal(raw, detail) != nil || detail.GetCode() != smcp.CodeUnauthenticated {
			t.Fatalf("error detail %q: %v, %v", value, detail, err)
		}
	})
}

// nodeProject returns test/connect-node with its node_modules installed
// from the committed lockfile.
func nodeProject(t *testing.T) string {
	t.Helper()
	return nodetest.Require(t, filepath.Join(repoRoot(t), "test", "connect-node"))
}

// TestNodeClientGenerated: test/connect-node/gen is what protoc-gen-es makes
// from proto/ now (it is committed, like gen/).
func TestNodeClientGenerated(t *testing.T) {
	dir := nodeProject(t)
	out := t.TempDir()
	template := `{"version":"v2","plugins":[{"local":"test/connect-node/node_modules/.bin/protoc-gen-es","out":"` + out + `","opt":"target=ts"}]}`
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tools/buf", "generate", "--template", template)
	cmd.Dir = repoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buf generate: %v\n%s", err, b)
	}
	files, err := filepath.Glob(filepath.Join(out, "smcp", "v1", "*.ts"))
	if err != nil || len(files) == 0 {
		t.Fatalf("nothing generated: %v", err)
	}
	committed, _ := filepath.Glob(filepath.Join(dir, "gen", "smcp", "v1", "*.ts"))
	if len(committed) != len(files) {
		t.Fatalf("gen has %d files, buf generates %d: run the generate script in test/connect-node", len(committed), len(files))
	}
	for _, f := range files {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(dir, "gen", "smcp", "v1", filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("test/connect-node/gen/smcp/v1/%s is stale: run `npm run generate` in test/connect-node", filepath.Base(f))
		}
	}
}

// TestNodeClient runs test/connect-node/client.ts (a client generated by
// protoc-gen-es, on connect-node) against a live gateway and computer.
func TestNodeClient(t *testing.T) {
	dir := nodeProject(t)
	g := startGateway(t)
	comp := startComputer(t, g, "pc-node", officeA)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "tsx"), "client.ts")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SMCP_URL="+g.URL, "SMCP_KEY="+keyAgent, "SMCP_OFFICE="+officeA,
		"SMCP_COMPUTER=pc-node", "SMCP_FORBIDDEN_OFFICE=office-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "WATCHING" {
			if err := comp.c.Emit(smcp.EventUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: "pc-node"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node client: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	if len(lines) == 0 || lines[len(lines)-1] != "OK" {
		t.Fatalf("node client did not finish: %q\n%s", lines, stderr.String())
	}
	comp.waitFor(t, "the node client's tool call", func() bool {
		for _, r := range comp.requests {
			if r.event == smcp.EventToolCall {
				return true
			}
		}
		return false
	})
}
