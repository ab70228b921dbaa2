// Package interop runs the reference Node socket.io-client against a gateway
// started in-process.
package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestNodeClient(t *testing.T) {
	// A gateway of 0.2 alone, as before there were other profiles.
	runNodeProfiles(t, []smcp.Version{smcp.V02}, nil, "smcp.test.mjs")
}

// One gateway serving a 0.2 office (smcp.test.mjs, the 0.2 client as
// TestNodeClient drives it) and a 0.4 office (profile04.test.mjs) at the
// same time.
func TestNodeClientProfilesSideBySide(t *testing.T) {
	runNodeProfiles(t, nil, []string{"SMCP_FOREIGN_VERSION=0.5.0", "SMCP_SERVER_VERSION=0.4.0"},
		"smcp.test.mjs", "profile04.test.mjs")
}

// runNodeProfiles starts a gateway serving protocols (nil: all) with a Go
// 0.2 computer in office "interop", then runs the Node test files at once.
func runNodeProfiles(t *testing.T, protocols []smcp.Version, env []string, files ...string) {
	dir := nodetest.Require(t, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ring, err := core.NewKeyRing(
		core.Key{Key: "agent-secret", ID: "node-agent", Roles: []string{smcp.RoleAgent}, Offices: []string{"interop", "office-04"}},
		core.Key{Key: "computer-secret", ID: "computers", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Start(gateway.Config{Auth: ring, SIO: sio.Config{Protocols: protocols}}, "127.0.0.1:0")
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

	var wg sync.WaitGroup
	for _, file := range files {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, "node", "--test", "--test-force-exit", "--test-reporter=spec", file)
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			cmd.Env = append(append(os.Environ(),
				"SMCP_URL="+g.URL, "SMCP_OFFICE=interop", "SMCP_OFFICE_02=interop", "SMCP_OFFICE_04=office-04",
				"SMCP_AGENT_KEY=agent-secret", "SMCP_COMPUTER_KEY=computer-secret"), env...)
			out, err := cmd.CombinedOutput()
			t.Logf("node --test %s:\n%s", file, out)
			if err != nil {
				t.Errorf("node --test %s failed: %v", file, err)
			}
		})
	}
	wg.Wait()
}
