package tokens_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const audience = "smcp-gateway-test"

func newVerifier(t *testing.T, iss *tokentest.Issuer, log *testwait.Buffer, edit func(*tokens.Config)) *tokens.Verifier {
	t.Helper()
	cfg := tokens.Config{
		Issuer: iss.URL, Audience: audience,
		OfficesClaim: "smcp_offices", RolesClaim: "smcp_roles", NameClaim: "preferred_username",
	}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	if edit != nil {
		edit(&cfg)
	}
	v, err := tokens.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scoped are the claims of a token for agent alice in office A.
func scoped(iss *tokentest.Issuer, extra map[string]any) map[string]any {
	c := iss.Claims("user-1", map[string]any{
		"smcp_offices": []string{"A"}, "smcp_roles": []string{"agent"}, "preferred_username": "alice",
	})
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func TestValidTokensMapToAPrincipal(t *testing.T) {
	rsa := tokentest.NewKey(t, "rsa-1", jose.RS256)
	ec := tokentest.NewKey(t, "ec-1", jose.ES256)
	iss := tokentest.New(t, audience, rsa, ec)
	v := newVerifier(t, iss, nil, nil)
	for _, key := range []*tokentest.Key{rsa, ec} {
		t.Run(string(key.Alg), func(t *testing.T) {
			p, err := v.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, nil)))
			if err != nil {
				t.Fatal(err)
			}
			want := core.Principal{ID: "oidc:user-1", Roles: []string{"agent"}, Offices: []string{"A"}, Name: "alice"}
			if p.ID != want.ID || p.Name != want.Name || strings.Join(p.Roles, ",") != "agent" || strings.Join(p.Offices, ",") != "A" {
				t.Fatalf("principal %+v, want %+v", *p, want)
			}
			if p.AllowsOffice("B") || p.AllowsRole(smcp.RoleComputer) {
				t.Fatalf("principal %+v reaches beyond its claims", *p)
			}
		})
	}
	// Claims given as one string, and a dotted path into an object
	// (Keycloak's realm_access.roles).
	v2 := newVerifier(t, iss, nil, func(c *tokens.Config) { c.RolesClaim = "realm_access.roles"; c.NameClaim = "" })
	p, err := v2.Authenticate(context.Background(), tokentest.Sign(t, rsa, iss.Claims("user-2", map[string]any{
		"smcp_offices": "B", "realm_access": map[string]any{"roles": []string{"offline_access", "computer"}},
	})))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Offices, ",") != "B" || strings.Join(p.Roles, ",") != "computer" || p.Name != "" {
		t.Fatalf("principal %+v", *p)
	}
	// No claims configured: a valid token is unbound, as a key without
	// offices, roles or name.
	v3 := newVerifier(t, iss, nil, func(c *tokens.Config) { c.OfficesClaim, c.RolesClaim, c.NameClaim = "", "", "" })
	p, err = v3.Authenticate(context.Background(), tokentest.Sign(t, rsa, iss.Claims("user-3", nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllowsOffice("any") || !p.AllowsRole(smcp.RoleComputer) || p.Name != "" {
		t.Fatalf("principal %+v", *p)
	}
}

// Every refusal is a 401 naming its reason, in the answer and in the log,
// and neither carries the token nor its signature.
func TestRefusalsSayWhyAndNeverTheToken(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	stray := tokentest.NewKey(t, "stray", jose.RS256)
	iss := tokentest.New(t, audience, key)
	other := tokentest.New(t, audience, stray)
	log := &testwait.Buffer{}
	v := newVerifier(t, iss, log, nil)
	hs := func(t *testing.T) string {
		// Algorithm confusion: HMAC with a published value as the secret.
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("k1-public-modulus-as-secret-0123456789")},
			(&jose.SignerOptions{}).WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := signer.Sign(mustJSON(t, scoped(iss, nil)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := obj.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name   string
		token  func(t *testing.T) string
		reason string
	}{
		{"expired", func(t *testing.T) string {
			return tokentest.Sign(t, key, scoped(iss, map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}))
		}, "expired at"},
		{"wrong audience", func(t *testing.T) string {
			return tokentest.Sign(t, key, scoped(iss, map[string]any{"aud": "another-service"}))
		}, `wrong audience "another-service"`},
		{"wrong issuer, our key", func(t *testing.T) string {
			return tokentest.Sign(t, key, scoped(iss, map[string]any{"iss": other.URL}))
		}, "wrong issuer"},
		{"wrong issuer, its key", func(t *testing.T) string {
			return tokentest.Sign(t, stray, other.Claims("user-1", nil))
		}, "wrong issuer"},
		{"alg none", func(t *testing.T) string { return tokentest.Unsigned(t, scoped(iss, nil)) }, "alg none"},
		{"key not in the JWKS", func(t *testing.T) string { return tokentest.Sign(t, stray, scoped(iss, nil)) },
			`unknown signing key (kid "stray"`},
		{"tampered signature", func(t *testing.T) string {
			return tokentest.Tampered(t, tokentest.Sign(t, key, scoped(iss, nil)))
		}, "bad signature"},
		{"tampered claims", func(t *testing.T) string {
			good := tokentest.Sign(t, key, scoped(iss, nil))
			forged := tokentest.Unsigned(t, scoped(iss, map[string]any{"smcp_offices": []string{"*"}}))
			parts, sig := strings.Split(forged, "."), good[strings.LastIndex(good, ".")+1:]
			head := good[:strings.Index(good, ".")]
			return head + "." + parts[1] + "." + sig
		}, "bad signature"},
		{"HS256 (algorithm confusion)", hs, `signature algorithm "HS256" not accepted`},
		{"no subject", func(t *testing.T) string { return tokentest.Sign(t, key, scoped(iss, map[string]any{"sub": ""})) }, "no subject"},
		{"no offices claim", func(t *testing.T) string {
			c := scoped(iss, nil)
			delete(c, "smcp_offices")
			return tokentest.Sign(t, key, c)
		}, `no offices claim "smcp_offices"`},
		{"empty offices claim", func(t *testing.T) string {
			return tokentest.Sign(t, key, scoped(iss, map[string]any{"smcp_offices": []string{}}))
		}, `no offices claim "smcp_offices"`},
		{"no known role", func(t *testing.T) string {
			return tokentest.Sign(t, key, scoped(iss, map[string]any{"smcp_roles": []string{"admin"}}))
		}, "names neither agent nor computer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := tc.token(t)
			if !tokens.LooksLikeJWT(token) {
				t.Fatalf("the test's token does not look like a JWT: it would not reach the verifier")
			}
			before := len(log.String())
			_, err := v.Authenticate(context.Background(), token)
			e, ok := smcp.AsError(err)
			if !ok || e.Code != smcp.CodeUnauthenticated {
				t.Fatalf("refusal %v, want a 401", err)
			}
			if !strings.Contains(e.Message, tc.reason) {
				t.Fatalf("refusal %q does not say %q", e.Message, tc.reason)
			}
			line := log.String()[before:]
			if !strings.Contains(line, "token refused") || !strings.Contains(line, strings.ReplaceAll(tc.reason, `"`, `\"`)) {
				t.Fatalf("log %q does not say %q", line, tc.reason)
			}
			sig := token[strings.LastIndex(token, ".")+1:]
			for _, secret := range []string{token, sig} {
				if secret == "" {
					continue
				}
				if strings.Contains(line, secret) || strings.Contains(e.Message, secret) {
					t.Fatalf("the token (or its signature) is in the log or the answer: %q / %q", line, e.Message)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A key the issuer starts to sign with is accepted without a restart: the
// first token under it fetches the JWKS again. A key the issuer withdraws
// stops being accepted once the held set is past its age.
func TestKeyRotationIsPickedUp(t *testing.T) {
	old := tokentest.NewKey(t, "2026-01", jose.RS256)
	next := tokentest.NewKey(t, "2026-02", jose.ES256)
	iss := tokentest.New(t, audience, old)
	v := newVerifier(t, iss, nil, func(c *tokens.Config) {
		c.RefreshInterval = 20 * time.Millisecond
		c.MaxKeyAge = 200 * time.Millisecond
	})
	ctx := context.Background()
	if _, err := v.Authenticate(ctx, tokentest.Sign(t, old, scoped(iss, nil))); err != nil {
		t.Fatal(err)
	}
	iss.Publish(old, next)
	// Within the refresh interval of the first fetch a new key id waits
	// for the next allowed fetch; polled, not timed.
	testwait.Until(t, "the rotated key accepted", func() bool {
		_, err := v.Authenticate(ctx, tokentest.Sign(t, next, scoped(iss, nil)))
		return err == nil
	})
	iss.Publish(next)
	testwait.Until(t, "the withdrawn key refused", func() bool {
		_, err := v.Authenticate(ctx, tokentest.Sign(t, old, scoped(iss, nil)))
		return err != nil && strings.Contains(err.Error(), "unknown signing key")
	})
	if _, err := v.Authenticate(ctx, tokentest.Sign(t, next, scoped(iss, nil))); err != nil {
		t.Fatal(err)
	}
}

// Tokens under unknown key ids fetch the JWKS at most once per refresh
// interval, and a bad signature under a known key fetches nothing: forged
// tokens cannot make the gateway hammer the issuer.
func TestJWKSFetchesAreBounded(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	stray := tokentest.NewKey(t, "stray", jose.RS256)
	iss := tokentest.New(t, audience, key)
	v := newVerifier(t, iss, nil, func(c *tokens.Config) { c.RefreshInterval = time.Hour })
	ctx := context.Background()
	if _, err := v.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil))); err != nil {
		t.Fatal(err)
	}
	if n := iss.JWKSFetches(); n != 1 {
		t.Fatalf("%d fetches for the first token, want 1", n)
	}
	bad := tokentest.Tampered(t, tokentest.Sign(t, key, scoped(iss, nil)))
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			token := bad
			if i%2 == 0 {
				k := *stray
				k.ID = "stray-" + string(rune('a'+i%26))
				token = tokentest.Sign(t, &k, scoped(iss, nil))
			}
			if _, err := v.Authenticate(ctx, token); err == nil {
				t.Error("a forged token was accepted")
			}
		})
	}
	wg.Wait()
	if n := iss.JWKSFetches(); n != 1 {
		t.Fatalf("%d JWKS fetches after 40 forged tokens within the refresh interval, want 1", n)
	}
	// Past the interval, an unknown key id fetches once more.
	v2 := newVerifier(t, iss, nil, func(c *tokens.Config) { c.RefreshInterval = time.Nanosecond })
	if _, err := v2.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil))); err != nil {
		t.Fatal(err)
	}
	before := iss.JWKSFetches()
	if _, err := v2.Authenticate(ctx, tokentest.Sign(t, stray, scoped(iss, nil))); err == nil {
		t.Fatal("stray key accepted")
	}
	if n := iss.JWKSFetches() - before; n != 1 {
		t.Fatalf("an unknown key id past the interval fetched %d times, want 1", n)
	}
}

// An issuer that cannot be reached leaves the keys held in use (past their
// age), and a verifier that never fetched refuses with that reason.
func TestIssuerDownKeepsTheKeysHeld(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, audience, key)
	log := &testwait.Buffer{}
	v := newVerifier(t, iss, log, func(c *tokens.Config) {
		c.RefreshInterval = time.Nanosecond
		c.MaxKeyAge = time.Nanosecond
	})
	cold := newVerifier(t, iss, nil, nil)
	ctx := context.Background()
	if err := v.Prefetch(ctx); err != nil {
		t.Fatal(err)
	}
	iss.Close()
	for range 3 {
		if _, err := v.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil))); err != nil {
			t.Fatalf("held key refused while the issuer is down: %v", err)
		}
	}
	if !strings.Contains(log.String(), "issuer's keys not fetched") {
		t.Fatalf("the failed fetch was not logged: %s", log.String())
	}
	_, err := cold.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil)))
	if err == nil || !strings.Contains(err.Error(), "keys cannot be fetched") {
		t.Fatalf("no keys ever fetched: %v", err)
	}
}

func TestNewVerifierRefusesUnsafeConfigs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tokens.Config
		want string
	}{
		{"no issuer", tokens.Config{Audience: "a"}, "issuer is required"},
		{"no audience", tokens.Config{Issuer: "https://id.example.com"}, "audience is required"},
		{"plain http to another host", tokens.Config{Issuer: "http://id.example.com", Audience: "a"}, "must be https"},
		{"symmetric algorithm", tokens.Config{Issuer: "https://id.example.com", Audience: "a", Algorithms: []string{"HS256"}}, "not an asymmetric"},
		{"none", tokens.Config{Issuer: "https://id.example.com", Audience: "a", Algorithms: []string{"none"}}, "not an asymmetric"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.NewVerifier(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"https://id.example.com/realms/x", "http://127.0.0.1:9000", "http://localhost:9000", "http://[::1]:9000"} {
		if _, err := tokens.NewVerifier(tokens.Config{Issuer: ok, Audience: "a"}); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for s, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": true,
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.":      true, // unsigned: refused by the verifier, with its reason
		"my-secret-key":                             false,
		"a.b.c":                                     false, // "a" is not a JSON header
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0":      false,
		"eyJhbGciOiJSUzI1NiJ9..c2ln":                false,
		"eyJhbGciOiJSUzI1NiJ9.e30.c2ln.more":        false,
		"eyJhbGciOiJSUzI1NiJ9.e30.c2l+":             false,
		"":                                          false,
	} {
		if got := tokens.LooksLikeJWT(s); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v", s, got)
		}
	}
}

// The gateway's authenticator sends JWTs to the verifier and everything
// else to the keys.
func TestAuthenticatorRoutesByShape(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, audience, key)
	ring, err := core.NewKeyRing(core.Key{Key: "api-key-1", ID: "key-one"})
	if err != nil {
		t.Fatal(err)
	}
	v := newVerifier(t, iss, nil, nil)
	both := tokens.Authenticator{Keys: ring, Tokens: v}
	ctx := context.Background()
	if p, err := both.Authenticate(ctx, "api-key-1"); err != nil || p.ID != "key-one" {
		t.Fatalf("key: %+v %v", p, err)
	}
	if p, err := both.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil))); err != nil || p.ID != "oidc:user-1" {
		t.Fatalf("token: %+v %v", p, err)
	}
	if _, err := both.Authenticate(ctx, "wrong"); err == nil || !strings.Contains(err.Error(), "invalid API key") {
		t.Fatalf("wrong key: %v", err)
	}
	if _, err := both.Authenticate(ctx, ""); err == nil || !strings.Contains(err.Error(), "missing API key or bearer token") {
		t.Fatalf("no credential: %v", err)
	}
	keysOnly := tokens.Authenticator{Keys: ring}
	if _, err := keysOnly.Authenticate(ctx, tokentest.Sign(t, key, scoped(iss, nil))); err == nil {
		t.Fatal("a token signed in without a verifier")
	}
	tokensOnly := tokens.Authenticator{Tokens: v}
	for cred, want := range map[string]string{"": "missing bearer token", "api-key-1": "not a bearer token"} {
		if _, err := tokensOnly.Authenticate(ctx, cred); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%q: %v, want %q", cred, err, want)
		}
	}
}

// Any credential: no panic, never accepted (the fuzzer cannot sign), a 401,
// and the answer never quotes the credential.
func FuzzAuthenticate(f *testing.F) {
	key := tokentest.NewKey(f, "k1", jose.ES256)
	iss := tokentest.New(f, audience, key)
	good := tokentest.Sign(f, key, iss.Claims("u", nil))
	f.Add(good)
	f.Add(tokentest.Tampered(f, good))
	f.Add(tokentest.Unsigned(f, iss.Claims("u", nil)))
	f.Add("eyJhbGciOiJSUzI1NiIsImtpZCI6Imsxx0.e30.")
	f.Add("a.b.c")
	v, err := tokens.NewVerifier(tokens.Config{Issuer: iss.URL, Audience: audience, RefreshInterval: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := v.Authenticate(context.Background(), good); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cred string) {
		if cred == good {
			return
		}
		p, err := v.Authenticate(context.Background(), cred)
		if err == nil {
			t.Fatalf("accepted %q as %+v", cred, p)
		}
		e, ok := smcp.AsError(err)
		if !ok || e.Code != smcp.CodeUnauthenticated {
			t.Fatalf("refusal %v", err)
		}
		if len(cred) >= 16 && strings.Contains(e.Message, cred) {
			t.Fatalf("the refusal quotes the credential: %q", e.Message)
		}
	})
}

// The rules claim's values map to rule sets (one string or a list; values
// not mapped add none; no claim, no rule set); the principal carries the
// claims and the issuer.
func TestRulesClaimMapsToRuleSets(t *testing.T) {
	key := tokentest.NewKey(t, "k", jose.ES256)
	iss := tokentest.New(t, audience, key)
	v := newVerifier(t, iss, nil, func(c *tokens.Config) {
		c.RulesClaim = "groups"
		c.RuleSetsByClaim = map[string][]string{"echo-users": {"echo-only"}, "interns": {"safe", "echo-only"}}
	})
	for _, tc := range []struct {
		groups any
		want   []string
	}{
		{[]string{"echo-users"}, []string{"echo-only"}},
		{"interns", []string{"safe", "echo-only"}},
		{[]string{"interns", "echo-users", "staff"}, []string{"safe", "echo-only"}},
		{[]string{"staff"}, nil},
		{nil, nil},
	} {
		extra := map[string]any{}
		if tc.groups != nil {
			extra["groups"] = tc.groups
		}
		p, err := v.Authenticate(context.Background(), tokentest.Sign(t, key, scoped(iss, extra)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.RuleSets, tc.want) {
			t.Errorf("groups %v: rule sets %v, want %v", tc.groups, p.RuleSets, tc.want)
		}
		if p.Issuer != iss.URL || p.Claims["preferred_username"] != "alice" {
			t.Errorf("principal issuer %q claims %v", p.Issuer, p.Claims)
		}
	}
}
