package servers

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// newTransport builds the go-sdk transport of a resolved server. closeFn
// releases what the transport holds outside the session (the stderr pump).
func newTransport(c *config.Resolved, bundleID string, store *upstreamauth.Store, log *slog.Logger) (mcp.Transport, func(), error) {
	switch {
	case c.Params.Stdio != nil:
		p := c.Params.Stdio
		if enc := strings.ToLower(strings.ReplaceAll(p.Encoding, "-", "")); enc != "" && enc != "utf8" {
			log.Warn("only UTF-8 is supported on stdio pipes; ignoring encoding", "encoding", p.Encoding)
		}
		cmd := exec.Command(p.Command, p.Args...)
		// Not the computer's whole environment: it holds the gateway's API
		// key, and any agent can read a server's environment back through
		// a tool that shows it.
		cmd.Env = childEnv(p, os.Environ())
		if p.Cwd != nil && *p.Cwd != "" {
			cmd.Dir = *p.Cwd
		}
		// The child's stderr is its log: forward it line by line.
		pr, pw := io.Pipe()
		cmd.Stderr = pw
		go func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64*1024), 1024*1024)
			for sc.Scan() {
				log.Debug("stderr", "line", sc.Text())
			}
			_, _ = io.Copy(io.Discard, pr)
		}()
		t := &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		return t, func() { _ = pw.Close() }, nil
	case c.Params.SSE != nil:
		hc, closeIdle := httpClient(c.Params.SSE.Headers, oauthFor(store, bundleID, c.Params.SSE.URL, c.Params.SSE.Headers, log))
		return &mcp.SSEClientTransport{Endpoint: c.Params.SSE.URL, HTTPClient: hc}, closeIdle, nil
	case c.Params.Streamable != nil:
		hc, closeIdle := httpClient(c.Params.Streamable.Headers, oauthFor(store, bundleID, c.Params.Streamable.URL, c.Params.Streamable.Headers, log))
		return &mcp.StreamableClientTransport{Endpoint: c.Params.Streamable.URL, HTTPClient: hc}, closeIdle, nil
	}
	return nil, nil, fmt.Errorf("server %q has no transport parameters", c.Name)
}

// httpClient makes the HTTP client of one session: its own connection pool
// (closed with the session, so that a stopped server leaves no idle
// connections behind), the configured headers on every request, and no
// client timeout (event streams stay open for the life of the session).
func httpClient(headers map[string]string, oauth func(http.RoundTripper) http.RoundTripper) (*http.Client, func()) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = tr
	if oauth != nil {
		rt = oauth(rt)
	}
	rt = authWatch{next: rt}
	if len(headers) > 0 {
		rt = headerTransport{headers: headers, next: rt}
	}
	return &http.Client{Transport: rt}, tr.CloseIdleConnections
}

// oauthFor returns the wrapper that puts the server's stored OAuth token
// on its requests (upstreamauth.Transport), or nil: without a token store,
// or when the configuration sets the Authorization header itself (its
// credentials are the configuration's choice).
func oauthFor(store *upstreamauth.Store, bundleID, url string, headers map[string]string, log *slog.Logger) func(http.RoundTripper) http.RoundTripper {
	if store == nil {
		return nil
	}
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			return nil
		}
	}
	return func(base http.RoundTripper) http.RoundTripper {
		return &upstreamauth.Transport{Store: store, Server: bundleID, Resource: url, Base: base, Log: log}
	}
}

type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}
