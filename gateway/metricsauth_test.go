package gateway_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// get fetches url with the headers given (name, value, ...) and returns
// the status and body.
func get(t *testing.T, url string, kv ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := pollingClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// /metrics names offices and key ids: on the gateway's port it is served
// to operator keys only (401 without a key, 403 to an agent's or a
// computer's key), and on the metrics listener (--metrics-listen) to
// scrapers without a key, which serves nothing else. Before, anyone
// reaching the public port read it.
func TestMetricsNeedAnOperatorKeyOnThePublicPort(t *testing.T) {
	ring, err := core.NewKeyRing(
		core.Key{Key: "operator-key-for-metrics-0a1b", ID: "operator"},
		core.Key{Key: "agent-key-for-metrics-2c3d", ID: "agent-a", Roles: []string{smcp.RoleAgent}, Offices: []string{"secret-office"}},
		core.Key{Key: computerKey, ID: "computers", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring, Metrics: true, MetricsListener: mln})
	dialComputerWithKey(t, g.URL, computerKey, "pc-a", "secret-office")
	scraper := "http://" + mln.Addr().String()

	for _, tc := range []struct {
		name   string
		header []string
		status int
		says   string
	}{
		{"no key", nil, http.StatusUnauthorized, "missing API key"},
		{"a wrong key", []string{"x-api-key", "wrong"}, http.StatusUnauthorized, "invalid API key"},
		{"an agent's key", []string{"x-api-key", "agent-key-for-metrics-2c3d"}, http.StatusForbidden, "operator keys"},
		{"a computer's key", []string{"Authorization", "Bearer " + computerKey}, http.StatusForbidden, "operator keys"},
	} {
		status, body := get(t, g.URL+"/metrics", tc.header...)
		if status != tc.status || !strings.Contains(body, tc.says) || strings.Contains(body, "secret-office") {
			t.Errorf("public /metrics with %s: %d %.120q, want %d saying %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	for _, h := range [][]string{{"x-api-key", "operator-key-for-metrics-0a1b"}, {"Authorization", "Bearer operator-key-for-metrics-0a1b"}} {
		if status, body := get(t, g.URL+"/metrics", h...); status != http.StatusOK || !strings.Contains(body, "smcp_offices 1") {
			t.Errorf("public /metrics with the operator key in %s: %d", h[0], status)
		}
	}
	if status, body := get(t, scraper+"/metrics"); status != http.StatusOK || !strings.Contains(body, "smcp_offices 1") {
		t.Errorf("/metrics on the metrics listener: %d", status)
	}
	for _, path := range []string{"/healthz", "/console/", "/socket.io/?EIO=4&transport=polling", "/mcp/secret-office"} {
		if status, _ := get(t, scraper+path); status != http.StatusNotFound {
			t.Errorf("%s on the metrics listener: %d, want 404", path, status)
		}
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", mln.Addr().String()); err == nil {
		_ = c.Close()
		t.Error("the metrics listener outlived the gateway")
	}
}
