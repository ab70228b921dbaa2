package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// `smcp agent evict` frees the seat of a Socket.IO agent with an operator
// key, and is refused (exit 1, permission_denied) with a scoped one.
func TestAgentEvict(t *testing.T) {
	keys, err := core.NewKeyRing(core.Key{ID: "op", Key: "k-op"},
		core.Key{ID: "scoped", Key: "k-scoped", Roles: []string{smcp.RoleAgent}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: keys}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bob, err := sioclient.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: "k-scoped", Version: smcp.ProtocolVersion, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if err := bob.JoinOffice(ctx, smcp.RoleAgent, "bob", "o"); err != nil {
		t.Fatal(err)
	}
	env := []string{"SMCP_URL=" + gw.URL, "SMCP_OFFICE=o"}
	code, out, errOut := agentRun(t, append(env, "SMCP_API_KEY=k-scoped"), "evict")
	if code != 1 || !strings.Contains(errOut, "permission_denied") || !strings.Contains(errOut, "operator") {
		t.Fatalf("evict with a scoped key: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = agentRun(t, append(env, "SMCP_API_KEY=k-op"), "evict")
	if code != 0 || !strings.Contains(out, "bob") || !strings.Contains(out, "socket.io") {
		t.Fatalf("evict with the operator key: exit %d, %q, %q", code, out, errOut)
	}
	select {
	case <-bob.Done():
	case <-ctx.Done():
		t.Fatal("evicted agent still connected")
	}
	code, out, _ = agentRun(t, append(env, "SMCP_API_KEY=k-op"), "evict")
	if code != 0 || !strings.Contains(out, "had no agent") {
		t.Fatalf("evict of a free seat: exit %d, %q", code, out)
	}
}
