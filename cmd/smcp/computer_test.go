package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestComputerCommand runs `smcp computer` against a real gateway with an
// mcpServers-shaped config, calls a tool through it, then stops it as
// SIGTERM would (ctx cancelled): it returns nil and its MCP server process
// is gone.
func TestComputerCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "testmcp")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/smcpgw/smcp-gateway/internal/testmcp/cmd/testmcp").CombinedOutput(); err != nil {
		t.Fatalf("build testmcp: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"fix": {"command": "`+bin+`", "args": ["-name", "${input:label}"]}},
		"inputs": [{"type": "promptString", "id": "label", "description": "server label"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("A2C_SMCP_LABEL", "from-env")
	t.Setenv("SMCP_API_KEY", "k-1")

	gw := startKeyedGateway(t, "k-1")

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- runComputer(ctx, []string{"--config", cfg, "--gateway", gw.URL, "--office", "o", "--name", "pc", "--confirm", "auto", "--log-level", "warn", "--protocol", "0.2"})
	}()

	ag, err := agent.Dial(context.Background(), sioclient.Options{URL: gw.URL, APIKey: "k-1", Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	if err := ag.Join(context.Background(), "o"); err != nil {
		t.Fatal(err)
	}
	args, _ := structpb.NewStruct(map[string]any{"text": "hi"})
	var res *smcpv1.CallToolResult
	if !testwait.Poll(20*time.Second, func() bool {
		res, err = ag.CallTool(context.Background(), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Params: args, Timeout: 10})
		return err == nil && !res.GetIsError()
	}) {
		t.Fatalf("echo through smcp computer: %v %v", res, err)
	}
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "from-env: hi" {
		t.Fatalf("echo = %q (the ${input:label} placeholder comes from A2C_SMCP_LABEL)", got)
	}
	// SIGHUP reloads the file: a second server appears with an alias.
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"fix": {"command": "`+bin+`", "args": ["-name", "${input:label}"]},
		"two": {"command": "`+bin+`", "args": ["-name", "two"], "tool_meta": {"echo": {"alias": "echo2"}},
		        "forbidden_tools": ["add", "slow", "pid"]}},
		"inputs": [{"type": "promptString", "id": "label", "description": "server label"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if !testwait.Poll(20*time.Second, func() bool {
		res, err = ag.CallTool(context.Background(), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo2", Params: args, Timeout: 10})
		return err == nil && !res.GetIsError()
	}) {
		t.Fatalf("echo2 after SIGHUP: %v %v", res, err)
	}
	pidRes, err := ag.CallTool(context.Background(), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "pid", Timeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(pidRes.GetContent()[0].GetFields()["text"].GetStringValue())
	if err != nil {
		t.Fatal(err)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("smcp computer returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("smcp computer did not stop")
	}
	// The child has been waited for: the pid no longer exists.
	if err := syscall.Kill(pid, 0); err == nil || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("MCP server process %d still there: %v", pid, err)
	}
}

func TestComputerCommandFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--config", "x.json"},
		{"--config", "/nonexistent.json", "--office", "o"},
		{"--config", "x", "--office", "o", "extra"},
	} {
		if err := runComputer(context.Background(), args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestComputerCommandRefusedKey(t *testing.T) {
	gw := startKeyedGateway(t, "right")
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := runComputer(ctx, []string{"--config", cfg, "--gateway", gw.URL, "--office", "o", "--api-key", "wrong", "--log-level", "error", "--protocol", "0.2"})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong key: %v", err)
	}
}

// A computer whose protocol the gateway does not serve stops at once with
// one line naming what the gateway supports and the flag to use (exit
// status 1), without retrying. The gateway is the real one, serving 0.2
// only; the computer's default is 0.4.
func TestComputerCommandVersionRefused(t *testing.T) {
	keys, err := core.NewKeyRing(core.Key{ID: "test", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: keys, SIO: sio.Config{Protocols: []smcp.Version{smcp.V02}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	var stdout, stderr strings.Builder
	code := run(ctx, []string{"computer", "--config", cfg, "--gateway", gw.URL, "--office", "o", "--api-key", "k", "--log-level", "warn"}, &stdout, &stderr)
	if code != exitFailure {
		t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr.String())
	}
	out := strings.TrimSpace(stderr.String())
	if strings.Count(out, "\n") != 0 || !strings.Contains(out, "refused protocol 0.4") || !strings.Contains(out, "a2c_version 0.4.0") ||
		!strings.Contains(out, "supports 0.2") || !strings.Contains(out, "--protocol 0.2") {
		t.Errorf("stderr is not the one advice line:\n%s", out)
	}
	t.Log(out)
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %v: the refusal was retried", took)
	}
	if err := runComputer(context.Background(), []string{"--config", cfg, "--office", "o", "--protocol", "0.6"}); err == nil || !strings.Contains(err.Error(), "--protocol") {
		t.Errorf("--protocol 0.5: %v", err)
	}
	t.Setenv("SMCP_PROTOCOL", "0.9")
	if err := runComputer(context.Background(), []string{"--config", cfg, "--office", "o"}); err == nil || !strings.Contains(err.Error(), "0.9") {
		t.Errorf("$SMCP_PROTOCOL=0.9: %v", err)
	}
}

// A computer whose office already speaks another protocol version (a 0.3
// agent is in it; the computer speaks 0.4) keeps trying, one warning with
// the gateway's reason per refusal, and joins once the office is free; it
// used to exit with status 1. Stopping it meanwhile returns nil.
func TestComputerRetriesOfficeOfAnotherVersion(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, SIO: sio.Config{Protocols: []smcp.Version{smcp.V03, smcp.V04}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	ag, err := agent.Dial(context.Background(), sioclient.Options{URL: gw.URL, Version: smcp.V03.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	if err := ag.Join(context.Background(), "o"); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The test binary plays smcp (TestMain): its logs are its stderr.
	cmd := exec.Command(os.Args[0], "computer", "--config", cfg, "--gateway", gw.URL, "--office", "o", "--name", "pc", "--protocol", "0.4")
	cmd.Env = withoutEnv(os.Environ(), "SMCP_API_KEY")
	var stderr testwait.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	exited := func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
			return false
		}
	}
	testwait.Within(t, 30*time.Second, "two refusals logged", func() bool {
		return exited() || strings.Count(stderr.String(), "joining the office was refused, retrying") >= 2
	})
	if exited() {
		t.Fatalf("smcp computer exited while the office spoke another version:\n%s", stderr.String())
	}
	if out := stderr.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "office o speaks 0.3") {
		t.Errorf("the refusal lines do not carry the gateway's reason:\n%s", out)
	}
	if err := ag.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 60*time.Second, "the computer joined", func() bool { return strings.Contains(stderr.String(), "joined office") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("smcp computer did not stop")
	}
}

// Against a server built like the Python SDK's (python-socketio, the key in
// auth.token, a refusal raised as ConnectionRefusedError), a wrong key
// makes `smcp computer` exit 1 at once with the server's refusal in one
// line, word for word.
func TestComputerCommandRefusedBySDKServer(t *testing.T) {
	const python = "/usr/bin/python3" // Debian's python3-socketio is installed for it
	if out, err := exec.Command(python, "-c", "import socketio, aiohttp").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s cannot import socketio, aiohttp (apt-get install python3-socketio python3-aiohttp): %v %s", python, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	srv := exec.Command(python, "../../sioclient/testdata/pysio_server.py", "aiohttp", "--sdk-auth")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	var first struct{ Listening int }
	if err := json.NewDecoder(stdout).Decode(&first); err != nil || first.Listening == 0 {
		t.Fatalf("python server: %v %v", first, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	cfg := filepath.Join(t.TempDir(), "mcp.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "computer", "--config", cfg, "--gateway", fmt.Sprintf("http://127.0.0.1:%d", first.Listening),
		"--office", "o", "--log-level", "error")
	cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_API_KEY=wrong-key")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
		t.Fatalf("exit: %v; want status 1\n%s", err, stderr.String())
	}
	out := strings.TrimSpace(stderr.String())
	if strings.Count(out, "\n") != 0 || !strings.Contains(out, "the server refused the connection: Invalid connection request") {
		t.Errorf("stderr is not the one refusal line:\n%s", out)
	}
}

// startKeyedGateway serves a gateway accepting only key until the test ends.
func startKeyedGateway(t *testing.T, key string) *gateway.Running {
	t.Helper()
	keys, err := core.NewKeyRing(core.Key{ID: "test", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: keys}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	return gw
}

// --skills is repeatable and $SMCP_SKILLS lists several folders.
func TestComputerSkillsFlag(t *testing.T) {
	fs := newFlags("computer", "")
	var dirs pathList
	fs.Var(&dirs, "skills", "")
	if err := fs.parse([]string{"--skills", "/a", "--skills", "/b" + string(os.PathListSeparator) + "/c"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(dirs, ",") != "/a,/b,/c" {
		t.Fatalf("flags: %q", dirs)
	}
	t.Setenv("SMCP_SKILLS", "/x"+string(os.PathListSeparator)+"/y")
	fs = newFlags("computer", "")
	dirs = nil
	fs.Var(&dirs, "skills", "")
	if err := fs.parse(nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(dirs, ",") != "/x,/y" {
		t.Fatalf("env: %q", dirs)
	}
}

// TestGatewayURLs: --gateway is repeatable, takes comma lists (as
// $SMCP_GATEWAY does), replaces its default, drops repeats and refuses what
// is not an http(s) URL.
func TestGatewayURLs(t *testing.T) {
	parse := func(env string, args ...string) ([]string, error) {
		t.Setenv("SMCP_GATEWAY", env)
		fs := newFlags("computer", "")
		u := urlList{urls: []string{"http://127.0.0.1:8080"}}
		fs.Var(&u, "gateway", "")
		err := fs.parse(args)
		return u.urls, err
	}
	for _, tc := range []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, "http://127.0.0.1:8080"},
		{"", []string{"--gateway", "http://a:1"}, "http://a:1"},
		{"", []string{"--gateway", "http://a:1", "--gateway", "http://b:2, https://c:3"}, "http://a:1,http://b:2,https://c:3"},
		{"", []string{"--gateway", "http://a:1,http://a:1"}, "http://a:1"},
		{"http://a:1,http://b:2", nil, "http://a:1,http://b:2"},
		{"http://env:1", []string{"--gateway", "http://flag:1"}, "http://flag:1"},
	} {
		got, err := parse(tc.env, tc.args...)
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("env %q args %q: %v %v, want %s", tc.env, tc.args, got, err, tc.want)
		}
	}
	for _, bad := range []string{"127.0.0.1:8080", "ftp://a", ",", "http://"} {
		if _, err := parse("", "--gateway", bad); err == nil {
			t.Errorf("--gateway %q accepted", bad)
		}
	}
}
