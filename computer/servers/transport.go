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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/computer/config"
)

// newTransport builds the go-sdk transport of a resolved server. closeFn
// releases what the transport holds outside the session (the stderr pump).
func newTransport(c *config.Resolved, log *slog.Logger) (mcp.Transport, func(), error) {
	switch {
	case c.Stdio != nil:
		p := c.Stdio
		if enc := strings.ToLower(strings.ReplaceAll(p.Encoding, "-", "")); enc != "" && enc != "utf8" {
			log.Warn("only UTF-8 is supported on stdio pipes; ignoring encoding", "encoding", p.Encoding)
		}
		cmd := exec.Command(p.Command, p.Args...)
		cmd.Env = os.Environ()
		for k, v := range p.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
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
	case c.SSE != nil:
		return &mcp.SSEClientTransport{Endpoint: c.SSE.URL, HTTPClient: httpClient(c.SSE.Headers)}, func() {}, nil
	case c.Streamable != nil:
		return &mcp.StreamableClientTransport{Endpoint: c.Streamable.URL, HTTPClient: httpClient(c.Streamable.Headers)}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("server %q has no transport parameters", c.Name)
}

// httpClient adds the configured headers to every request. No client
// timeout: event streams stay open for the life of the session.
func httpClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return &http.Client{}
	}
	return &http.Client{Transport: headerTransport{headers: headers, next: http.DefaultTransport}}
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
