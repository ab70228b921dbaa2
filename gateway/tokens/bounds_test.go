package tokens_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// h2cServer serves, on loopback over h2c only, a handler that authenticates
// the bearer token of each request with v under the request's context, as
// the gateway's front ends do. entered receives one value per request
// before it authenticates.
func h2cServer(t *testing.T, v *tokens.Verifier, entered chan<- struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Protocols: new(http.Protocols),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			if _, err := v.Authenticate(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
			}
		}),
	}
	srv.Protocols.SetUnencryptedHTTP2(true)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

// Forged tokens whose HTTP/2 streams are reset while the issuer's keys are
// being fetched (an h2c RST_STREAM cancels the request's context at once)
// fetch no more than tokens that wait: the fetch is detached from the
// request that started it and counts against the refresh interval when it
// starts. Before, each reset cancelled its fetch, which then counted for
// nothing: 60 forged tokens made 59 discovery and 60 JWKS fetches.
func TestFetchBoundHoldsUnderH2CStreamResets(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	stray := tokentest.NewKey(t, "stray", jose.RS256)
	iss := tokentest.New(t, audience, key)
	v := newVerifier(t, iss, nil, func(c *tokens.Config) {
		c.RefreshInterval = time.Hour
		c.FetchTimeout = 2 * testwait.Timeout // the held fetch outlives the test's requests
	})
	entered := make(chan struct{}, 1)
	url := h2cServer(t, v, entered)
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: p}}
	t.Cleanup(client.CloseIdleConnections)
	iss.Hold()
	const forged = 60
	for i := range forged {
		k := *stray
		k.ID = fmt.Sprintf("forged-%d", i) // a key id not held: a reason to fetch
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokentest.Sign(t, &k, scoped(iss, nil)))
		answered := make(chan error, 1)
		go func() {
			resp, err := client.Do(req)
			if err == nil {
				_ = resp.Body.Close()
				err = fmt.Errorf("answered %s", resp.Status)
			}
			answered <- err
		}()
		select {
		case <-entered:
		case <-time.After(testwait.Timeout):
			t.Fatalf("request %d never reached the handler", i)
		}
		testwait.Until(t, "a fetch held at the issuer", func() bool { return iss.Waiting() > 0 })
		cancel() // RST_STREAM
		if err := <-answered; !errors.Is(err, context.Canceled) {
			t.Fatalf("request %d: %v, want it cancelled while the keys are fetched", i, err)
		}
	}
	if d, j := iss.DiscoveryFetches(), iss.JWKSFetches(); d > 1 || j > 1 {
		t.Fatalf("%d forged tokens with reset streams made %d discovery and %d JWKS fetches, want at most 1 each", forged, d, j)
	}
	iss.Release()
	// The detached fetch ends and its keys serve the next token.
	if _, err := v.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, nil))); err != nil {
		t.Fatal(err)
	}
	if d, j := iss.DiscoveryFetches(), iss.JWKSFetches(); d != 1 || j != 1 {
		t.Fatalf("%d discovery and %d JWKS fetches in all, want 1 each", d, j)
	}
}

// An issuer's answers are read up to tokens.MaxIssuerDocumentBytes: a
// larger discovery document is refused, not held in memory whole, and an
// error page is logged as a short prefix, not whole.
func TestIssuerBodiesAreBounded(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, audience, key)
	pad := strings.Repeat("x", 8*tokens.MaxIssuerDocumentBytes)
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big/.well-known/openid-configuration":
			// Valid, and fit for use but for its size.
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"padding":"%s"}`, issuer+"/big", iss.URL+"/keys", pad)
		default:
			// Within the bound: read, and quoted in the error.
			http.Error(w, "upstream failure "+pad[:tokens.MaxIssuerDocumentBytes/2], http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	issuer = srv.URL

	big := newVerifier(t, iss, nil, func(c *tokens.Config) { c.Issuer = issuer + "/big" })
	err := big.Prefetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", tokens.MaxIssuerDocumentBytes)) {
		t.Fatalf("an 8 MiB discovery document: %v, want refused as larger than the bound", err)
	}

	log := &testwait.Buffer{}
	failing := newVerifier(t, iss, log, func(c *tokens.Config) { c.Issuer = issuer + "/failing" })
	_, err = failing.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, map[string]any{"iss": issuer + "/failing"})))
	if err == nil {
		t.Fatal("a token accepted without the issuer's keys")
	}
	line := log.String()
	if !strings.Contains(line, "issuer's keys not fetched") || !strings.Contains(line, "500 Internal Server Error: upstream failure") {
		t.Fatalf("the failed fetch is not logged with its status and the start of its body: %.300s", line)
	}
	if len(line) > 2048 {
		t.Fatalf("a %d-byte log for one failed fetch: the error page is quoted whole", len(line))
	}
}

// A token's lifetime is bounded (default 24 h; exp - iat, or exp - now
// when iat is missing or ahead), the refusal says so, and an accepted
// token's principal expires at its exp.
func TestTokenLifetimeIsBounded(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.ES256)
	iss := tokentest.New(t, audience, key)
	v := newVerifier(t, iss, nil, nil)
	now := time.Now()
	century := now.AddDate(100, 0, 0).Unix()
	for name, tc := range map[string]struct {
		claims map[string]any
		want   string
	}{
		"100 years":            {map[string]any{"exp": century}, "(exp - iat) above the maximum of 24h0m0s"},
		"100 years, no iat":    {map[string]any{"exp": century, "iat": nil}, "(exp - now) above the maximum of 24h0m0s"},
		"an iat in the future": {map[string]any{"exp": century, "iat": century - 60}, "(exp - now) above the maximum"},
		"25 hours":             {map[string]any{"iat": now.Unix(), "exp": now.Add(25 * time.Hour).Unix()}, "lifetime 25h0m0s"},
	} {
		t.Run(name, func(t *testing.T) {
			c := scoped(iss, tc.claims)
			for k, val := range tc.claims {
				if val == nil {
					delete(c, k)
				}
			}
			_, err := v.Authenticate(context.Background(), tokentest.Sign(t, key, c))
			e, ok := smcp.AsError(err)
			if !ok || e.Code != smcp.CodeUnauthenticated || !strings.Contains(e.Message, tc.want) {
				t.Fatalf("refusal %v, want a 401 saying %q", err, tc.want)
			}
		})
	}
	exp := now.Add(23 * time.Hour).Truncate(time.Second)
	p, err := v.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, map[string]any{"exp": exp.Unix()})))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Expires.Equal(exp) {
		t.Fatalf("principal expires %v, want the token's exp %v", p.Expires, exp)
	}
	long := newVerifier(t, iss, nil, func(c *tokens.Config) { c.MaxLifetime = 200 * 365 * 24 * time.Hour })
	if _, err := long.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, map[string]any{"exp": century}))); err != nil {
		t.Fatalf("a configured maximum of 200 years: %v", err)
	}
}

// A token without a name claim may not act under a name a key of the ring
// holds, as the ring's own keys without a name may not; a token whose name
// claim gives it that name may.
func TestTokensMayNotUseKeyBoundNames(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, audience, key)
	ring, err := core.NewKeyRing(core.Key{Key: "bob-key-0123456789", ID: "bob", Name: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	unnamed := tokens.Authenticator{Keys: ring, Tokens: newVerifier(t, iss, nil, func(c *tokens.Config) { c.NameClaim = "" })}
	p, err := unnamed.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = p.CheckAgent("A", "bob")
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeForbidden || !strings.Contains(e.Message, `"bob" belongs to another key`) {
		t.Fatalf("an unnamed token as bob: %v, want a 403", err)
	}
	if err := p.CheckAgent("A", "carol"); err != nil {
		t.Fatalf("an unnamed token as a free name: %v", err)
	}
	named := tokens.Authenticator{Keys: ring, Tokens: newVerifier(t, iss, nil, nil)}
	p, err = named.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, map[string]any{"preferred_username": "bob"})))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckAgent("A", "bob"); err != nil {
		t.Fatalf("a token whose name claim is bob: %v", err)
	}
}
