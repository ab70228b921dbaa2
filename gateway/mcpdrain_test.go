package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// mcpSession opens an MCP session of office with the stock go-sdk client.
func mcpSession(ctx context.Context, base, office string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "drain-test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp/" + office}, nil)
}

// SIGTERM (Running.Stop) while an MCP tools/call waits on a slow computer:
// the call is answered, /readyz says 503 meanwhile, a new request of the
// same session and a new session are refused, and only then does the
// gateway stop.
func TestShutdownDrainsMCP(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, ShutdownGrace: 10 * time.Second}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	pc := dialComputer(t, r.URL, "pc", "o-mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcpSession(ctx, r.URL, "o-mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	testwait.Until(t, "the computer's tool listed", func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && len(res.Tools) == 1 && res.Tools[0].Name == "pc__echo"
	})
	pc.mu.Lock()
	pc.block = release
	pc.mu.Unlock()

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	called := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc__echo"})
		called <- answer{res, err}
	}()
	// pc.arrived also carries the session's own reads: wait for the call.
	testwait.Until(t, "the MCP call at its computer", func() bool {
		return slices.Contains(pc.receivedEvents(), smcp.EventToolCall)
	})

	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	readyz := func() int {
		resp, err := http.Get(r.URL + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	testwait.Until(t, "/readyz 503 while draining", func() bool { return readyz() == http.StatusServiceUnavailable })
	// A new request of the open session gets an MCP error saying why; a new
	// session is refused.
	var werr *jsonrpc.Error
	if _, err := cs.ListTools(ctx, nil); !errors.As(err, &werr) || !strings.Contains(werr.Message, "shutting down") ||
		!strings.Contains(string(werr.Data), "503") {
		t.Errorf("new MCP request while draining: %v, want an MCP error with SMCP code 503", err)
	}
	if other, err := mcpSession(ctx, r.URL, "o-mcp"); err == nil {
		_ = other.Close()
		t.Error("a new MCP session was opened while draining")
	}
	time.Sleep(700 * time.Millisecond)
	if len(called) != 0 {
		a := <-called
		t.Fatalf("the MCP call ended before its computer answered: %v %v", a.res, a.err)
	}
	if got := readyz(); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d while an MCP call is in flight, want 503", got)
	}
	select {
	case err := <-stopped:
		t.Fatalf("the gateway stopped (%v) with an MCP call in flight", err)
	default:
	}
	close(release)
	a := <-called
	if a.err != nil || a.res.IsError || len(a.res.Content) != 1 {
		t.Fatalf("MCP call in flight at shutdown: %v %v", a.res, a.err)
	}
	if text, ok := a.res.Content[0].(*mcp.TextContent); !ok || !strings.HasPrefix(text.Text, "pc:") {
		t.Errorf("MCP call in flight at shutdown answered %#v", a.res.Content[0])
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the gateway did not stop once the MCP call was answered")
	}
}
