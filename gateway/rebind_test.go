package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// hostTransport sends every request under another Host header (and HTTP/2
// :authority), as a browser does for a page whose name an attacker's DNS
// rebound to 127.0.0.1.
type hostTransport struct {
	host string
	base http.RoundTripper
}

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return h.base.RoundTrip(r)
}

// frontEnds probes each front end of g under Host host with a request of
// the page's own origin, and returns each one's refusal (nil: served).
func frontEnds(t *testing.T, base, host string) map[string]error {
	t.Helper()
	origin := "http://" + host
	get := func(path string) error {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Origin", origin)
		resp, err := pollingClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &statusError{resp.StatusCode, string(b)}
		}
		return nil
	}
	out := map[string]error{
		"socket.io polling": get("/socket.io/?EIO=4&transport=polling"),
		"console":           get("/console/"),
	}
	d := ws.Dialer{NetDialContext: ws.DefaultDialer.NetDialContext}
	h := http.Header{"Origin": {origin}, "Host": {host}}
	if c, resp, err := d.Dial(wsURL(base), h); err != nil {
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			out["socket.io websocket"] = &statusError{resp.StatusCode, string(b)}
		} else {
			t.Fatal(err)
		}
	} else {
		_ = c.Close()
		out["socket.io websocket"] = nil
	}
	for _, grpc := range []bool{false, true} {
		tr := &http.Transport{Protocols: new(http.Protocols)}
		opts := []connect.ClientOption{}
		name := "connect"
		if grpc {
			tr.Protocols.SetUnencryptedHTTP2(true)
			opts, name = append(opts, connect.WithGRPC()), "grpc"
		} else {
			tr.Protocols.SetHTTP1(true)
		}
		t.Cleanup(tr.CloseIdleConnections)
		c := smcpv1connect.NewAgentServiceClient(&http.Client{Transport: hostTransport{host: host, base: tr}}, base, opts...)
		_, err := c.ListOffices(ctxT(t), &smcpv1.ListOfficesRequest{})
		out[name] = err
	}
	out["mcp"] = mcpInitializeAs(t, base, host, origin)
	return out
}

// mcpInitializeAs posts an MCP initialize to office A under Host host with
// Origin origin, and ends the session it opens.
func mcpInitializeAs(t *testing.T, base, host, origin string) error {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/mcp/A", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Origin", origin)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := pollingClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &statusError{resp.StatusCode, string(b)}
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		del, _ := http.NewRequestWithContext(ctxT(t), http.MethodDelete, base+"/mcp/A", nil)
		del.Header.Set("Mcp-Session-Id", sid)
		if r, err := pollingClient.Do(del); err == nil {
			_ = r.Body.Close()
		}
	}
	return nil
}

type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + ": " + e.body }

// A web page whose name an attacker's DNS rebinds to 127.0.0.1 reaches a
// loopback gateway as its own origin (Origin = Host), which an Origin check
// or CORS cannot stop: every front end (Socket.IO, Connect, gRPC, the
// console, MCP) refuses a loopback request under a host name that is not
// loopback nor configured (Config.AllowedHosts, --allowed-hosts), with a
// 403 / PermissionDenied naming the rule. Before, Socket.IO took Origin =
// Host as the gateway's own page and Connect had no Host check: with the
// demo key or --insecure, a rebound page joined and read a file.
func TestDNSRebindingRefusedOnEveryFrontEnd(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	port := g.URL[strings.LastIndex(g.URL, ":")+1:]
	for front, err := range frontEnds(t, g.URL, "rebound.example:"+port) {
		var se *statusError
		switch {
		case front == "connect" || front == "grpc":
			if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "DNS rebinding") {
				t.Errorf("%s under a rebound Host: %v, want PermissionDenied naming the rule", front, err)
			}
		case !asStatus(err, &se) || se.status != http.StatusForbidden:
			t.Errorf("%s under a rebound Host: %v, want 403", front, err)
		case !strings.Contains(se.body, "loopback host names"):
			t.Errorf("%s under a rebound Host: refusal %q does not name the rule", front, se.body)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port} {
		if host[0] == '[' {
			continue // the listener is IPv4; the name is checked in httpauth's tests
		}
		for front, err := range frontEnds(t, g.URL, host) {
			if err != nil {
				t.Errorf("%s under Host %s: %v", front, host, err)
			}
		}
	}
	named := startGateway(t, gateway.Config{AllowedHosts: []string{"gw.internal"}})
	port = named.URL[strings.LastIndex(named.URL, ":")+1:]
	for front, err := range frontEnds(t, named.URL, "GW.internal:"+port) {
		if err != nil {
			t.Errorf("%s under a configured Host: %v", front, err)
		}
	}
	for front, err := range frontEnds(t, named.URL, "rebound.example:"+port) {
		if err == nil {
			t.Errorf("%s under a rebound Host beside a configured one: served", front)
		}
	}
}

func asStatus(err error, target **statusError) bool {
	se, ok := err.(*statusError)
	if ok {
		*target = se
	}
	return ok
}

// An Origin wildcard matches whole host labels on every front end that
// takes origins: https://*.example.com lets https://team.example.com in,
// not https://evil.com/.example.com (a string that merely ends the same,
// which the string match of Socket.IO and of CORS let in) nor
// https://evilexample.com; MCP's allow-list takes the same entries.
func TestOriginWildcardMatchesWholeLabels(t *testing.T) {
	g := startGateway(t, gateway.Config{
		RPC: rpc.Options{CORSOrigins: []string{"https://*.example.com"}},
		MCP: mcpfront.Options{AllowedOrigins: []string{"https://*.example.com"}},
	})
	probe := func(origin string) map[string]bool {
		allowed := map[string]bool{}
		req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, g.URL+"/socket.io/?EIO=4&transport=polling", nil)
		req.Header.Set("Origin", origin)
		resp, err := pollingClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		allowed["socket.io"] = resp.StatusCode == http.StatusOK

		req, _ = http.NewRequestWithContext(ctxT(t), http.MethodOptions, g.URL+"/smcp.v1.AgentService/ListOffices", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		resp, err = pollingClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		allowed["connect cors"] = resp.Header.Get("Access-Control-Allow-Origin") == origin

		status, _ := mcpInitialize(t, g.URL, "A", http.Header{"Origin": {origin}})
		allowed["mcp"] = status == http.StatusOK
		return allowed
	}
	for origin, want := range map[string]bool{
		"https://team.example.com":      true,
		"https://a.b.example.com:443":   true,
		"https://evil.com/.example.com": false,
		"https://evilexample.com":       false,
		"https://example.com":           false,
		"http://team.example.com":       false,
		"https://team.example.com:8443": false,
	} {
		for front, got := range probe(origin) {
			if got != want {
				t.Errorf("%s with Origin %s: allowed %v, want %v", front, origin, got, want)
			}
		}
	}
}
