package mcpfront_test

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testtls"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// With certificates, the MCP endpoint is served over HTTPS on the same
// port, computers joining over TLS too.
func TestTLS(t *testing.T) {
	cert, pool := testtls.SelfSigned(t)
	g := startGateway(t, gateway.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if !strings.HasPrefix(g.URL, "https://") {
		t.Fatalf("URL %s", g.URL)
	}
	fx := newFixture(t, "pc-tls")
	pc := startComputerWith(t, g, keyA, "A", "pc-tls", map[string]string{"fx": fx.url},
		computer.Gateway{Dial: sioclient.Options{Logger: quiet, TLSConfig: &tls.Config{RootCAs: pool}}})
	defer pc()
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint(g, "A"), MaxRetries: -1, HTTPClient: &http.Client{
		Transport: headers{h: http.Header{"X-Api-Key": {keyA}}, base: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tls", Version: "1"}, nil).Connect(ctxT(t), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc-tls__echo", Arguments: map[string]any{"text": "sealed"}})
	if err != nil || text(t, res) != "pc-tls: sealed" {
		t.Fatalf("call over TLS: %v %+v", err, res)
	}
}
