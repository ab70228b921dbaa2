package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// `smcp computer --protocol 0.5` and `smcp agent --protocol 0.5` in an
// office of a gateway that serves the 0.5 draft alone: the computer joins
// (0.5's empty ack), the agent lists its skill and reads it; the agent's
// default 0.4 is refused there with 4008.
func TestComputerAndAgentCommands05(t *testing.T) {
	url := startOpenGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V05}}})
	dir, skills := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(skills, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "demo", "SKILL.md"),
		[]byte("---\nname: demo\ndescription: A 0.5 skill\n---\n# Demo body\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runComputer(ctx, []string{"--config", cfg, "--gateway", url, "--office", "o", "--name", "pc",
			"--skills", skills, "--log-level", "warn", "--protocol", "0.5"})
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("smcp computer: %v", err)
		}
	}()

	env := []string{"SMCP_URL=" + url, "SMCP_OFFICE=o", "SMCP_NAME=operator"}
	var code int
	var out, errOut string
	if !testwait.Poll(time.Minute, func() bool {
		code, out, errOut = agentRunWithin(t, time.Minute, env, "--protocol", "0.5", "skills")
		return code == 0 && strings.Contains(out, "demo")
	}) {
		t.Fatalf("skills in 0.5: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut = agentRunWithin(t, time.Minute, env, "--protocol", "0.5", "skill", "demo"); code != 0 || out != "# Demo body\n" {
		t.Errorf("skill demo in 0.5: exit %d, %q, %s", code, out, errOut)
	}
	if code, _, errOut = agentRunWithin(t, time.Minute, env, "skills"); code != exitFailure || !strings.Contains(errOut, "4008") ||
		!strings.Contains(errOut, "supports 0.5") {
		t.Errorf("skills in 0.4 on a 0.5 gateway: exit %d, %q", code, errOut)
	}
}
