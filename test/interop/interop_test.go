// Package interop runs the reference Node socket.io-client against a gateway
// started in-process.
package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Node interop test cannot run here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join("node_modules", "socket.io-client")); err != nil {
		out, err := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}

	ring, err := core.NewKeyRing(
		core.Key{Key: "agent-secret", ID: "node-agent", Roles: []string{smcp.RoleAgent}, Offices: []string{"interop"}},
		core.Key{Key: "computer-secret", ID: "computers", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Start(gateway.Config{Auth: ring}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop() }()

	// A Go computer in the same office, so that the Node agent also talks to it.
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "computer-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Handle(smcp.EventToolCall, func(_ context.Context, payload json.RawMessage) (any, error) {
		var req struct {
			ReqID string `json:"req_id"`
		}
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "bad payload")
		}
		return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"go-pc:%s"}],"isError":false}`, req.ReqID)), nil
	})
	if err := pc.JoinOffice(ctx, smcp.RoleComputer, "go-pc", "interop"); err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=spec", "smcp.test.mjs")
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"SMCP_URL="+g.URL, "SMCP_OFFICE=interop",
		"SMCP_AGENT_KEY=agent-secret", "SMCP_COMPUTER_KEY=computer-secret")
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("node --test failed: %v", err)
	}
}
