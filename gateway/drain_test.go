package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// rpcClient is the stock connect-go client over HTTP/1.1, or h2c for gRPC.
func rpcClient(t *testing.T, base string, grpc bool, opts ...connect.ClientOption) smcpv1connect.AgentServiceClient {
	t.Helper()
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	if grpc {
		tr.Protocols.SetUnencryptedHTTP2(true)
		opts = append(opts, connect.WithGRPC())
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return smcpv1connect.NewAgentServiceClient(&http.Client{Transport: tr}, base, opts...)
}

// SIGTERM (Running.Stop) while a Socket.IO, a Connect and a gRPC call wait
// on slow computers: every call is answered, /readyz says 503 and new calls
// are refused meanwhile, and only then does the listener close.
func TestShutdownDrainsEveryFrontEnd(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, ShutdownGrace: 10 * time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(r.URL, "http://")
	// The Socket.IO call is answered first: the RPC calls must still be
	// waited for once no Socket.IO call is left.
	releaseSIO, releaseRPC := make(chan struct{}), make(chan struct{})
	var pcs []*computer
	for _, office := range []string{"o-sio", "o-connect", "o-grpc"} {
		pc := dialComputer(t, r.URL, "pc", office)
		pc.mu.Lock()
		pc.block = releaseRPC
		if office == "o-sio" {
			pc.block = releaseSIO
		}
		pc.mu.Unlock()
		pcs = append(pcs, pc)
	}
	a := dialAgent(t, r.URL, "alice", "o-sio")
	conn := rpcClient(t, r.URL, false)
	grpc := rpcClient(t, r.URL, true)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	results := map[string]chan string{"sio": make(chan string, 1), "connect": make(chan string, 1), "grpc": make(chan string, 1)}
	answer := func(front string, content []*structpb.Struct, err error) {
		if err != nil || len(content) == 0 {
			results[front] <- fmt.Sprintf("error: %v %v", content, err)
			return
		}
		results[front] <- content[0].GetFields()["text"].GetStringValue()
	}
	go func() {
		res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", ReqId: "sio", Timeout: 60})
		answer("sio", res.GetContent(), err)
	}()
	for front, cl := range map[string]smcpv1connect.AgentServiceClient{"connect": conn, "grpc": grpc} {
		go func() {
			res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o-" + front, Computer: "pc", ToolName: "echo", ReqId: front, Timeout: 60})
			answer(front, res.GetResult().GetContent(), err)
		}()
	}
	for _, pc := range pcs {
		select {
		case <-pc.arrived:
		case <-ctx.Done():
			t.Fatal("a call did not reach its computer")
		}
	}

	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	probe := func(path string) int {
		resp, err := http.Get(r.URL + path)
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	testwait.Until(t, "/readyz 503 while draining", func() bool { return probe("/readyz") == http.StatusServiceUnavailable })
	// New calls are refused on every front end.
	_, err = conn.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "o-connect", Computer: "pc"})
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("new Connect call while draining: %v, want Unavailable", err)
	}
	_, err = grpc.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "o-grpc", Computer: "pc"})
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("new gRPC call while draining: %v, want Unavailable", err)
	}
	_, err = a.GetTools(ctx, "pc")
	if e, ok := smcp.AsError(err); !ok || e.Code != sio.CodeUnavailable {
		t.Errorf("new Socket.IO call while draining: %v, want %d", err, sio.CodeUnavailable)
	}
	// Well past the moment computers used to be cut (0.2 s), the calls
	// still wait and the gateway is still draining, not gone.
	time.Sleep(700 * time.Millisecond)
	for front, ch := range results {
		if len(ch) != 0 {
			t.Fatalf("%s call ended before its computer answered: %s", front, <-ch)
		}
	}
	if got := probe("/readyz"); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d while calls are in flight, want 503", got)
	}
	close(releaseSIO)
	if got := <-results["sio"]; got != "pc:sio" {
		t.Errorf("sio call in flight at shutdown: %s", got)
	}
	time.Sleep(500 * time.Millisecond)
	close(releaseRPC)
	for _, front := range []string{"connect", "grpc"} {
		ch := results[front]
		select {
		case got := <-ch:
			if got != "pc:"+front {
				t.Errorf("%s call in flight at shutdown: %s", front, got)
			}
		case <-ctx.Done():
			t.Fatalf("%s call: no answer", front)
		}
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the gateway did not stop once the calls were answered")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the listener is still open after the gateway stopped")
	}
}

// Keyless callers who keep their connection after a 401, send half a body
// or half a header are closed after the idle, body and header timeouts;
// meanwhile /healthz and authenticated calls are served. Calls longer than
// every timeout (a slow tool over HTTP/1.1 and h2c, a Socket.IO long-poll)
// are not cut.
func TestSilentConnectionsAreClosed(t *testing.T) {
	const key = "timeouts-key-5b1e"
	ring, err := core.NewKeyRing(core.Key{Key: key, ID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 300 * time.Millisecond
	g := startGateway(t, gateway.Config{Auth: ring, ReadHeaderTimeout: limit, IdleTimeout: limit, BodyReadTimeout: limit})
	addr := strings.TrimPrefix(g.URL, "http://")
	pc := dialComputerWithKey(t, g.URL, key, "pc", "o")
	keyed := connecttest.Headers("x-api-key", key)

	const body = `{"officeId":"o","computer":"pc","toolName":"echo"}`
	kinds := []string{
		// a whole keyless request, then silence on a keep-alive connection
		"POST /smcp.v1.AgentService/CallTool HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body,
		// half a body
		"POST /smcp.v1.AgentService/CallTool HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"office",
		// half a body to another path
		"POST /socket.io/?EIO=4&transport=polling HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n40",
		// half a header
		"POST /smcp.v1.AgentService/CallTool HTTP/1.1\r\nHost: localhost\r\nContent-Ty",
	}
	const n = 60
	var wg sync.WaitGroup
	closedIn := make([]time.Duration, n)
	start := time.Now()
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		if _, err := io.WriteString(c, kinds[i%len(kinds)]); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			// Read whatever the gateway answers until it closes; a
			// connection still open after 5 s is a failure.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.Copy(io.Discard, bufio.NewReader(c))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				closedIn[i] = -1
				return
			}
			closedIn[i] = time.Since(start)
		})
	}
	// Held connections starve no one.
	resp, err := http.Get(g.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz beside silent connections: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	ctx := ctxT(t)
	if _, err := rpcClient(t, g.URL, false, keyed).GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: "o", Computer: "pc"}); err != nil {
		t.Fatalf("authenticated call beside silent connections: %v", err)
	}
	wg.Wait()
	for i, d := range closedIn {
		if d < 0 {
			t.Errorf("connection %d (%.30q) still open after 5 s", i, kinds[i%len(kinds)])
		}
	}

	// Longer than every timeout: slow tool calls over HTTP/1.1 and h2c, and
	// a long-poll answered late.
	release := make(chan struct{})
	pc.mu.Lock()
	pc.block = release
	pc.mu.Unlock()
	time.AfterFunc(4*limit, func() { close(release) })
	var calls sync.WaitGroup
	for _, grpc := range []bool{false, true} {
		cl := rpcClient(t, g.URL, grpc, keyed)
		calls.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo", ReqId: "slow", Timeout: 10})
			if err != nil || res.GetResult().GetIsError() {
				t.Errorf("slow call (grpc %v): %v %v", grpc, res, err)
			}
		})
	}
	// A WatchOffice stream over HTTP/1.1: its request body is read at once,
	// then the stream lasts; a notification after every timeout still comes.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	watch, err := rpcClient(t, g.URL, false, keyed).WatchOffice(wctx, &smcpv1.WatchOfficeRequest{OfficeId: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Close() }()
	_ = watch.ResponseHeader() // blocks until the watch is registered
	p := keyedPolling(t, g.URL, key)
	polled := make(chan string, 1)
	go func() { polled <- p.get(t) }()
	time.Sleep(4 * limit)
	p.post(t, `42/smcp,1["`+smcp.EventListRoom+`",{"agent":"x","req_id":"r","office_id":"o"}]`)
	select {
	case got := <-polled:
		if !strings.Contains(got, "43/smcp,1[") {
			t.Errorf("long-poll held past the timeouts: %q, want the ack", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("long-poll not answered")
	}
	calls.Wait()
	dialComputerWithKey(t, g.URL, key, "pc2", "w")
	if !watch.Receive() || watch.Msg().GetEnterOffice() == nil {
		t.Errorf("watch held past the timeouts: %v %v", watch.Msg(), watch.Err())
	}
}

// keyedPolling is a Socket.IO polling client presenting key.
func keyedPolling(t *testing.T, base, key string) *keyPolling {
	t.Helper()
	p := &keyPolling{url: base + "/socket.io/?EIO=4&transport=polling", key: key}
	open := p.get(t)
	var hs struct {
		SID string `json:"sid"`
	}
	if !strings.HasPrefix(open, "0") || json.Unmarshal([]byte(open[1:]), &hs) != nil || hs.SID == "" {
		t.Fatalf("handshake: %q", open)
	}
	p.url += "&sid=" + hs.SID
	p.post(t, "40/smcp,{}")
	if got := p.get(t); !strings.HasPrefix(got, "40/smcp,") {
		t.Fatalf("namespace connect: %q", got)
	}
	return p
}

type keyPolling struct{ url, key string }

func (p *keyPolling) do(t *testing.T, method, body string) string {
	req, err := http.NewRequest(method, p.url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return ""
	}
	req.Header.Set("x-api-key", p.key)
	if body != "" {
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	}
	resp, err := pollingClient.Do(req)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (p *keyPolling) get(t *testing.T) string { return p.do(t, http.MethodGet, "") }

func (p *keyPolling) post(t *testing.T, body string) { p.do(t, http.MethodPost, body) }

// drainerFunc adapts a function to gateway.Drainer.
type drainerFunc func(ctx context.Context) error

func (f drainerFunc) Drain(ctx context.Context) error { return f(ctx) }

// A front end mounted later (AddDrainer) is waited for like the built-in
// ones: the gateway is draining and still listening until it is done.
func TestShutdownWaitsForAddedDrainers(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, ShutdownGrace: 10 * time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	called, release := make(chan struct{}), make(chan struct{})
	r.AddDrainer(drainerFunc(func(ctx context.Context) error {
		close(called)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("the added front end was not asked to drain")
	}
	time.Sleep(200 * time.Millisecond)
	resp, err := http.Get(r.URL + "/readyz")
	if err != nil {
		t.Fatalf("the listener closed before the added front end drained: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d while draining", resp.StatusCode)
	}
	select {
	case err := <-stopped:
		t.Fatalf("stopped (%v) before the added front end drained", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
