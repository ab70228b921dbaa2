// Package tokentest is an OpenID Connect issuer for tests: an HTTP server on
// loopback serving /.well-known/openid-configuration and a JWKS, whose
// published keys can be changed while it runs (a rotation), and that signs
// tokens with go-jose. It counts the discovery and JWKS fetches it gets, and
// can hold them unanswered (Hold) to show what a fetch in flight does.
package tokentest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Key is a signing key of the issuer.
type Key struct {
	ID   string
	Alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// NewKey makes a key for alg: RS256 (RSA 2048) or ES256 (P-256).
func NewKey(t testing.TB, id string, alg jose.SignatureAlgorithm) *Key {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		t.Fatalf("tokentest: no key for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &Key{ID: id, Alg: alg, priv: priv}
}

func (k *Key) jwk() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.ID, Algorithm: string(k.Alg), Use: "sig"}
}

// Issuer is a running test issuer.
type Issuer struct {
	// URL is the issuer's URL, its tokens' "iss".
	URL string
	// Audience is the "aud" Claims puts in tokens.
	Audience string

	srv         *httptest.Server
	mu          sync.Mutex
	keys        []*Key        // published
	held        chan struct{} // non-nil while Hold is in force
	fetches     atomic.Int64
	discoveries atomic.Int64
	waiting     atomic.Int64
}

// New starts an issuer on loopback publishing keys (stopped at the end of
// the test).
func New(t testing.TB, audience string, keys ...*Key) *Issuer {
	t.Helper()
	iss := &Issuer{Audience: audience, keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		iss.discoveries.Add(1)
		if !iss.wait(r) {
			return
		}
		writeJSON(w, map[string]any{
			"issuer":                                iss.URL,
			"jwks_uri":                              iss.URL + "/keys",
			"authorization_endpoint":                iss.URL + "/authorize",
			"token_endpoint":                        iss.URL + "/token",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		iss.fetches.Add(1)
		if !iss.wait(r) {
			return
		}
		iss.mu.Lock()
		var set jose.JSONWebKeySet
		for _, k := range iss.keys {
			set.Keys = append(set.Keys, k.jwk())
		}
		iss.mu.Unlock()
		writeJSON(w, set)
	})
	iss.srv = httptest.NewServer(mux)
	iss.URL = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	t.Cleanup(iss.Release) // before Close, which waits for held requests
	return iss
}

// wait holds r while Hold is in force; false: r's client left first.
func (iss *Issuer) wait(r *http.Request) bool {
	iss.mu.Lock()
	held := iss.held
	iss.mu.Unlock()
	if held == nil {
		return true
	}
	iss.waiting.Add(1)
	defer iss.waiting.Add(-1)
	select {
	case <-held:
		return true
	case <-r.Context().Done():
		return false
	}
}

// Hold makes discovery and JWKS requests wait unanswered, until Release or
// until their client gives up.
func (iss *Issuer) Hold() {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	if iss.held == nil {
		iss.held = make(chan struct{})
	}
}

// Release answers the requests Hold holds, and those after.
func (iss *Issuer) Release() {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	if iss.held != nil {
		close(iss.held)
		iss.held = nil
	}
}

// Waiting counts the requests Hold holds now.
func (iss *Issuer) Waiting() int { return int(iss.waiting.Load()) }

// DiscoveryFetches counts the discovery requests received so far.
func (iss *Issuer) DiscoveryFetches() int { return int(iss.discoveries.Load()) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Publish replaces the published keys: a rotation.
func (iss *Issuer) Publish(keys ...*Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys = keys
}

// Close stops the issuer: discovery and keys can no longer be fetched.
func (iss *Issuer) Close() { iss.srv.Close() }

// JWKSFetches counts the JWKS requests received so far.
func (iss *Issuer) JWKSFetches() int { return int(iss.fetches.Load()) }

// Claims are a valid token's claims for subject sub: this issuer, its
// audience, issued now, expiring in an hour; extra is added over them.
func (iss *Issuer) Claims(sub string, extra map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": iss.URL, "aud": iss.Audience, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// Sign signs claims with key, its id in the header.
func Sign(t testing.TB, key *Key, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: key.Alg, Key: key.priv},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.ID))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Unsigned is claims as a token with "alg": "none" and no signature.
func Unsigned(t testing.TB, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "."
}

// Tampered is token with one bit of its signature changed.
func Tampered(t testing.TB, token string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	head, rest := token[:len(token)-len(lastPart(token))], lastPart(token)
	sig, err := enc.DecodeString(rest)
	if err != nil || len(sig) == 0 {
		t.Fatalf("tokentest: not a signed token")
	}
	sig[len(sig)/2] ^= 1
	return head + enc.EncodeToString(sig)
}

func lastPart(token string) string {
	for i := len(token) - 1; i >= 0; i-- {
		if token[i] == '.' {
			return token[i+1:]
		}
	}
	return token
}
