package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// checkMCPLine connects the go-sdk MCP client as the banner's mcpServers
// entry says (URL and header) and finds the demo computer's tools.
func checkMCPLine(t *testing.T, banner string) {
	t.Helper()
	var cfg struct {
		MCPServers map[string]struct {
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	for line := range strings.SplitSeq(banner, "\n") {
		if strings.HasPrefix(line, `{"mcpServers"`) {
			if err := json.Unmarshal([]byte(line), &cfg); err != nil {
				t.Fatalf("mcpServers line %q: %v", line, err)
			}
		}
	}
	entry, ok := cfg.MCPServers["smcp-"+demoOffice]
	if !ok {
		t.Fatalf("no mcpServers line in the banner:\n%s", banner)
	}
	h := http.Header{}
	for k, v := range entry.Headers {
		h.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: entry.URL,
		HTTPClient: &http.Client{Transport: mcpHeaders{h}}}, nil)
	if err != nil {
		t.Fatalf("connect as the banner says: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "demo-pc__docs__search_documents" {
			return
		}
	}
	t.Errorf("the office's MCP tools lack demo-pc__docs__search_documents: %v", tools.Tools)
}

type mcpHeaders struct{ h http.Header }

func (t mcpHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}
