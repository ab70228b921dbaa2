package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// SIGTERM to a real `smcp gateway` process while a gRPC call (h2c) and a
// Connect call (HTTP/1.1) wait on a slow computer: /readyz turns 503 at
// once, both calls are answered by the computer, and the process then
// exits 0.
func TestGatewaySIGTERMDrains(t *testing.T) {
	addr := freeAddr(t)
	cmd := smcpCommand(t, "gateway", "--insecure", "--listen", addr, "--shutdown-grace", "20s", "--log-level", "warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	readyz := func() int {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, ctx, "gateway ready", func() bool { return readyz() == http.StatusOK })

	release := make(chan struct{})
	arrived := make(chan string, 2)
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: base, NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Handle(smcp.EventToolCall, func(ctx context.Context, p json.RawMessage) (any, error) {
		var req smcpv1.ToolCallReq
		if err := smcp.Unmarshal(p, &req); err != nil {
			return nil, err
		}
		arrived <- req.GetReqId()
		<-release
		return json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"isError":false}`, "done:"+req.GetReqId())), nil
	})
	if err := pc.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}

	h1 := &http.Transport{}
	h1.Protocols = new(http.Protocols)
	h1.Protocols.SetHTTP1(true)
	h2c := &http.Transport{}
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	defer h1.CloseIdleConnections()
	defer h2c.CloseIdleConnections()
	clients := map[string]smcpv1connect.AgentServiceClient{
		"connect": smcpv1connect.NewAgentServiceClient(&http.Client{Transport: h1}, base),
		"grpc":    smcpv1connect.NewAgentServiceClient(&http.Client{Transport: h2c}, base, connect.WithGRPC()),
	}
	answers := make(chan string, len(clients))
	for name, cl := range clients {
		go func() {
			res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo", ReqId: name, Timeout: 30})
			if err != nil {
				answers <- name + ": " + err.Error()
				return
			}
			if c := res.GetResult().GetContent(); len(c) == 1 {
				answers <- c[0].GetFields()["text"].GetStringValue()
				return
			}
			answers <- fmt.Sprintf("%s: %v", name, res)
		}()
	}
	for range clients {
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("the calls did not reach the computer")
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "/readyz 503 after SIGTERM", func() bool { return readyz() == http.StatusServiceUnavailable })
	time.Sleep(500 * time.Millisecond) // well past the 0.2 s after which calls used to be cut
	select {
	case got := <-answers:
		t.Fatalf("a call ended before its computer answered: %s", got)
	case err := <-exited:
		t.Fatalf("the gateway exited (%v) with calls in flight", err)
	default:
	}
	close(release)
	want := map[string]bool{"done:connect": true, "done:grpc": true}
	for range clients {
		select {
		case got := <-answers:
			if !want[got] {
				t.Errorf("call in flight at SIGTERM: %s", got)
			}
		case <-ctx.Done():
			t.Fatal("no answer")
		}
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("gateway exit: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the gateway did not exit once the calls were answered")
	}
	exited <- nil // for the cleanup
}
