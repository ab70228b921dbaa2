package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestClusterNodeKilled runs two `smcp gateway --redis` processes on a real
// redis-server behind a TCP load balancer. The computer is on node A, the
// agent on node B, calling it without pause. Node A is killed (SIGKILL: no
// goodbye to Redis). The call in flight to the computer must be answered at
// once the node is known dead, not at its 60 s deadline; the computer
// reconnects through the balancer to node B, takes its own place in the
// office back from its ghost, and the agent's calls succeed again.
func TestClusterNodeKilled(t *testing.T) {
	redisURL := systest.RedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const ttl = time.Second
	nodeA := startNode(t, redisURL, "A", ttl)
	nodeB := startNode(t, redisURL, "B", ttl)
	lb := balance(t, nodeA.addr, nodeB.addr)

	// The computer: echo answers at once, "hold" until the call is
	// cancelled (it never is: its node dies first).
	held := make(chan struct{}, 1)
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: "http://" + lb, ReconnectDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Handle(smcp.EventToolCall, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req smcpv1.ToolCallReq
		if err := smcp.Unmarshal(p, &req); err != nil {
			return nil, err
		}
		if req.GetToolName() == "hold" {
			held <- struct{}{}
			<-ctx.Done()
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"isError":false}`), nil
	})
	rejoined := make(chan error, 1)
	pc.OnRejoin(func(err error) { rejoined <- err })
	if err := pc.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}

	a, err := agent.Dial(ctx, sioclient.Options{URL: nodeB.url, Version: smcp.V02.Full()}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, timeout int32) (*smcpv1.CallToolResult, error) {
		return a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: tool, Timeout: timeout})
	}

	// Steady cross-node traffic.
	var ok, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if res, err := call("echo", 5); err == nil && !res.GetIsError() {
				ok.Add(1)
			} else {
				failed.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	waitFor(t, ctx, "cross-node calls", func() bool { return ok.Load() > 50 })
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d cross-node calls failed before any fault", n)
	}

	type answer struct {
		res *smcpv1.CallToolResult
		err error
		at  time.Time
	}
	inFlight := make(chan answer, 1)
	go func() {
		res, err := call("hold", 60)
		inFlight <- answer{res, err, time.Now()}
	}()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the held call never reached the computer")
	}
	killed := time.Now()
	if err := nodeA.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = nodeA.cmd.Wait()

	// The held call is answered once node A is known dead: within a few
	// TTLs, far before its 60 s timeout.
	select {
	case ans := <-inFlight:
		took := ans.at.Sub(killed)
		t.Logf("held call answered %v after the kill: %v %v", took.Round(time.Millisecond), ans.err, ans.res)
		if ans.err != nil || !ans.res.GetIsError() || !strings.Contains(fmt.Sprint(ans.res.GetContent()), "left the office") {
			t.Fatalf("held call answered with %v / %v, want the computer-gone result", ans.res, ans.err)
		}
		if took > 5*ttl {
			t.Errorf("held call answered %v after the kill; the node's TTL is %v", took, ttl)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight to the dead node's computer was left hanging")
	}

	// The computer is back, through the balancer, on node B.
	select {
	case err := <-rejoined:
		if err != nil {
			t.Fatalf("computer re-join on the survivor: %v", err)
		}
		t.Logf("computer re-joined %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the computer did not re-join")
	}
	before := ok.Load()
	waitFor(t, ctx, "calls resuming", func() bool { return ok.Load() > before+50 })
	rows, err := a.ListRoom(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var members []string
	for _, r := range rows {
		members = append(members, r.GetRole()+" "+r.GetName())
	}
	if fmt.Sprint(members) != "[agent alice computer pc]" {
		t.Fatalf("list_room after the failover: %v", members)
	}
	t.Logf("%d calls succeeded, %d failed around the failover", ok.Load(), failed.Load())
}

type node struct {
	cmd       *exec.Cmd
	addr, url string
}

// startNode runs `smcp gateway --redis` as a child process and waits until
// it is ready.
func startNode(t *testing.T, redisURL, id string, ttl time.Duration) node {
	t.Helper()
	return startNodeWith(t, redisURL, id, ttl, os.Stderr, "--log-level", "warn")
}

// startNodeWith is startNode with its log to stderr and further flags.
func startNodeWith(t *testing.T, redisURL, id string, ttl time.Duration, stderr io.Writer, flags ...string) node {
	t.Helper()
	addr := freeAddr(t)
	cmd := smcpCommand(t, append([]string{"gateway", "--insecure", "--listen", addr, "--redis", redisURL,
		"--node-id", id, "--redis-ttl", ttl.String()}, flags...)...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	n := node{cmd: cmd, addr: addr, url: "http://" + addr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(t, ctx, "node "+id+" ready", func() bool {
		resp, err := http.Get(n.url + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return n
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// freeAddrs are n distinct free loopback addresses: each is held until all
// are chosen, since a port just closed may be handed out again.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ln.Close() }()
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// balance is a TCP load balancer: each connection goes to the first backend
// that accepts it, as a balancer with health checks would send it to a
// healthy node.
func balance(t *testing.T, backends ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				var out net.Conn
				for _, b := range backends {
					if out, err = net.DialTimeout("tcp", b, time.Second); err == nil {
						break
					}
				}
				if out == nil {
					return
				}
				defer func() { _ = out.Close() }()
				go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return ln.Addr().String()
}

// waitFor polls cond until it holds, within what is left of the budget
// ctx's deadline sets for the whole test.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	if !testwait.Poll(time.Until(deadline), cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
