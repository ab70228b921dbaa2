package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// agentRun runs `smcp agent args...` as a child process (the test binary
// playing smcp) with env, and returns its exit status and output.
func agentRun(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := smcpCommand(t, append([]string{"agent"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("smcp agent %v: %v", args, err)
	return 0, "", ""
}

// TestAgentCommand drives `smcp agent` end to end: a gateway and a computer
// hosting the document server (the test binary as `smcp docs` over stdio)
// over examples/docs; the agent's connection settings come from $SMCP_URL,
// $SMCP_OFFICE and $SMCP_API_KEY.
func TestAgentCommand(t *testing.T) {
	root := copyExamples(t)
	gw := startKeyedGateway(t, "k-agent")
	docs, err := config.NewServer("docs", map[string]any{
		"command": os.Args[0],
		"args":    []any{"docs", "--root", root, "--host", demoHost},
		"env":     map[string]any{"SMCP_TEST_MAIN": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	comp, err := computer.New(computer.Options{Name: "pc", Confirm: tools.ConfirmAuto,
		Config: &config.Config{Servers: map[string]*config.Server{"docs": docs}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runCtx, stopComputer := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- comp.Run(runCtx, computer.Gateway{URL: gw.URL, Office: "o", APIKey: "k-agent"}) }()
	defer func() { stopComputer(); <-ran }()

	env := []string{"SMCP_URL=" + gw.URL, "SMCP_OFFICE=o", "SMCP_API_KEY=k-agent", "SMCP_NAME=operator"}
	// The finder, once the documents are indexed: a table, then JSON.
	var out, errOut string
	var code int
	if !testwait.Poll(time.Minute, func() bool {
		code, out, errOut = agentRun(t, env, "finder")
		return code == 0 && strings.Contains(out, "7 of 7 documents")
	}) {
		t.Fatalf("smcp agent finder: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "dpe://"+demoHost+"/") || !strings.Contains(out, "Q3 2026 Operations Report") {
		t.Errorf("finder table:\n%s", out)
	}
	code, out, _ = agentRun(t, env, "finder", "--json", "--limit", "2", "budget")
	var finder smcpv1.GetFinderResponse
	if err := protojson.Unmarshal([]byte(out), &finder); code != 0 || err != nil || finder.GetTotalCount() != 1 || len(finder.GetDocuments()) != 1 {
		t.Fatalf("finder --json budget: exit %d, %v, %q", code, err, out)
	}
	budget := finder.GetDocuments()[0].GetUri()

	// list: the computer, by role and name; --json is the list_room answer.
	code, out, _ = agentRun(t, env, "list")
	if code != 0 || !strings.Contains(out, "computer  pc") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = agentRun(t, env, "--json", "list")
	var room smcpv1.ListRoomResponse
	if err := protojson.Unmarshal([]byte(out), &room); code != 0 || err != nil || len(room.GetSessions()) == 0 {
		t.Errorf("list --json: exit %d, %v, %q", code, err, out)
	}

	code, out, _ = agentRun(t, env, "tools")
	if code != 0 || !strings.Contains(out, "pc (") || !strings.Contains(out, "search_documents") || !strings.Contains(out, "list_documents") {
		t.Errorf("tools: exit %d\n%s", code, out)
	}

	// call: flags after the arguments too; the text content is printed.
	code, out, errOut = agentRun(t, env, "call", "search_documents", `{"query":"revenue"}`, "--computer", "pc")
	if code != 0 || !strings.Contains(strings.ToLower(out), "revenue") {
		t.Errorf("call search_documents: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = agentRun(t, env, "call", "search_documents", `{"query":"revenue"}`, "--json")
	var result smcpv1.CallToolResult
	if err := protojson.Unmarshal([]byte(out), &result); code != 0 || err != nil || len(result.GetContent()) == 0 {
		t.Errorf("call --json: exit %d, %v, %q", code, err, out)
	}
	// A failed tool is exit status 1; bad JSON arguments are a usage error.
	if code, out, errOut = agentRun(t, env, "call", "no_such_tool"); code != exitFailure || !strings.Contains(errOut, "failed") {
		t.Errorf("unknown tool: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut = agentRun(t, env, "call", "search_documents", "{query"); code != exitUsage || !strings.Contains(errOut, "JSON object") {
		t.Errorf("bad JSON: exit %d\n%s", code, errOut)
	}

	code, out, _ = agentRun(t, env, "read", budget)
	if code != 0 || !strings.Contains(out, "budget") {
		t.Errorf("read %s: exit %d\n%s", budget, code, out)
	}
	code, out, _ = agentRun(t, env, "desktop")
	if code != 0 || !strings.Contains(out, "window://"+demoHost+"/status") {
		t.Errorf("desktop: exit %d\n%s", code, out)
	}

	// Wrong office for this key's computer: a clear failure, exit 1.
	if code, _, errOut = agentRun(t, env, "--office", "empty", "desktop"); code != exitFailure || !strings.Contains(errOut, `no computer in office "empty"`) {
		t.Errorf("empty office: exit %d, %s", code, errOut)
	}
	// A wrong key: exit 1 with the gateway's reason.
	if code, _, errOut = agentRun(t, env, "--api-key", "wrong", "list"); code != exitFailure || !strings.Contains(errOut, "unauthenticated") {
		t.Errorf("wrong key: exit %d, %s", code, errOut)
	}

	// watch: a computer entering the office is printed. The watch is
	// started first; computers come and go until it has seen one.
	cmd := smcpCommand(t, "agent", "watch", "--count", "1", "--json")
	cmd.Env = append(cmd.Env, env...)
	var watchOut bytes.Buffer
	cmd.Stdout = &watchOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watched := make(chan error, 1)
	go func() { watched <- cmd.Wait() }()
	for {
		c, err := sioclient.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: "k-agent", NoReconnect: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.JoinOffice(ctx, smcp.RoleComputer, "pc2", "o"); err != nil {
			t.Fatal(err)
		}
		c.Close()
		select {
		case err := <-watched:
			if err != nil {
				t.Fatalf("watch: %v\n%s", err, watchOut.String())
			}
			var n smcpv1.WatchOfficeResponse
			line, _, _ := strings.Cut(watchOut.String(), "\n")
			if err := protojson.Unmarshal([]byte(line), &n); err != nil || n.GetEvent() == "" {
				t.Fatalf("watch --json line %q: %v", line, err)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			t.Fatal("watch saw nothing")
		}
	}
}

// A `smcp agent` command line without its essentials is exit status 2.
func TestAgentCommandUsage(t *testing.T) {
	t.Setenv("SMCP_OFFICE", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent"}, "a subcommand is required"},
		{[]string{"agent", "list"}, "--office is required"},
		{[]string{"agent", "--office", "o", "fly"}, `unknown subcommand "fly"`},
		{[]string{"agent", "--office", "o", "read"}, "read takes one URI"},
		{[]string{"agent", "--office", "o", "call"}, "call takes TOOL"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("smcp %v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
