// Package nodeserver dials the official Node socket.io server with the Go
// client (sioclient, through the computer).
package nodeserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
)

// The computer opens a session at the official socket.io server as
// socket.io-client does: a polling GET with a2c_version, a CONNECT without
// role, the upgrade to WebSocket; it joins and answers the server's
// client:get_tools there.
func TestComputerAtNodeServer(t *testing.T) {
	dir := nodetest.Require(t, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "server.mjs")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan map[string]any, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		for range lines {
		}
		_ = cmd.Wait()
	})
	// Lines in any order (the join can come before the upgrade): each is
	// kept by its key until asked for.
	seen := map[string]map[string]any{}
	next := func(key string) map[string]any {
		t.Helper()
		for {
			if m, ok := seen[key]; ok {
				return m
			}
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("the node server exited before printing %q", key)
				}
				for k := range m {
					if k != "transport" && k != "query" {
						seen[k] = m
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the node server printed no %q", key)
			}
		}
	}
	port := next("listening")["listening"].(float64)

	c, err := computer.New(computer.Options{Name: "pc", Config: &config.Config{}, Protocol: computer.Protocol04})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Connect(ctx, computer.Gateway{URL: fmt.Sprintf("http://127.0.0.1:%d", int(port)), Office: "node-office", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	first := next("first")
	u, err := url.Parse(fmt.Sprint(first["first"]))
	if err != nil || first["transport"] != "polling" || u.Query().Get("a2c_version") != "0.4.0" || u.Query().Get("sid") != "" {
		t.Errorf("first request %v", first)
	}
	conn := next("connect")
	if auth, _ := conn["connect"].(map[string]any); auth["role"] != nil {
		t.Errorf("CONNECT auth %v", conn)
	}
	if up := next("upgraded"); up["upgraded"] != "websocket" {
		t.Errorf("upgrade %v", up)
	}
	joined := next("joined")
	if j, _ := joined["joined"].(map[string]any); j["role"] != "computer" || j["name"] != "pc" || j["office_id"] != "node-office" {
		t.Errorf("join %v", joined)
	}
	ans := next("answer")
	a, _ := ans["answer"].(map[string]any)
	if a == nil || a["req_id"] != "r1" || ans["transport"] != "websocket" {
		t.Errorf("get_tools answer %v", ans)
	}
	if tr := l.Transport(); !strings.EqualFold(tr, "websocket") {
		t.Errorf("client transport %q", tr)
	}
}
