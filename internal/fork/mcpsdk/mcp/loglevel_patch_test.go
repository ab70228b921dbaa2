// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md): a
// client's protocol mistakes are not logged at Error, and a notification
// the transport refuses (no stream to carry it) is not logged at Warn.

package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/internal/jsonrpc2"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
)

// recordLevels keeps each record's level and message.
type recordLevels struct {
	mu      sync.Mutex
	records []string
}

func (r *recordLevels) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordLevels) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *recordLevels) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordLevels) WithGroup(string) slog.Handler      { return r }

func (r *recordLevels) find(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.records {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// A call before initialize, a second initialize and a second initialized
// are each answered with an error, and logged at Info, not Error (upstream
// logs all three at Error).
func TestClientMistakesNotLoggedAsErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &recordLevels{}
	server := NewServer(&Implementation{Name: "s", Version: "1"}, &ServerOptions{Logger: slog.New(rec)})
	st, ct := NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := func(id int64, method, params string) *jsonrpc.Response {
		t.Helper()
		req := &jsonrpc.Request{Method: method, Params: json.RawMessage(params)}
		if id != 0 {
			req.ID = jsonrpc2.Int64ID(id)
		}
		if err := conn.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			return nil
		}
		msg, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, ok := msg.(*jsonrpc.Response)
		if !ok {
			t.Fatalf("%s: got %T", method, msg)
		}
		return res
	}
	initialize := `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`
	if res := call(1, "tools/list", `{}`); res.Error == nil {
		t.Error("tools/list before initialize answered without an error")
	}
	if res := call(2, "initialize", initialize); res.Error != nil {
		t.Fatalf("initialize: %v", res.Error)
	}
	if res := call(3, "initialize", initialize); res.Error == nil {
		t.Error("a second initialize answered without an error")
	}
	call(0, "notifications/initialized", `{}`)
	call(0, "notifications/initialized", `{}`)
	// A ping after the notifications: answered once both were handled.
	if res := call(4, "ping", `{}`); res.Error != nil {
		t.Fatalf("ping: %v", res.Error)
	}
	for _, want := range []string{"INFO method invalid during initialization", "INFO duplicate initialize request", "INFO duplicate initialized notification"} {
		if len(rec.find(want)) != 1 {
			t.Errorf("no %q record", want)
		}
	}
	if errs := rec.find("ERROR"); len(errs) > 0 {
		t.Errorf("client mistakes logged as errors: %q", errs)
	}
}

// A streamable session whose client never opened its standalone stream
// cannot be sent tools/list_changed: the transport refuses it
// (ErrRejected), which the patch logs at Debug (upstream: Warn, once per
// notification per session).
func TestRefusedNotificationLoggedAtDebug(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := &recordLevels{}
	server := NewServer(&Implementation{Name: "s", Version: "1"}, &ServerOptions{Logger: slog.New(rec)})
	server.AddTool(&Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	srv := httptest.NewServer(NewStreamableHTTPHandler(func(*http.Request) *Server { return server },
		&StreamableHTTPOptions{JSONResponse: true}))
	defer srv.Close()
	post := func(sid, body string) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %s", body, resp.Status)
		}
		return resp.Header.Get("Mcp-Session-Id")
	}
	sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	server.AddTool(&Tool{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *CallToolRequest) (*CallToolResult, error) { return &CallToolResult{}, nil })
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.find("DEBUG calling notifications/tools/list_changed")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no record of the refused notification: %q", rec.find(""))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if warns := rec.find("WARN calling"); len(warns) > 0 {
		t.Errorf("a refused notification logged at Warn: %q", warns)
	}
}
