package servers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
)

// Upstream authorization (PROTOCOL-0.4.md §7 C8). An HTTP MCP server that
// answers a tools/call with 401 or 403 must give the agent 4006 or 4007 at
// once, never a hang or a broken session. The go-sdk sees such an answer
// as a failed write: its streamable transport fails the whole connection
// on a status without a JSON-RPC body, and its SSE transport marks its
// write side broken. So the status is watched below the go-sdk, in the
// session's http.RoundTripper, for the requests of CallTool only (they
// carry an authProbe in their context): the status is recorded and the
// request fails with the JSON-RPC code -32005, which the go-sdk's
// transports treat as one request rejected, the session intact. The other
// requests of a session (initialize, lists, the event stream) are left to
// the go-sdk as before.

// codeRejected is the go-sdk's "rejected by transport" (jsonrpc2.ErrRejected,
// internal to the go-sdk; its errors compare by code).
const codeRejected = -32005

// authProbe records the authorization refusal of one call.
type authProbe struct {
	// ended is set once the request it watches is over: the connect probe
	// sits in the session-long context the transport keeps, and the
	// session's later requests are the go-sdk's to handle, as before.
	ended  atomic.Bool
	mu     sync.Mutex
	status int
	scheme string
	stepUp bool
}

func (p *authProbe) set(status int, scheme string, stepUp bool) {
	p.mu.Lock()
	p.status, p.scheme, p.stepUp = status, scheme, stepUp
	p.mu.Unlock()
}

func (p *authProbe) get() (int, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status, p.scheme, p.stepUp
}

type probeKey struct{}

func withAuthProbe(ctx context.Context, p *authProbe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// authWatch is the RoundTripper that watches the calls' HTTP statuses.
type authWatch struct{ next http.RoundTripper }

func (t authWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	p, _ := r.Context().Value(probeKey{}).(*authProbe)
	if p == nil || p.ended.Load() {
		return resp, nil
	}
	challenges := resp.Header.Values("WWW-Authenticate")
	p.set(resp.StatusCode, authScheme(resp.Header.Get("WWW-Authenticate")), upstreamauth.InsufficientScope(challenges))
	// The body is not read further (it may hold anything); the connection
	// is reused if the rest is short.
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
	return nil, &jsonrpc.Error{Code: codeRejected, Message: fmt.Sprintf("MCP server answered HTTP %d", resp.StatusCode)}
}

// authScheme keeps only the scheme of a WWW-Authenticate challenge
// ("Bearer"): its parameters may carry URLs and OAuth values that must not
// reach an agent.
func authScheme(challenge string) string {
	scheme, _, _ := strings.Cut(strings.TrimSpace(challenge), " ")
	for _, r := range scheme {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return ""
		}
	}
	if len(scheme) > 32 {
		return ""
	}
	return scheme
}

// AuthError is a tool call an MCP server refused for authorization (HTTP
// 401 or 403). Its hint names the server, the status and what to do; it
// never carries a token, a URL or a challenge's parameters.
type AuthError struct {
	Server string
	Status int
	// Scheme is the WWW-Authenticate scheme, when the server sent one.
	Scheme string
	// StepUp is a 403 whose Bearer challenge is insufficient_scope: a new
	// sign-in can grant the scope.
	StepUp bool
	err    error
}

func (e *AuthError) Error() string { return fmt.Sprintf("%s (%v)", e.AuthHint(), e.err) }
func (e *AuthError) Unwrap() error { return e.err }

// AuthStatus is the HTTP status (401 or 403).
func (e *AuthError) AuthStatus() int { return e.Status }

// AuthHint is a message for the user. It names the command that signs
// the computer in, never an authorization URL (the specification forbids
// one in auth_hint: an agent must not be handed a sign-in link).
func (e *AuthError) AuthHint() string {
	login := "smcp computer auth login " + shellQuote(e.Server)
	if e.StepUp {
		return fmt.Sprintf("MCP server %q refused the call (HTTP 403 Forbidden, insufficient_scope): the computer's token lacks a scope this tool needs; "+
			"sign in again on the computer with `%s` to grant it", e.Server, login)
	}
	if e.Status == http.StatusForbidden {
		return fmt.Sprintf("MCP server %q refused the call (HTTP 403 Forbidden): its credentials lack the permission or scope for this tool; "+
			"update them in this computer's configuration", e.Server)
	}
	with := ""
	if e.Scheme != "" {
		with = " with " + e.Scheme
	}
	if strings.EqualFold(e.Scheme, "Bearer") {
		return fmt.Sprintf("MCP server %q needs authorization (HTTP 401 Unauthorized) with Bearer: sign the computer in with `%s` "+
			"(or give it credentials in the server's headers in its configuration) and retry", e.Server, login)
	}
	return fmt.Sprintf("MCP server %q needs authorization (HTTP 401 Unauthorized): give this computer credentials%s for it "+
		"(the server's headers in its configuration) and retry", e.Server, with)
}

// shellQuote quotes a server name for a command line when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
