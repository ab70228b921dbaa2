package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// startDemo runs `smcp demo` as a child process (this test binary playing
// smcp) on a free port over a copy of the example documents, waits for its
// banner, and returns the gateway's base URL. The demo is interrupted and
// awaited when the test ends.
func startDemo(t *testing.T) string {
	t.Helper()
	args, err := json.Marshal([]string{"demo", "--listen", "127.0.0.1:0", "--root", copyExamples(t), "--log-level", "warn"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_TEST_MAIN=1", "SMCP_TEST_ARGS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	banner := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if sc.Text() == "Ctrl-C stops the demo." {
				banner <- b.String()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var text string
	select {
	case text = <-banner:
	case err := <-exited:
		t.Fatalf("smcp demo exited before its banner: %v\n%s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no banner from smcp demo\n%s", stderr.String())
	}
	m := regexp.MustCompile(`(?m)^  gateway   (http://\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no gateway URL in the banner:\n%s", text)
	}
	return m[1]
}

// What both example agents print against the demo: the office, the
// computer's tools (0.4 exposed names), and docs__search_documents' answer.
var exampleAgentOutput = []string{
	"offices: demo\n",
	"tools of demo-pc in demo: docs__list_documents, docs__search_documents\n",
	`docs__search_documents {"query":`,
	`hits for "revenue"`,
	"dpe://com.example.docs/",
}

// The TypeScript (Connect-ES) and Python (gRPC) agents of examples/ run
// against the demo as their READMEs say, with the default API key; each must
// list the office, the tools and a search's hits, and exit 0. With a wrong
// key each must fail, exit 1, naming the refusal.
func TestExampleAgents(t *testing.T) {
	base := startDemo(t)
	root := filepath.Join("..", "..")

	t.Run("ts-agent", func(t *testing.T) {
		dir := nodetest.Require(t, filepath.Join(root, "examples", "ts-agent"))
		run := func(key string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, "node_modules", ".bin", "tsx"), "agent.ts")
			cmd.Dir = dir
			cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_URL="+base)
			if key != "" {
				cmd.Env = append(cmd.Env, "SMCP_API_KEY="+key)
			}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := run("")
		checkAgentOutput(t, out, err)
		out, err = run("not-the-key")
		if err == nil || !strings.Contains(out, "Connect error: Unauthenticated") {
			t.Errorf("with a wrong key: %v\n%s", err, out)
		}
	})

	t.Run("python-agent", func(t *testing.T) {
		python := testdeps.Python(t, "grpc, google.protobuf", "python3-grpcio python3-protobuf")
		addr := strings.TrimPrefix(base, "http://")
		run := func(key string) (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, filepath.Join(root, "examples", "python-agent", "agent.py"))
			cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_ADDR="+addr)
			if key != "" {
				cmd.Env = append(cmd.Env, "SMCP_API_KEY="+key)
			}
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := run("")
		checkAgentOutput(t, out, err)
		out, err = run("not-the-key")
		if err == nil || !strings.Contains(out, "gRPC error: UNAUTHENTICATED") {
			t.Errorf("with a wrong key: %v\n%s", err, out)
		}
	})
}

func checkAgentOutput(t *testing.T, out string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("agent failed: %v\n%s", err, out)
	}
	for _, want := range exampleAgentOutput {
		if !strings.Contains(out, want) {
			t.Errorf("agent output lacks %q:\n%s", want, out)
		}
	}
}

// examples/ts-agent/gen is what protoc-gen-es makes from proto/ now (it is
// committed, like gen/; `npm run generate` there remakes it).
func TestTSAgentGenerated(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := nodetest.Require(t, filepath.Join(root, "examples", "ts-agent"))
	out := t.TempDir()
	template := `{"version":"v2","plugins":[{"local":"examples/ts-agent/node_modules/.bin/protoc-gen-es","out":"` + out + `","opt":"target=ts","include_imports":true}]}`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "tools", "buf"), "generate", "--template", template)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("buf generate: %v\n%s", err, b)
	}
	var made []string
	err = filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, path)
		made = append(made, rel)
		if err != nil {
			return err
		}
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if got, err := os.ReadFile(filepath.Join(dir, "gen", rel)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("examples/ts-agent/gen/%s is stale: run `npm run generate` in examples/ts-agent", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var committed []string
	_ = filepath.WalkDir(filepath.Join(dir, "gen"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Join(dir, "gen"), path)
			committed = append(committed, rel)
		}
		return nil
	})
	if len(made) == 0 || len(committed) != len(made) {
		t.Errorf("buf generates %v, examples/ts-agent/gen holds %v", made, committed)
	}
}
