package upstreamauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/oauthex"
)

// Transport is the http.RoundTripper of one MCP server's session: it puts
// the server's stored access token on each request (refreshing it before
// it expires, with x/oauth2, and writing the refreshed token back to the
// store), and sends the request anonymously when there is no usable token,
// so that the server's 401 reaches the computer's 4006 sideband. It never
// starts a sign-in: that needs a person (`smcp computer auth login`).
type Transport struct {
	Store *Store
	// Server is the bundle id, Resource the server's URL.
	Server, Resource string
	Base             http.RoundTripper
	Log              *slog.Logger

	mu  sync.Mutex
	src oauth2.TokenSource
	// refused is the Updated time of the entry whose refresh the AS
	// refused: it is not tried again until a sign-in writes a new one
	// (else every request would ask the token endpoint again).
	refused time.Time
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	src := t.source()
	sent := false
	if src != nil {
		tok, err := src.Token()
		switch {
		case err != nil:
			t.logRefresh(err)
			t.refuse(src)
		case tok.AccessToken != "":
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", tok.Type()+" "+tok.AccessToken)
			sent = true
		}
	}
	resp, err := t.Base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		// The token was refused (revoked, or a new sign-in replaced it in
		// the store): read the store afresh for the next request.
		if sent {
			t.forget(src)
		}
	case http.StatusForbidden:
		// A step-up sign-in writes a token with more scopes: the next
		// request reads the store again.
		if t.recordStepUp(resp.Header.Values("WWW-Authenticate")) && sent {
			t.forget(src)
		}
	}
	return resp, nil
}

// source returns the token source, reading the store when there is none.
func (t *Transport) source() oauth2.TokenSource {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.src != nil {
		return t.src
	}
	e, err := t.Store.Get(t.Server, t.Resource)
	if err != nil {
		t.Log.Warn("upstream auth: token store not readable; calling the server without a token", "err", err)
		return nil
	}
	if e == nil || e.Token == nil || e.Updated.Equal(t.refused) {
		return nil
	}
	t.src = newSavingSource(t.Store, e, t.Base, t.Log)
	return t.src
}

// refuse drops a source whose refresh failed and remembers its entry.
func (t *Transport) refuse(src oauth2.TokenSource) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := src.(*savingSource); ok && t.src == src {
		t.refused = s.updated
		t.src = nil
	}
}

func (t *Transport) forget(src oauth2.TokenSource) {
	t.mu.Lock()
	if t.src == src {
		t.src = nil
	}
	t.mu.Unlock()
}

// logRefresh logs a failed refresh by its OAuth error code only: the
// error's text may carry the token endpoint's answer.
func (t *Transport) logRefresh(err error) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		t.Log.Warn("upstream auth: token refresh refused; sign in again with `smcp computer auth login`", "server", t.Server, "oauth_error", re.ErrorCode)
		return
	}
	// Not an answer of the token endpoint (a network error): it names the
	// endpoint's URL at most.
	t.Log.Warn("upstream auth: token refresh failed", "server", t.Server, "err", err)
}

// recordStepUp keeps the scopes of an insufficient_scope challenge so that
// the next sign-in asks for them (step-up authorization). It reports
// whether the challenge was one.
func (t *Transport) recordStepUp(challenges []string) bool {
	cs, err := oauthex.ParseWWWAuthenticate(challenges)
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Scheme != "bearer" || c.Params["error"] != "insufficient_scope" {
			continue
		}
		want := strings.Fields(c.Params["scope"])
		if len(want) == 0 {
			return true
		}
		err := t.Store.Modify(t.Server, t.Resource, func(e *Entry) {
			for _, s := range want {
				if !slices.Contains(e.Scopes, s) && !slices.Contains(e.StepUp, s) {
					e.StepUp = append(e.StepUp, s)
				}
			}
		})
		if err != nil {
			t.Log.Warn("upstream auth: cannot record the scopes asked for", "err", err)
		}
		return true
	}
	return false
}

// InsufficientScope reports whether a challenge list is a Bearer
// insufficient_scope (RFC 6750 §3.1).
func InsufficientScope(challenges []string) bool {
	cs, err := oauthex.ParseWWWAuthenticate(challenges)
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// savingSource is the x/oauth2 refreshing token source of an entry that
// writes each new token back to the store, so that a restarted computer
// (or `smcp computer auth list`) sees the refreshed one and a rotated
// refresh token is not lost.
type savingSource struct {
	store            *Store
	server, resource string
	inner            oauth2.TokenSource
	log              *slog.Logger
	// updated is the entry's Updated when the source was made.
	updated time.Time

	mu   sync.Mutex
	last string
}

func newSavingSource(st *Store, e *Entry, base http.RoundTripper, log *slog.Logger) *savingSource {
	// x/oauth2 keeps this context for every refresh; it carries the
	// session's own transport (its pool) and no deadline of one call.
	hc := &http.Client{Transport: base, Timeout: 30 * time.Second}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	return &savingSource{
		store: st, server: e.Server, resource: e.Resource, log: log, updated: e.Updated,
		inner: oauth2.ReuseTokenSourceWithExpiry(e.Token, e.oauthConfig().TokenSource(ctx, e.Token), earlyRefresh(e.Token)),
		last:  e.Token.AccessToken,
	}
}

// earlyRefresh is how long before its expiry a token is refreshed: x/oauth2's
// 10 s, or a quarter of a shorter lifetime (a token of 2 s would otherwise
// be refreshed at every request).
func earlyRefresh(t *oauth2.Token) time.Duration {
	if t.Expiry.IsZero() {
		return 0
	}
	return min(10*time.Second, max(time.Until(t.Expiry)/4, 0))
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.inner.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.AccessToken != s.last {
		s.last = tok.AccessToken
		saved := *tok
		if err := s.store.Modify(s.server, s.resource, func(e *Entry) { e.Token = &saved }); err != nil {
			// The token still works for this process; the next start
			// refreshes again from the stored refresh token (if the AS
			// does not rotate it) or asks for a sign-in.
			s.log.Warn("upstream auth: the refreshed token is not stored", "server", s.server, "err", err)
		}
	}
	return tok, nil
}
