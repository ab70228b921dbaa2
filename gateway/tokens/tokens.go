// Package tokens signs callers in with bearer tokens: JWTs an OpenID Connect
// issuer signs, checked against the issuer's published keys (discovery, then
// its JWKS) and mapped to the same core.Principal as a scoped API key.
//
// The OIDC library (github.com/coreos/go-oidc) does discovery, the checks of
// the signature algorithm, issuer, audience, expiry and not-before; go-jose
// parses keys and verifies signatures. The key set is this package's own
// because the library's (oidc.RemoteKeySet) fetches the JWKS again for every
// token whose key it does not hold or whose signature fails, without any
// bound: each forged token would make the gateway call the identity provider.
// Here a key id not in the set fetches it again at most once per
// Config.RefreshInterval, and a bad signature under a known key fetches
// nothing. Refusals say why (expired, wrong audience, unknown key, ...), never
// with the token.
//
// Authenticator joins a key ring and a Verifier into the one
// core.Authenticator every front end uses: a credential that looks like a JWT
// goes to the Verifier, anything else to the keys.
package tokens

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of Config.
const (
	// DefaultRefreshInterval is the least time between two fetches of the
	// JWKS prompted by tokens (an unknown key id, a key set past its age).
	DefaultRefreshInterval = 10 * time.Second
	// DefaultMaxKeyAge is how long a fetched key set is used before the
	// next token fetches it again, so that a key the issuer withdrew stops
	// being accepted.
	DefaultMaxKeyAge = time.Hour
	// DefaultFetchTimeout bounds one discovery or JWKS request.
	DefaultFetchTimeout = 10 * time.Second
	// DefaultMaxLifetime bounds a token's lifetime (exp - iat): a token
	// valid for years is a leaked credential waiting to happen, and
	// nothing revokes it.
	DefaultMaxLifetime = 24 * time.Hour
	// MaxTokenBytes bounds a token; identity providers' tokens are a few KiB.
	MaxTokenBytes = 16 << 10
	// MaxIssuerDocumentBytes bounds every body read from the issuer: the
	// discovery document, the key set, an error page. Identity providers'
	// are a few KiB.
	MaxIssuerDocumentBytes = 1 << 20
	// IDPrefix starts the Principal.ID of a token's subject.
	IDPrefix = "oidc:"
)

// DefaultAlgorithms are the signature algorithms accepted when Config names
// none: every asymmetric JWS algorithm. Symmetric ones (HS256) and "none" are
// never accepted: the JWKS is public.
var DefaultAlgorithms = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// Config of a Verifier.
type Config struct {
	// Issuer is the issuer's URL, exactly as its tokens' "iss" and its
	// discovery document name it. https, or http on a loopback host.
	Issuer string
	// Audience must be one of a token's "aud".
	Audience string
	// OfficesClaim, RolesClaim and NameClaim name the claims a principal's
	// offices, roles and fixed agent name are read from (a dotted path such
	// as "realm_access.roles" reaches into an object). A claim that is
	// configured must be in the token; one that is not configured leaves
	// the principal unbound in that respect, as a key without offices,
	// roles or name.
	OfficesClaim string
	RolesClaim   string
	NameClaim    string
	// RulesClaim names the claim (one string or a list, e.g. "groups")
	// whose values RuleSetsByClaim maps to rule sets of the keys file
	// (core.Principal.RuleSets); values it does not map add none, and a
	// token without the claim is bound by no rule set.
	RulesClaim      string
	RuleSetsByClaim map[string][]string
	// Algorithms accepted; default DefaultAlgorithms.
	Algorithms []string
	// RefreshInterval, MaxKeyAge and FetchTimeout: see the defaults.
	RefreshInterval time.Duration
	MaxKeyAge       time.Duration
	FetchTimeout    time.Duration
	// MaxLifetime bounds a token's lifetime: exp - iat, or exp - now for a
	// token without iat; default DefaultMaxLifetime.
	MaxLifetime time.Duration
	// HTTPClient fetches discovery and keys; default a client with
	// FetchTimeout. Its response bodies are bounded by
	// MaxIssuerDocumentBytes whatever its transport.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Verifier checks bearer tokens of one issuer. It is safe for concurrent use.
type Verifier struct {
	cfg      Config
	verifier *oidc.IDTokenVerifier
	keys     *keySet
	log      *slog.Logger
}

// NewVerifier checks cfg and makes a Verifier. It fetches nothing: the
// first token does, or Prefetch.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("tokens: an issuer is required")
	}
	if cfg.Audience == "" {
		return nil, errors.New("tokens: an audience is required (a token made for another service must not sign in here)")
	}
	if err := checkURL(cfg.Issuer); err != nil {
		return nil, fmt.Errorf("tokens: issuer: %w", err)
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = DefaultAlgorithms
	}
	for _, a := range cfg.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return nil, fmt.Errorf("tokens: algorithm %q is not an asymmetric JWS algorithm", a)
		}
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.MaxKeyAge <= 0 {
		cfg.MaxKeyAge = DefaultMaxKeyAge
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = DefaultMaxLifetime
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: cfg.FetchTimeout}
	}
	bounded := *cfg.HTTPClient
	next := bounded.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	bounded.Transport = boundedBodies{next: next, limit: MaxIssuerDocumentBytes}
	cfg.HTTPClient = &bounded
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ks := newKeySet(cfg)
	return &Verifier{
		cfg:  cfg,
		keys: ks,
		log:  cfg.Logger,
		verifier: oidc.NewVerifier(cfg.Issuer, ks, &oidc.Config{
			ClientID:             cfg.Audience,
			SupportedSigningAlgs: cfg.Algorithms,
		}),
	}, nil
}

// Issuer is the configured issuer URL.
func (v *Verifier) Issuer() string { return v.cfg.Issuer }

// Prefetch runs discovery and fetches the key set now, so that a wrong
// issuer URL shows at start rather than at the first token.
func (v *Verifier) Prefetch(ctx context.Context) error { return v.keys.prefetch(ctx) }

// Authenticate verifies a token and maps its claims to a principal. A
// refusal is a 401 *smcp.Error whose message gives the reason; it is logged
// with the reason, never with the token.
func (v *Verifier) Authenticate(ctx context.Context, raw string) (*core.Principal, error) {
	p, reason := v.authenticate(ctx, raw)
	if reason != "" {
		v.log.Info("token refused", "reason", reason)
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "token refused: %s", reason)
	}
	return p, nil
}

func (v *Verifier) authenticate(ctx context.Context, raw string) (*core.Principal, string) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Sprintf("token larger than %d bytes", MaxTokenBytes)
	}
	hdr, claims, ok := unverified(raw)
	if !ok {
		return nil, "malformed token"
	}
	// The issuer is read before the signature is checked only to route: a
	// token of another issuer is refused without a key lookup (which could
	// make us fetch our issuer's JWKS for a key it never had). The library
	// checks the issuer again on the verified claims.
	if claims.Issuer != v.cfg.Issuer {
		return nil, "wrong issuer " + quote(claims.Issuer)
	}
	pr := &probe{}
	tok, err := v.verifier.Verify(context.WithValue(ctx, probeKey{}, pr), raw)
	if err != nil {
		return nil, v.reason(err, pr, hdr, claims)
	}
	// The library checked exp (a token without one is expired) and nbf.
	// The lifetime counts from iat, or from now when iat is missing or
	// ahead (an iat in the future would make a long-lived token look short).
	start, basis := tok.IssuedAt, "exp - iat"
	if now := time.Now(); start.IsZero() || start.After(now) {
		start, basis = now, "exp - now"
	}
	if life := tok.Expiry.Sub(start); life > v.cfg.MaxLifetime {
		return nil, fmt.Sprintf("lifetime %s (%s) above the maximum of %s", life.Round(time.Second), basis, v.cfg.MaxLifetime)
	}
	var all map[string]any
	if err := tok.Claims(&all); err != nil {
		return nil, "malformed claims"
	}
	p, reason := v.principal(tok.Subject, all)
	if p != nil {
		// Streams and connections it opens end then (Principal.Bound).
		p.Expires = tok.Expiry
	}
	return p, reason
}

// reason explains a refusal of the library's verifier in words a log
// reader and the caller can act on; the library's own errors are not passed
// on, as they may quote parts of the token.
func (v *Verifier) reason(err error, pr *probe, hdr header, claims unverifiedClaims) string {
	var expired *oidc.TokenExpiredError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled while fetching the issuer's keys"
	case pr.reason != "":
		return pr.reason
	case errors.As(err, &expired):
		return "expired at " + expired.Expiry.UTC().Format(time.RFC3339)
	case !pr.verified:
		// The library refused the token before asking for its key.
		switch {
		case strings.EqualFold(hdr.Alg, "none"):
			return "alg none (unsigned token)"
		case !slices.Contains(v.cfg.Algorithms, hdr.Alg):
			return "signature algorithm " + quote(hdr.Alg) + " not accepted"
		}
		return "malformed token"
	case !claims.Audience.contains(v.cfg.Audience):
		return "wrong audience " + quote(strings.Join(claims.Audience, ","))
	case claims.NotBefore != 0:
		return "not valid yet (nbf)"
	}
	return "claims refused"
}

// principal maps verified claims to a principal.
func (v *Verifier) principal(sub string, claims map[string]any) (*core.Principal, string) {
	if sub == "" {
		return nil, "no subject (sub)"
	}
	p := &core.Principal{ID: IDPrefix + sub, Claims: claims, Issuer: v.cfg.Issuer}
	if c := v.cfg.RulesClaim; c != "" {
		values, _ := stringList(claimAt(claims, c))
		for _, val := range values {
			for _, set := range v.cfg.RuleSetsByClaim[val] {
				if !slices.Contains(p.RuleSets, set) {
					p.RuleSets = append(p.RuleSets, set)
				}
			}
		}
	}
	if c := v.cfg.RolesClaim; c != "" {
		roles, ok := stringList(claimAt(claims, c))
		if !ok {
			return nil, "no roles claim " + quote(c)
		}
		for _, r := range roles {
			if r == smcp.RoleAgent || r == smcp.RoleComputer {
				p.Roles = append(p.Roles, r)
			}
		}
		// An empty Roles would allow every role.
		if len(p.Roles) == 0 {
			return nil, "roles claim " + quote(c) + " names neither agent nor computer"
		}
	}
	if c := v.cfg.OfficesClaim; c != "" {
		offices, ok := stringList(claimAt(claims, c))
		if !ok || len(offices) == 0 { // empty would allow every office
			return nil, "no offices claim " + quote(c)
		}
		p.Offices = offices
	}
	if c := v.cfg.NameClaim; c != "" {
		name, ok := claimAt(claims, c).(string)
		if !ok || name == "" {
			return nil, "no name claim " + quote(c)
		}
		p.Name = name
	}
	return p, ""
}

// claimAt finds a claim by name, or else by a dotted path into objects.
func claimAt(claims map[string]any, name string) any {
	if v, ok := claims[name]; ok {
		return v
	}
	var cur any = claims
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// stringList reads a claim that is one string or an array of strings.
func stringList(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil, false
		}
		return []string{v}, true
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok || s == "" {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// quote quotes a value read from a token for a log line or a refusal,
// bounded, so that a caller cannot fill the log.
func quote(s string) string {
	const most = 64
	if len(s) > most {
		cut := most
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// LooksLikeJWT reports whether s has a JWT's compact form: three base64url
// parts, the first a JSON object (the JOSE header). The signature part may be
// empty (an unsigned token), so that it reaches the Verifier and is refused
// there with its reason.
func LooksLikeJWT(s string) bool {
	h, rest, ok := strings.Cut(s, ".")
	if !ok || h == "" {
		return false
	}
	p, sig, ok := strings.Cut(rest, ".")
	if !ok || p == "" || strings.Contains(sig, ".") {
		return false
	}
	for _, part := range []string{h, p, sig} {
		if strings.IndexFunc(part, notBase64URL) >= 0 {
			return false
		}
	}
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return false
	}
	var obj map[string]any
	return json.Unmarshal(b, &obj) == nil
}

func notBase64URL(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
}

// header is the part of a JOSE header the refusal reasons use.
type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// unverifiedClaims are read before the signature is checked: only to route
// (the issuer) and to explain a refusal, never to accept.
type unverifiedClaims struct {
	Issuer    string   `json:"iss"`
	Audience  audience `json:"aud"`
	NotBefore float64  `json:"nbf"`
}

// audience is "aud": one string or an array.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("aud: %w", err)
	}
	*a = many
	return nil
}

func (a audience) contains(s string) bool { return slices.Contains(a, s) }

// unverified decodes a compact JWS's header and claims without checking
// anything.
func unverified(raw string) (header, unverifiedClaims, bool) {
	var h header
	var c unverifiedClaims
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return h, c, false
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &h) != nil || json.Unmarshal(cb, &c) != nil {
		return h, c, false
	}
	return h, c, true
}

// checkURL accepts https, and http on a loopback host (a local issuer, a
// test): keys fetched over plain HTTP from elsewhere could be anyone's.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q must be https (http only on a loopback host)", s)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Authenticator is the gateway's one core.Authenticator when tokens are on:
// a credential that looks like a JWT goes to Tokens, anything else to Keys.
// Keys may be nil (tokens only). When Keys reserves names (a key ring whose
// keys have fixed names: core.NameReserver), a token without a name claim
// may not use them either, as the ring's own keys without a name may not.
type Authenticator struct {
	Keys   core.Authenticator
	Tokens *Verifier
}

// Authenticate routes credential to the token verifier or the keys.
func (a Authenticator) Authenticate(ctx context.Context, credential string) (*core.Principal, error) {
	switch {
	case a.Tokens != nil && LooksLikeJWT(credential):
		p, err := a.Tokens.Authenticate(ctx, credential)
		if err != nil {
			return nil, err
		}
		if r, ok := a.Keys.(core.NameReserver); ok {
			r.ReserveNames(p)
		}
		return p, nil
	case a.Keys != nil && a.Tokens != nil && credential == "":
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "missing API key or bearer token")
	case a.Keys != nil:
		return a.Keys.Authenticate(ctx, credential)
	case credential == "":
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "missing bearer token")
	}
	return nil, smcp.Errorf(smcp.CodeUnauthenticated, "not a bearer token (a JWT)")
}
