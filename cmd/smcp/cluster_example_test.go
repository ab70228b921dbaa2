package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/agent"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testdeps"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestClusterExample runs examples/cluster/run.sh as a user would (this
// test binary playing bin/smcp): redis-server, three gateway nodes, nginx
// in front, computer pc-direct given the three nodes' URLs and pc-lb
// behind nginx. An agent joins through nginx and calls both computers.
// Then, with SIGKILL (no goodbye to Redis): the node holding pc-direct
// dies, and pc-direct joins the office again through another node; the
// node holding the agent dies, and the agent reconnects through nginx to
// the last node. After each kill the agent's calls to both computers
// succeed again.
func TestClusterExample(t *testing.T) {
	nginx := clusterBinary(t, "nginx", "/usr/sbin/nginx")
	redis := clusterBinary(t, "redis-server", "/usr/bin/redis-server")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dir := t.TempDir()
	ports := freeAddrs(t, 6)
	for i, addr := range ports {
		_, ports[i], _ = strings.Cut(addr, ":")
	}
	lbPort, grpcPort, redisPort, nodePorts := ports[0], ports[1], ports[2], ports[3:]
	keyBytes := make([]byte, 16)
	_, _ = rand.Read(keyBytes)
	key := hex.EncodeToString(keyBytes)

	script, err := filepath.Abs("../../examples/cluster/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script)
	cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"),
		"SMCP="+os.Args[0], "NGINX="+nginx, "REDIS_SERVER="+redis, "CLUSTER_DIR="+dir,
		"LB_PORT="+lbPort, "GRPC_PORT="+grpcPort, "REDIS_PORT="+redisPort,
		"NODE_PORTS="+strings.Join(nodePorts, " "), "REDIS_TTL=1s", "OFFICE=o", "SMCP_API_KEY="+key)
	// Its own process group: the cleanup reaches every process the script
	// started, even if the script itself is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testwait.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	banner := make(chan struct{})
	var out testwait.Buffer
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(&out, sc.Text())
			if sc.Text() == "Ctrl-C stops the cluster." {
				close(banner)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		// The script stops what it started on SIGTERM; the group is
		// killed in any case.
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			t.Errorf("run.sh did not stop within 20 s of SIGTERM")
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("run.sh stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", filepath.Base(l), tail(string(b), 40))
			}
		}
	})
	select {
	case <-banner:
	case err := <-exited:
		exited <- err
		t.Fatalf("run.sh exited before the cluster was ready: %v", err)
	case <-ctx.Done():
		t.Fatal("the cluster was not ready within 2 minutes")
	}

	lb := "http://127.0.0.1:" + lbPort
	nodeURL := map[string]string{} // "127.0.0.1:port" -> node name
	for i, p := range nodePorts {
		nodeURL["127.0.0.1:"+p] = fmt.Sprintf("gw%d", i+1)
	}
	a, err := agent.Dial(ctx, sioclient.Options{URL: lb, APIKey: key, Version: smcp.V04.Full(), ReconnectDelay: 100 * time.Millisecond}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	// Both computers answer through the agent's node.
	callBoth := func() error {
		for _, pc := range []string{"pc-direct", "pc-lb"} {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := a.CallTool(cctx, &smcpv1.ToolCallReq{Computer: pc, ToolName: "docs__list_documents", Timeout: 10})
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", pc, err)
			}
			if res.GetIsError() || !strings.Contains(fmt.Sprint(res.GetContent()), "quarterly-report") {
				return fmt.Errorf("%s answered %v", pc, res)
			}
		}
		return nil
	}
	if err := callBoth(); err != nil {
		t.Fatalf("before any kill: %v", err)
	}
	// Engine.IO long-polling through nginx: every request of a session
	// reaches the node that issued its sid (a non-sticky balancer sends
	// most of these posts to a node that answers "Session ID unknown").
	for i := range 6 {
		if err := pollingSession(lb, key); err != nil {
			t.Fatalf("polling session %d through nginx: %v", i, err)
		}
	}
	// The typed API through nginx: Connect over HTTP/1.1 on the balancer's
	// port, gRPC over h2c on its own, each acting as alice.
	rpcListRoom := func(grpc bool) error {
		tr := &http.Transport{Protocols: new(http.Protocols)}
		defer tr.CloseIdleConnections()
		base, opts := lb, []connect.ClientOption{connecttest.Headers("x-api-key", key, "x-smcp-agent", "alice")}
		if grpc {
			tr.Protocols.SetUnencryptedHTTP2(true)
			base, opts = "http://127.0.0.1:"+grpcPort, append(opts, connect.WithGRPC())
		} else {
			tr.Protocols.SetHTTP1(true)
		}
		c := smcpv1connect.NewAgentServiceClient(&http.Client{Transport: tr}, base, opts...)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := c.ListRoom(cctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
		if err != nil {
			return fmt.Errorf("grpc=%v: %w", grpc, err)
		}
		if n := len(res.GetSessions()); n != 3 {
			return fmt.Errorf("grpc=%v: %d members, want alice, pc-direct and pc-lb: %v", grpc, n, res)
		}
		return nil
	}
	for _, grpc := range []bool{false, true} {
		if err := rpcListRoom(grpc); err != nil {
			t.Fatalf("typed API through nginx: %v", err)
		}
	}
	// MCP through nginx: a session of its own, as alice, on the node the
	// client address hashes to; it lists both computers' tools.
	mc := mcp.NewClient(&mcp.Implementation{Name: "cluster-test", Version: "1"}, nil)
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb + "/mcp/o",
		HTTPClient: &http.Client{Transport: mcpHeaders{http.Header{"X-Api-Key": {key}, "X-Smcp-Agent": {"alice"}}}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("MCP through nginx: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	_ = cs.Close()
	if err != nil {
		t.Fatalf("MCP tools/list through nginx: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "pc-direct__docs__list_documents") || !slices.Contains(names, "pc-lb__docs__list_documents") {
		t.Fatalf("MCP tools through nginx: %v", names)
	}

	// Which node holds what: pc-direct logs the node it joined through;
	// nginx names the node a request from this address goes to (the
	// agent's, and pc-lb's: one client address, one node).
	computerNode := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, "pc-direct.log"))
		m := regexp.MustCompile(`msg="joined office" .*gateway=http://(\S+)`).FindAllStringSubmatch(string(b), -1)
		if len(m) == 0 {
			return ""
		}
		return nodeURL[m[len(m)-1][1]]
	}
	agentNode := func() string {
		resp, err := http.Get(lb + "/socket.io/?EIO=4&transport=polling")
		if err != nil {
			return ""
		}
		_ = resp.Body.Close()
		// "dead, live" when nginx tried a dead node first: the last answered.
		tried := strings.Split(resp.Header.Get("X-SMCP-Node"), ", ")
		return nodeURL[tried[len(tried)-1]]
	}
	kill := func(node string) time.Time {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, node+".pid"))
		if err != nil {
			t.Fatal(err)
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil {
			t.Fatalf("%s.pid: %v", node, err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", node, err)
		}
		return time.Now()
	}
	recovered := func(what string, since time.Time, check func() error) {
		t.Helper()
		var last error
		if !testwait.Poll(45*time.Second, func() bool { last = check(); return last == nil }) {
			t.Fatalf("%s: not within 45 s (last: %v)", what, last)
		}
		t.Logf("%s: %v after the kill", what, time.Since(since).Round(time.Millisecond))
	}

	// 1. The node holding pc-direct dies.
	first := computerNode()
	if first == "" {
		t.Fatal("pc-direct names no node it joined through")
	}
	t.Logf("pc-direct on %s, the agent on %s", first, agentNode())
	killed := kill(first)
	recovered("pc-direct re-joined through another node", killed, func() error {
		if n := computerNode(); n == "" || n == first {
			return fmt.Errorf("pc-direct's last join was through %q", n)
		}
		return nil
	})
	recovered("the agent's calls to both computers", killed, callBoth)

	// 2. The node holding the agent (now a live one) dies.
	second := agentNode()
	if second == "" || second == first {
		t.Fatalf("nginx routes the agent to %q after %s died", second, first)
	}
	killed = kill(second)
	recovered("the agent's calls through nginx, both computers", killed, callBoth)
	if n := agentNode(); n == first || n == second || n == "" {
		t.Fatalf("nginx routes to %q with %s and %s dead", n, first, second)
	}
	rows, err := a.ListRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, r := range rows {
		members = append(members, r.GetRole()+" "+r.GetName())
	}
	if fmt.Sprint(members) != "[agent alice computer pc-direct computer pc-lb]" {
		t.Fatalf("list_room on the last node: %v", members)
	}
	for _, grpc := range []bool{false, true} {
		if err := rpcListRoom(grpc); err != nil {
			t.Fatalf("typed API through nginx with two nodes dead: %v", err)
		}
	}
	if strings.Contains(out.String()+stderr.String(), key) {
		t.Error("run.sh printed the API key")
	}
}

// pollingSession opens an Engine.IO session over long-polling as
// socket.io-client does: the handshake, then a GET poll held open while
// the namespace CONNECT is posted; the poll returns the CONNECT's answer.
// While the poll is held, a least-connections balancer would send the post
// elsewhere: only a sticky one passes.
func pollingSession(base, key string) error {
	q := base + "/socket.io/?EIO=4&transport=polling&a2c_version=" + smcp.V04.Full()
	do := func(method, u, body string) (int, string, string, error) {
		req, err := http.NewRequest(method, u, strings.NewReader(body))
		if err != nil {
			return 0, "", "", err
		}
		req.Header.Set("x-api-key", key)
		if body != "" {
			req.Header.Set("content-type", "text/plain;charset=UTF-8")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return 0, "", "", err
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode, string(b), resp.Header.Get("X-SMCP-Node"), err
	}
	code, body, _, err := do(http.MethodGet, q, "")
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("handshake: %d %s %v", code, body, err)
	}
	var open struct {
		SID string `json:"sid"`
	}
	if body == "" || body[0] != '0' || json.Unmarshal([]byte(body[1:]), &open) != nil || open.SID == "" {
		return fmt.Errorf("handshake answered %q", body)
	}
	withSID := q + "&sid=" + url.QueryEscape(open.SID)
	type answer struct {
		code       int
		body, node string
		err        error
	}
	polled := make(chan answer, 1)
	go func() {
		code, body, node, err := do(http.MethodGet, withSID, "")
		polled <- answer{code, body, node, err}
	}()
	// Let the poll reach its node first, as a client's does.
	time.Sleep(200 * time.Millisecond)
	code, body, node, err := do(http.MethodPost, withSID, "40/smcp,")
	if err != nil || code != http.StatusOK || body != "ok" {
		return fmt.Errorf("post on sid %s answered %d %q (node %s, %v)", open.SID, code, body, node, err)
	}
	a := <-polled
	if a.err != nil || a.code != http.StatusOK || !strings.HasPrefix(a.body, "40/smcp,") {
		return fmt.Errorf("poll on sid %s answered %d %q (node %s, %v)", open.SID, a.code, a.body, a.node, a.err)
	}
	return nil
}

// clusterBinary finds a program the cluster example needs (testdeps).
func clusterBinary(t *testing.T, name, usual string) string {
	t.Helper()
	return testdeps.Program(t, name, name, usual)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
