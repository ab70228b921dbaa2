package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// writeMCPConfig writes an mcpServers file naming a streamable HTTP server
// per name.
func writeMCPConfig(t *testing.T, path string, urls map[string]string) {
	t.Helper()
	servers := map[string]any{}
	for name, u := range urls {
		servers[name] = map[string]any{"url": u}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A real `smcp gateway` whose YAML hosts a computer (its configuration
// named relative to the YAML) serves it to agents; SIGHUP reloads the
// computer's configuration (a server added shows its tools); at SIGTERM a
// call in flight on the hosted computer is answered before the process
// exits, and the computer's MCP servers are stopped.
func TestGatewayHostsComputerFromYAML(t *testing.T) {
	web := testmcp.New("web", testmcp.Options{})
	webSrv := httptest.NewServer(web.HTTPHandler())
	t.Cleanup(webSrv.Close)
	more := httptest.NewServer(testmcp.New("more", testmcp.Options{}).HTTPHandler())
	t.Cleanup(more.Close)

	dir := t.TempDir()
	mcpPath := filepath.Join(dir, "mcp.json")
	writeMCPConfig(t, mcpPath, map[string]string{"web": webSrv.URL})
	addr := freeAddr(t)
	yml := "listen: " + addr + "\ninsecure: true\ncomputers:\n" +
		"  - {name: pc, office: o, config: mcp.json, protocol: \"0.4\", confirm: auto}\n"
	cfgPath := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr testwait.Buffer
	cmd := smcpCommand(t, "gateway", "--config", cfgPath)
	cmd.Dir = t.TempDir() // the YAML's folder, not the working directory, resolves mcp.json
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, "http://"+addr)
	listed := func(tool string) bool {
		res, err := cl.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "o", Computer: "pc"})
		if err != nil {
			return false
		}
		return slices.ContainsFunc(res.GetTools(), func(t *smcpv1.SMCPTool) bool { return t.GetName() == tool })
	}
	waitFor(t, ctx, "the hosted computer's tools", func() bool { return listed("web__echo") })
	params, err := structpb.NewStruct(map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "web__echo", Params: params, Timeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.GetResult().GetContent(); len(c) != 1 || c[0].GetFields()["text"].GetStringValue() != "web: hi" {
		t.Fatalf("web__echo: %v", res)
	}

	writeMCPConfig(t, mcpPath, map[string]string{"web": webSrv.URL, "more": more.URL})
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded server's tools", func() bool { return listed("more__echo") })

	slow, err := structpb.NewStruct(map[string]any{"tag": "at-sigterm", "seconds": 1})
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "web__slow", Params: slow, Timeout: 30})
		if err != nil {
			answer <- err.Error()
			return
		}
		if c := res.GetResult().GetContent(); len(c) == 1 {
			answer <- c[0].GetFields()["text"].GetStringValue()
			return
		}
		answer <- res.String()
	}()
	select {
	case <-web.SlowStarted:
	case <-ctx.Done():
		t.Fatal("the slow call did not reach the MCP server")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-answer:
		if got != "done at-sigterm" {
			t.Fatalf("call in flight at SIGTERM: %s", got)
		}
	case <-ctx.Done():
		t.Fatal("no answer")
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("the gateway exited with %v\n%s", waitErr, stderr.String())
		}
	case <-ctx.Done():
		t.Fatal("the gateway did not exit")
	}
	if out := stderr.String(); !strings.Contains(out, "configuration reloaded") || !strings.Contains(out, "computer stopped") {
		t.Fatalf("the reload or the stop is not logged:\n%s", out)
	}
}

// computers: in the YAML: the configuration files, skill folders and
// landing roots are read from the YAML's folder; a computer speaking a protocol the gateway
// does not serve is refused at start.
func TestGatewayConfigComputers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	yml := "insecure: true\ncomputers:\n  - {name: pc, office: o, config: pc/mcp.json, skills: [skills, /abs/skills], landing_root: in, protocol: \"0.2\"}\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseGatewayConfig([]string{"--config", path})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Computers) != 1 {
		t.Fatalf("computers: %+v", c.Computers)
	}
	got := c.Computers[0]
	if got.Config != filepath.Join(dir, "pc", "mcp.json") || got.LandingRoot != filepath.Join(dir, "in") || !slices.Equal(got.Skills, []string{filepath.Join(dir, "skills"), "/abs/skills"}) {
		t.Fatalf("paths not read from the YAML's folder: %+v", got)
	}
	c.Protocols = "0.4"
	if _, err := c.gatewayConfig(slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), `"pc" speaks protocol "0.2"`) {
		t.Fatalf("a protocol not served: %v", err)
	}
}

// Three `smcp gateway --redis` processes with one YAML hosting a computer:
// one node hosts it and the agents of every node call it; when that node
// is killed (SIGKILL: no goodbye to Redis), one of the two others takes it
// over once the dead node's heartbeat lapses, and the agents of both
// survivors call it there.
func TestClusterHostedComputerMovesWhenItsNodeDies(t *testing.T) {
	redisURL := systest.RedisServer(t)
	web := httptest.NewServer(testmcp.New("web", testmcp.Options{}).HTTPHandler())
	t.Cleanup(web.Close)
	dir := t.TempDir()
	writeMCPConfig(t, filepath.Join(dir, "mcp.json"), map[string]string{"web": web.URL})
	cfgPath := filepath.Join(dir, "gateway.yaml")
	yml := "computers:\n  - {name: pc, office: o, config: mcp.json, confirm: auto}\n"
	if err := os.WriteFile(cfgPath, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const ttl = time.Second
	nodes := make([]node, 3)
	logs := make([]*testwait.Buffer, 3)
	for i := range nodes {
		logs[i] = &testwait.Buffer{}
		nodes[i] = startNodeWith(t, redisURL, fmt.Sprint("n", i), ttl, logs[i], "--config", cfgPath)
	}
	const joined = "hosted computer joined its office"
	hosts := func(alive ...int) []int {
		var on []int
		for _, i := range alive {
			if strings.Contains(logs[i].String(), joined) {
				on = append(on, i)
			}
		}
		return on
	}
	params, err := structpb.NewStruct(map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	calls := func(i int) bool {
		cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[i].url)
		res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "web__echo", Params: params, Timeout: 5})
		return err == nil && !res.GetResult().GetIsError()
	}
	waitFor(t, ctx, "the hosted computer on one node", func() bool { return len(hosts(0, 1, 2)) > 0 })
	for i := range nodes {
		waitFor(t, ctx, fmt.Sprint("calls through node ", i), func() bool { return calls(i) })
	}
	owners := hosts(0, 1, 2)
	if len(owners) != 1 {
		t.Fatalf("nodes %v host the computer, want one", owners)
	}
	owner := owners[0]
	var survivors []int
	for i := range nodes {
		if i != owner {
			survivors = append(survivors, i)
		}
	}

	killed := time.Now()
	if err := nodes[owner].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "a survivor hosting the computer", func() bool { return len(hosts(survivors...)) > 0 })
	t.Logf("hosted computer taken over %v after its node was killed (heartbeat TTL %v)", time.Since(killed).Round(time.Millisecond), ttl)
	for _, i := range survivors {
		waitFor(t, ctx, fmt.Sprint("calls through node ", i, " after the takeover"), func() bool { return calls(i) })
	}
	if on := hosts(survivors...); len(on) != 1 {
		t.Fatalf("survivors %v host the computer, want one", on)
	}
}
