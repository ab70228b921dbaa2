package computer_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// authGuard is a protected MCP server as the vectors describe it: the
// handshake and every other request pass; tools/call of the tool "add"
// answers status (with a WWW-Authenticate challenge when set) and no
// JSON-RPC body.
func authGuard(inner http.Handler, status int, challenge string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "add" {
				if challenge != "" {
					w.Header().Set("WWW-Authenticate", challenge)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = io.WriteString(w, `{"error":"invalid_token","error_description":"token s3cr3t-token expired"}`)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
}

type authVector struct {
	Desc      string `json:"desc"`
	Transport string `json:"transport"`
	Upstream  struct {
		Status          int     `json:"status"`
		WWWAuthenticate *string `json:"www_authenticate"`
	} `json:"upstream"`
	Expected struct {
		ErrorCode int  `json:"error_code"`
		IsError   bool `json:"isError"`
		Hangs     bool `json:"hangs"`
	} `json:"expected"`
}

// Every vector of the specification's upstream authorization file (§7 C8),
// against real loopback MCP servers (go-sdk, streamable HTTP and SSE)
// behind a guard that answers tools/call with the vector's status: the
// call ends at once (the tool timeout is 60 s; the answer must come within
// 5 s) as isError with meta.error_code 4006 or 4007, mcp_server the bundle
// id and an auth_hint free of tokens and URLs; the server's other tools and
// the computer's other servers keep answering.
func TestAuthErrorVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "smcp", "testdata", "protocol-fixtures", "auth_error_conformance_vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []authVector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) != 4 {
		t.Fatalf("%d vectors, the file of tag v0.3.0 has 4", len(file.Vectors))
	}
	other := fixture(t, testmcp.New("other", testmcp.Options{}))
	for i, v := range file.Vectors {
		t.Run(fmt.Sprintf("%d_%s", i, v.Transport), func(t *testing.T) {
			f := testmcp.New("guarded", testmcp.Options{})
			var inner http.Handler
			typ := "streamable"
			switch v.Transport {
			case "streamable_http":
				inner = f.HTTPHandler()
			case "sse_handwritten":
				// rust-sdk's own SSE client in the spec; our SSE transport here.
				typ = "sse"
				inner = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return f.Server }, nil)
			default:
				t.Fatalf("transport %q not covered", v.Transport)
			}
			challenge := ""
			if v.Upstream.WWWAuthenticate != nil {
				challenge = *v.Upstream.WWWAuthenticate
			}
			hs := httptest.NewServer(authGuard(inner, v.Upstream.Status, challenge))
			t.Cleanup(hs.Close)
			doc := fmt.Sprintf(`{"servers": {
				"Guarded API": {"type": %q, "server_parameters": {"url": %q, "headers": {"Authorization": "Bearer s3cr3t-token"}}},
				"other": {"type": "streamable", "server_parameters": {"url": %q}}}}`,
				typ, hs.URL+"/mcp?code=c0de&state=st4te", other)
			h := newComputerFrom(t, computer.Protocol04, doc, []string{"Guarded API", "other"})

			start := time.Now()
			res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__add", "params": map[string]any{"a": 1, "b": 2}, "timeout": 60})
			took := time.Since(start)
			meta, _ := res["meta"].(map[string]any)
			if res["isError"] != v.Expected.IsError || meta[smcp.MetaCode] != float64(v.Expected.ErrorCode) {
				t.Fatalf("%s: %v, want isError %v and error_code %d", v.Desc, res, v.Expected.IsError, v.Expected.ErrorCode)
			}
			if !v.Expected.Hangs && (took > 5*time.Second || meta[smcp.MetaTimeout] != nil) {
				t.Errorf("%s: answered after %v (timeout marker %v): it hung", v.Desc, took, meta[smcp.MetaTimeout])
			}
			if meta[smcp.MetaMCPServer] != "Guarded_API" {
				t.Errorf("mcp_server = %v, want the bundle id", meta[smcp.MetaMCPServer])
			}
			hint, _ := meta[smcp.MetaAuthHint].(map[string]any)
			msg, _ := hint["message"].(string)
			if msg == "" {
				t.Errorf("auth_hint %v has no message", meta[smcp.MetaAuthHint])
			}
			all, _ := json.Marshal(res)
			for _, secret := range []string{"s3cr3t", "c0de", "st4te", "code=", "state=", "127.0.0.1", "http://", "realm", "invalid_token"} {
				if strings.Contains(string(all), secret) {
					t.Errorf("the answer carries %q: %s", secret, all)
				}
			}
			if challenge != "" && !strings.Contains(msg, "Bearer") {
				t.Errorf("hint %q does not name the challenge's scheme", msg)
			}

			// The session survived: the same server's other tool, and the
			// computer's other server, answer.
			res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "Guarded_API__echo", "params": map[string]any{"text": "still"}, "timeout": 20})
			if res["isError"] != false || resultText(t, res) != "guarded: still" {
				t.Errorf("the guarded server's echo after the refusal: %v", res)
			}
			res = h.call(smcp.EventToolCall, map[string]any{"tool_name": "other__echo", "params": map[string]any{"text": "x"}, "timeout": 20})
			if res["isError"] != false {
				t.Errorf("the other server after the refusal: %v", res)
			}
		})
	}
}
