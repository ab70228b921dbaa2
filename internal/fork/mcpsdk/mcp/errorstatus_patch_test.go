// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md): a JSON-RPC
// error may choose the HTTP status of the POST it answers
// (StreamableHTTPOptions.ErrorStatus), and the client reports the error of
// a 429's body.

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
)

const codeTooMany = -32029

// statusRecorder keeps the status and Retry-After of the last answer to a
// POST of a request (a notification's is 202).
type statusRecorder struct {
	mu         sync.Mutex
	status     int
	retryAfter string
}

func (s *statusRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && resp.StatusCode != http.StatusAccepted {
		s.mu.Lock()
		s.status, s.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		s.mu.Unlock()
	}
	return resp, err
}

func TestErrorStatusAnswersThePOST(t *testing.T) {
	for _, c := range []struct {
		version  string
		stateful bool
	}{{protocolVersion20251125, true}, {protocolVersion20260728, false}} {
		t.Run(c.version, func(t *testing.T) {
			ctx := context.Background()
			server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
			server.AddTool(&Tool{Name: "busy", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: codeTooMany, Message: "too many calls"}
			})
			server.AddTool(&Tool{Name: "fails", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *CallToolRequest) (*CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "broken"}
			})
			h := NewStreamableHTTPHandler(func(*http.Request) *Server { return server }, &StreamableHTTPOptions{
				Stateless: !c.stateful, JSONResponse: true,
				ErrorStatus: func(e *jsonrpc.Error, h http.Header) int {
					if e.Code != codeTooMany {
						return 0
					}
					h.Set("Retry-After", "3")
					return http.StatusTooManyRequests
				},
			})
			srv := httptest.NewServer(h)
			defer srv.Close()
			rec := &statusRecorder{}
			cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
				&StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: rec}},
				&ClientSessionOptions{ProtocolVersion: c.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()

			_, err = cs.CallTool(ctx, &CallToolParams{Name: "busy"})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != codeTooMany {
				t.Fatalf("busy: %v, want the JSON-RPC error of the body", err)
			}
			rec.mu.Lock()
			status, retryAfter := rec.status, rec.retryAfter
			rec.mu.Unlock()
			if status != http.StatusTooManyRequests || retryAfter != "3" {
				t.Fatalf("busy: HTTP %d, Retry-After %q", status, retryAfter)
			}
			// The session survives the refusal, and an error the hook
			// leaves alone is answered as before.
			_, err = cs.CallTool(ctx, &CallToolParams{Name: "fails"})
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError {
				t.Fatalf("fails: %v", err)
			}
			rec.mu.Lock()
			status = rec.status
			rec.mu.Unlock()
			if status != http.StatusOK {
				t.Fatalf("fails: HTTP %d, want 200", status)
			}
		})
	}
}
