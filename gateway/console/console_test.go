package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
)

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestServedByGateway: the gateway serves the embedded files at /console/
// with their types and a policy that keeps the page to its own origin, and
// config.json naming its key header; it sends / there, and serves nothing of
// it with NoConsole.
func TestServedByGateway(t *testing.T) {
	keys, err := core.NewKeyRing(core.Key{Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: keys}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)

	for _, f := range []struct{ path, ctype, contains string }{
		{"/console/", "text/html", `<script type="module" src="app.js">`},
		{"/console/app.js", "text/javascript", `from "./api.js"`},
		{"/console/api.js", "text/javascript", `[this.keyHeader]: this.key`},
		{"/console/form.js", "text/javascript", "export function buildForm"},
		{"/console/metrics.js", "text/javascript", "export function figuresOf"},
		{"/console/dom.js", "text/javascript", "export function el"},
		{"/console/result.js", "text/javascript", "export function renderResult"},
		{"/console/style.css", "text/css", ":root"},
	} {
		res, body := get(t, c, gw.URL+f.path)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), f.ctype) || !strings.Contains(body, f.contains) {
			t.Errorf("%s: %d %q, body has %q: %v", f.path, res.StatusCode, res.Header.Get("Content-Type"), f.contains, strings.Contains(body, f.contains))
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", f.path, csp, want)
			}
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", f.path, res.Header)
		}
	}
	if res, _ := get(t, c, gw.URL+"/console/nope.js"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown file: %d", res.StatusCode)
	}
	if res, _ := get(t, c, gw.URL+"/"); res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/console/" {
		t.Errorf("/: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := get(t, c, gw.URL+"/elsewhere"); res.StatusCode != http.StatusNotFound {
		t.Errorf("/elsewhere: %d, want 404 (only / itself goes to the console)", res.StatusCode)
	}

	if _, body := get(t, c, gw.URL+"/console/config.json"); body != `{"api_key_header":"x-api-key"}` {
		t.Errorf("config.json: %s", body)
	}
	custom, err := gateway.Start(gateway.Config{Auth: keys, RPC: rpc.Options{APIKeyHeader: "x-token"}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = custom.Stop() })
	if _, body := get(t, c, custom.URL+"/console/config.json"); body != `{"api_key_header":"x-token"}` {
		t.Errorf("config.json with --api-key-header x-token: %s", body)
	}

	off, err := gateway.Start(gateway.Config{Auth: keys, NoConsole: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = off.Stop() })
	for _, p := range []string{"/console/", "/"} {
		if res, _ := get(t, c, off.URL+p); res.StatusCode != http.StatusNotFound {
			t.Errorf("NoConsole %s: %d", p, res.StatusCode)
		}
	}
}
