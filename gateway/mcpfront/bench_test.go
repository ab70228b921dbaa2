package mcpfront_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// benchComputer is a Socket.IO computer answering from memory (one echo
// tool, an empty desktop and finder), so that the benchmark weighs the
// gateway's front ends rather than an MCP server under the computer.
func benchComputer(b *testing.B, g *gateway.Running, office, name string) {
	memComputer(b, g, office, name, func(p json.RawMessage) any {
		var req struct {
			Params struct {
				Text string `json:"text"`
			} `json:"params"`
		}
		_ = json.Unmarshal(p, &req)
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": req.Params.Text}}, "isError": false}
	})
}

// memComputer is a Socket.IO computer answering from memory: one tool,
// "echo", whose result is answer(the client:tool_call payload), an empty
// desktop and finder.
func memComputer(b testing.TB, g *gateway.Running, office, name string, answer func(json.RawMessage) any) {
	c, err := sioclient.Dial(ctxT(b), sioclient.Options{URL: g.URL, APIKey: keyAll, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	c.Handle(smcp.EventToolCall, func(_ context.Context, p json.RawMessage) (any, error) {
		return answer(p), nil
	})
	c.Handle(smcp.EventGetTools, func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"tools": []any{map[string]any{"name": "echo", "description": "echo",
			"params_schema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
			"return_schema": nil, "meta": map[string]any{}}}}, nil
	})
	c.Handle(smcp.EventGetDesktop, func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"desktops": []any{}}, nil
	})
	c.Handle(smcp.EventGetFinder, func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"documents": []any{}, "total_count": 0}, nil
	})
	if err := c.JoinOffice(ctxT(b), smcp.RoleComputer, name, office); err != nil {
		b.Fatal(err)
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkToolCall measures one tool call through the gateway from an
// agent, by front end, in the same run: "mcp" is tools/call from the go-sdk
// MCP client over streamable HTTP (/mcp/{office_id}); "mcp-http" the same
// calls as bare HTTP POSTs on one session, which leaves out the go-sdk
// client's own cost; "mcp-http-floor" the same client against the bench's
// MCP floor (the go-sdk's handler answering in place: allocs/op above it in
// mcp-http are the gateway's and the computer's); "socketio" is client:tool_call from the Go agent over
// Socket.IO (WebSocket). Both reach
// an in-memory computer over Socket.IO, from GOMAXPROCS*4 goroutines.
// cpu-µs/call is the whole process's CPU (client, gateway and computer) per
// call. Rate limits are off.
func BenchmarkToolCall(b *testing.B) {
	// No per-connection rate limit: it would cap both paths at 2000 calls/s.
	cfg := gateway.Config{}
	cfg.SIO.EventsPerSecond, cfg.MCP.EventsPerSecond = -1, -1
	g := startGateway(b, cfg)
	benchComputer(b, g, "M", "pc")
	benchComputer(b, g, "S", "pc")
	run := func(b *testing.B, call func(ctx context.Context) error) {
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(4)
		start, cpu := time.Now(), cpuTime()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/call")
	}
	// rawCalls runs tools/call as raw HTTP posts on one session of url,
	// each answer holding want.
	rawCalls := func(b *testing.B, url, want string) {
		c := newRawSession(b, url, keyAll)
		var ids atomic.Int64
		run(b, func(ctx context.Context) error {
			body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"pc__echo","arguments":{"text":"hello"}}}`, ids.Add(1))
			answer, err := c.post(ctx, body)
			if err == nil && !bytes.Contains(answer, []byte(want)) {
				err = fmt.Errorf("answer %s", answer)
			}
			return err
		})
	}
	b.Run("mcp", func(b *testing.B) {
		cs := mustDial(b, g, "M", nil, "x-api-key", keyAll)
		params := &mcp.CallToolParams{Name: "pc__echo", Arguments: map[string]any{"text": "hello"}}
		run(b, func(ctx context.Context) error {
			res, err := cs.CallTool(ctx, params)
			if err == nil && (res.IsError || len(res.Content) != 1) {
				err = errResult
			}
			return err
		})
	})
	b.Run("mcp-http", func(b *testing.B) {
		rawCalls(b, endpoint(g, "M"), `"text":"hello"`)
	})
	b.Run("mcp-http-floor", func(b *testing.B) {
		// The bench's MCP floor (internal/loadtest): the go-sdk's handler
		// answering in place, no computer, the same client. allocs/op above
		// it in mcp-http are the gateway's and the computer's.
		mux := http.NewServeMux()
		mux.Handle(mcpfront.Pattern, loadtest.NewMCPFloor(quiet))
		srv := httptest.NewServer(mux)
		b.Cleanup(srv.Close)
		rawCalls(b, srv.URL+"/mcp/M", `hello`)
	})
	b.Run("socketio", func(b *testing.B) {
		a, err := agent.Dial(ctxT(b), sioclient.Options{Version: smcp.ProtocolVersion, URL: g.URL, APIKey: keyAll, Logger: quiet}, "alice")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(a.Close)
		if err := a.Join(ctxT(b), "S"); err != nil {
			b.Fatal(err)
		}
		params, _ := structpb.NewStruct(map[string]any{"text": "hello"})
		run(b, func(ctx context.Context) error {
			res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Params: params, Timeout: 30})
			if err == nil && res.GetIsError() {
				err = errResult
			}
			return err
		})
	})
}

var errResult = errNone

// rawSession is an MCP client reduced to HTTP POSTs of JSON-RPC messages on
// one initialized session, with keep-alive connections: it weighs the
// gateway's side of a tools/call without the go-sdk client's own cost.
type rawSession struct {
	url, key, id string
	client       *http.Client
}

func newRawSession(b testing.TB, url, key string) *rawSession {
	c := &rawSession{url: url, key: key, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	b.Cleanup(c.client.CloseIdleConnections)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	if _, err := c.post(context.Background(), []byte(init)); err != nil {
		b.Fatal(err)
	}
	if c.id == "" {
		b.Fatal("no Mcp-Session-Id")
	}
	if _, err := c.post(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		b.Fatal(err)
	}
	return c
}

func (c *rawSession) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", c.key)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, answer)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.id = id
	}
	return answer, nil
}
