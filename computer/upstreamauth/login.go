package upstreamauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/auth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/oauthex"
)

// Server is an MCP server to sign in to.
type Server struct {
	// ID is the bundle id, Name the name in the configuration.
	ID, Name string
	// URL is the server's endpoint (the OAuth resource).
	URL string
	// SSE is true for the SSE transport, false for streamable HTTP.
	SSE bool
	// Headers are the configured headers sent on every request.
	Headers map[string]string
}

// LoginOptions configure Login.
type LoginOptions struct {
	Store *Store
	// OpenURL shows the authorization URL to the person signing in (opens
	// a browser, or prints it). It must not block until the sign-in ends.
	OpenURL func(ctx context.Context, authURL string) error
	// ClientIDMetadataURL is the computer's client ID metadata document
	// (an https URL), used when the authorization server supports it;
	// otherwise the client registers dynamically (RFC 7591).
	ClientIDMetadataURL string
	// ClientName is the client_name of a dynamic registration.
	ClientName string
	// HTTPClient makes the discovery, registration and token requests
	// (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// ErrNoSignIn is returned when the server let the computer in without
// credentials: there is nothing to sign in to.
var ErrNoSignIn = errors.New("the MCP server answered without asking for a sign-in")

// Login signs the computer in to one MCP server, as a desktop does (RFC
// 8252): a callback listener on a loopback port of its own, the
// authorization URL shown to the person (OpenURL), then the sign-in of
// Begin completed with the callback's answer.
func Login(ctx context.Context, s Server, o LoginOptions) (*Entry, error) {
	if o.OpenURL == nil {
		return nil, errors.New("sign-in: no way to show the authorization URL (LoginOptions.OpenURL)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sign-in callback listener: %w", err)
	}
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	results := make(chan callbackResult, 1)
	srv := &http.Server{Handler: callbackHandler(results), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()

	p, err := Begin(ctx, s, redirect, o)
	if err != nil {
		return nil, err
	}
	if err := o.OpenURL(ctx, p.URL); err != nil {
		p.Cancel()
		return nil, fmt.Errorf("open the authorization URL: %w", err)
	}
	select {
	case r := <-results:
		if r.err != "" {
			return p.Fail(r.err)
		}
		return p.Complete(r.code, r.state, r.iss)
	case <-ctx.Done():
		p.Cancel()
		return nil, fmt.Errorf("waiting for the sign-in callback: %w", context.Cause(ctx))
	}
}

// SignIn is one sign-in in progress, driven by its host: Begin makes the
// authorization URL, the host shows it to a person and hands the
// authorization response back (Complete). A SignIn never opens a browser
// or binds a port: the host may be `smcp computer auth login` (a loopback
// callback) or a gateway that receives the callback for a headless
// computer. The go-sdk's AuthorizationCodeHandler runs the grant (PKCE
// S256, state and RFC 9207 iss checked) in a goroutine that Complete, Fail
// or Cancel ends and awaits.
type SignIn struct {
	// URL is the authorization URL to show to the person signing in.
	URL string
	// State is the URL's state parameter: a host that receives callbacks
	// for several sign-ins routes the answer by it.
	State string

	answers chan callbackResult
	cancel  context.CancelCauseFunc
	done    chan struct{}
	entry   *Entry
	err     error
}

var errSignInCancelled = errors.New("sign-in cancelled")

// Begin starts a sign-in to s whose authorization response goes to
// redirectURL. ctx bounds the whole sign-in. It returns once the URL is
// known (after discovery and, when needed, client registration).
func Begin(ctx context.Context, s Server, redirectURL string, o LoginOptions) (*SignIn, error) {
	if o.Store == nil {
		return nil, ErrNoKey
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	prev, err := o.Store.Get(s.ID, s.URL)
	if err != nil {
		return nil, err
	}
	resp, err := probe(ctx, o.HTTPClient, s, "")
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("server %q (HTTP %d): %w", s.Name, resp.StatusCode, ErrNoSignIn)
	}
	// The challenge is kept for the handler; the body is not needed.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(nil))
	// A 403 that is no insufficient_scope is no sign-in matter: the
	// handler would return at once with nothing signed in. A new sign-in
	// is what the user asked for, so it is run as for a 401.
	resp.StatusCode = http.StatusUnauthorized
	asm, err := discover(ctx, o.HTTPClient, s.URL, resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, err
	}

	rctx, cancel := context.WithCancelCause(ctx)
	p := &SignIn{answers: make(chan callbackResult, 1), cancel: cancel, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(p.done)
		p.entry, p.err = run(rctx, s, o, prev, asm, resp, redirectURL, urls, p.answers)
	}()
	select {
	case u := <-urls:
		p.URL = u
		if pu, err := url.Parse(u); err == nil {
			p.State = pu.Query().Get("state")
		}
		return p, nil
	case <-p.done:
		cancel(nil)
		return nil, p.err
	}
}

// Complete hands the authorization response (code, state and the RFC 9207
// iss, "" when absent) to the sign-in and waits for the token: it is
// checked against the server and stored.
func (p *SignIn) Complete(code, state, iss string) (*Entry, error) {
	return p.answer(callbackResult{code: code, state: state, iss: iss})
}

// Fail ends the sign-in with the authorization server's error code (the
// callback's error parameter).
func (p *SignIn) Fail(oauthError string) (*Entry, error) {
	return p.answer(callbackResult{err: oauthError})
}

func (p *SignIn) answer(r callbackResult) (*Entry, error) {
	select {
	case p.answers <- r:
	default:
		return nil, errors.New("this sign-in was answered already")
	}
	<-p.done
	p.cancel(nil)
	return p.entry, p.err
}

// Cancel abandons the sign-in and waits for its goroutine.
func (p *SignIn) Cancel() {
	p.cancel(errSignInCancelled)
	<-p.done
}

// run is the grant, from the handler's configuration to the stored entry.
func run(ctx context.Context, s Server, o LoginOptions, prev *Entry, asm *oauthex.AuthServerMeta, resp *http.Response,
	redirect string, urls chan<- string, answers <-chan callbackResult) (*Entry, error) {
	hc := o.HTTPClient
	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		Client:      hc,
		// Refresh tokens are stored (encrypted): ask for offline_access
		// where the AS lists it.
		RequestRefreshToken: true,
		ScopeFilter: func(discovered []string) []string {
			if prev == nil {
				return discovered
			}
			// Step-up: what was granted before, and what a server's
			// insufficient_scope asked for since.
			out := slices.Clone(discovered)
			for _, sc := range slices.Concat(prev.Scopes, prev.StepUp) {
				if !slices.Contains(out, sc) {
					out = append(out, sc)
				}
			}
			return out
		},
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			urls <- a.URL
			select {
			case r := <-answers:
				if r.err != "" {
					return nil, fmt.Errorf("the authorization server refused the sign-in: %s", r.err)
				}
				return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the authorization response: %w", context.Cause(ctx))
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = c, t
			return c.TokenSource(ctx, t), nil
		},
	}
	if o.ClientIDMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientIDMetadataURL}
	}
	if prev != nil && prev.Issuer == asm.Issuer && prev.Client.ID != "" && prev.Client.How != "cimd" {
		pc := &oauthex.ClientCredentials{ClientID: prev.Client.ID}
		if prev.Client.Secret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: prev.Client.Secret}
		}
		cfg.PreregisteredClient = pc
	} else {
		name := o.ClientName
		if name == "" {
			name = "smcp computer"
		}
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              name,
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("sign-in: %w", err)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("sign-in to %q: %w", s.Name, err)
	}
	if got.tok == nil {
		return nil, fmt.Errorf("sign-in to %q: no token was issued", s.Name)
	}
	// The handler's source may have refreshed already (and the AS rotated
	// the refresh token): the token stored is its current one.
	if ts, err := h.TokenSource(ctx); err == nil && ts != nil {
		if tok, err := ts.Token(); err == nil {
			got.tok = tok
		}
	}

	how := "dcr"
	switch {
	case cfg.PreregisteredClient != nil:
		how = prev.Client.How
	case o.ClientIDMetadataURL != "" && got.cfg.ClientID == o.ClientIDMetadataURL:
		how = "cimd"
	}
	e := &Entry{
		Server: s.ID, Name: s.Name, Resource: s.URL, Issuer: asm.Issuer,
		Client:   Client{ID: got.cfg.ClientID, Secret: got.cfg.ClientSecret, How: how},
		Scopes:   got.cfg.Scopes,
		TokenURL: got.cfg.Endpoint.TokenURL, AuthURL: got.cfg.Endpoint.AuthURL, AuthStyle: got.cfg.Endpoint.AuthStyle,
		RevocationURL: asm.RevocationEndpoint,
		Token:         got.tok,
	}
	if err := o.Store.Put(e); err != nil {
		return nil, err
	}

	// The server takes the token now, or the sign-in was for nothing.
	resp, err = probe(ctx, hc, s, got.tok.AccessToken)
	if err != nil {
		return e, err
	}
	endProbe(ctx, hc, s, resp, got.tok.AccessToken)
	if resp.StatusCode/100 != 2 {
		return e, fmt.Errorf("signed in to %q, but the server still answers HTTP %d with the new token", s.Name, resp.StatusCode)
	}
	return e, nil
}

// discover finds the authorization server of a protected MCP server:
// protected resource metadata (RFC 9728, at the challenge's
// resource_metadata or the well-known URIs), then its metadata (RFC 8414
// or OpenID discovery). The go-sdk's handler does the same discovery
// again; this one is for what the store keeps (issuer, revocation).
func discover(ctx context.Context, hc *http.Client, resource string, challenges []string) (*oauthex.AuthServerMeta, error) {
	var urls []string
	if cs, err := oauthex.ParseWWWAuthenticate(challenges); err == nil {
		for _, c := range cs {
			if u := c.Params["resource_metadata"]; u != "" {
				urls = append(urls, u)
			}
		}
	}
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	wk := *ru
	wk.RawQuery = ""
	wk.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	urls = append(urls, wk.String())
	var prm *oauthex.ProtectedResourceMetadata
	for _, u := range urls {
		if prm, err = oauthex.GetProtectedResourceMetadata(ctx, u, resource, hc); err == nil && prm != nil {
			break
		}
	}
	if prm == nil || len(prm.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("the server's protected resource metadata (RFC 9728) names no authorization server")
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], hc)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		return nil, fmt.Errorf("authorization server %s publishes no metadata (RFC 8414 or OpenID discovery)", prm.AuthorizationServers[0])
	}
	return asm, nil
}

// probe makes the request that shows whether the server wants a token: an
// MCP initialize (streamable HTTP) or the event stream's GET (SSE).
func probe(ctx context.Context, hc *http.Client, s Server, token string) (*http.Response, error) {
	var req *http.Request
	var err error
	if s.SSE {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
		}
	} else {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smcp-computer-auth","version":"1"}}}`
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// No client timeout here: an SSE answer is a stream; the status line
	// is all that is read.
	c := *hc
	c.Timeout = 0
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	return resp, nil
}

// endProbe closes what a successful probe opened: the SSE stream, or the
// streamable session (DELETE with its id).
func endProbe(ctx context.Context, hc *http.Client, s Server, resp *http.Response, token string) {
	_ = resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if s.SSE || id == "" || resp.StatusCode/100 != 2 {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.URL, nil)
	if err != nil {
		return
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Authorization", "Bearer "+token)
	if r, err := hc.Do(req); err == nil {
		_ = r.Body.Close()
	}
}

type callbackResult struct{ code, state, iss, err string }

// callbackHandler takes the authorization response at /callback (one).
func callbackHandler(results chan<- callbackResult) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			// The error code only: its description is the AS's text.
			res.err = e
		} else if res.code == "" {
			res.err = "no code in the callback"
		}
		select {
		case results <- res:
		default:
			http.Error(w, "this sign-in has ended already", http.StatusConflict)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != "" {
			_, _ = io.WriteString(w, "<!doctype html><title>Sign-in failed</title><p>Sign-in failed. Return to the terminal.")
			return
		}
		_, _ = io.WriteString(w, "<!doctype html><title>Signed in</title><p>Signed in. You can close this window and return to the terminal.")
	})
	return mux
}

// Revoke revokes an entry's tokens at its authorization server (RFC 7009),
// the refresh token first (which ends the grant at most servers), then the
// access token. It is a no-op when the server has no revocation endpoint.
func Revoke(ctx context.Context, hc *http.Client, e *Entry) error {
	if e.RevocationURL == "" || e.Token == nil {
		return nil
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	var errs []error
	for _, t := range []struct{ tok, hint string }{{e.Token.RefreshToken, "refresh_token"}, {e.Token.AccessToken, "access_token"}} {
		if t.tok == "" {
			continue
		}
		form := url.Values{"token": {t.tok}, "token_type_hint": {t.hint}}
		if e.Client.Secret == "" || e.AuthStyle == oauth2.AuthStyleInParams {
			form.Set("client_id", e.Client.ID)
			if e.Client.Secret != "" {
				form.Set("client_secret", e.Client.Secret)
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.RevocationURL, strings.NewReader(form.Encode()))
		if err != nil {
			return fmt.Errorf("revoke: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if e.Client.Secret != "" && e.AuthStyle != oauth2.AuthStyleInParams {
			req.SetBasicAuth(url.QueryEscape(e.Client.ID), url.QueryEscape(e.Client.Secret))
		}
		resp, err := hc.Do(req)
		if err != nil {
			errs = append(errs, fmt.Errorf("revoke the %s: %w", t.hint, err))
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("revoke the %s: the authorization server answered HTTP %d", t.hint, resp.StatusCode))
		}
	}
	return errors.Join(errs...)
}
