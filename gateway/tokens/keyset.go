package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// probe is how the key set tells Authenticate what it found: the library's
// verifier passes the context through but flattens the key set's error into
// a string.
type probe struct {
	// verified: a key verified the signature (a later refusal is about
	// claims).
	verified bool
	// reason of a refusal by the key set.
	reason string
}

type probeKey struct{}

// keySet is an oidc.KeySet over the issuer's JWKS, found by discovery.
// Fetches are serialised and bounded: one every RefreshInterval at most,
// whatever the tokens ask for.
type keySet struct {
	issuer   string
	client   *http.Client
	every    time.Duration // RefreshInterval
	maxAge   time.Duration
	timeout  time.Duration
	log      *slog.Logger
	now      func() time.Time
	current  atomic.Pointer[keys]
	fetching chan struct{} // holds one token while a fetch runs

	// Under fetching.
	jwksURL string // from discovery; cleared when a fetch fails
	lastTry time.Time
}

// keys is one fetched key set.
type keys struct {
	set     []jose.JSONWebKey
	fetched time.Time
}

func newKeySet(cfg Config) *keySet {
	return &keySet{
		issuer: cfg.Issuer, client: cfg.HTTPClient, every: cfg.RefreshInterval, maxAge: cfg.MaxKeyAge,
		timeout: cfg.FetchTimeout, log: cfg.Logger, now: time.Now, fetching: make(chan struct{}, 1),
	}
}

// errKeys is what VerifySignature returns; the library wraps it into its own
// text, and the probe carries the reason.
var errKeys = errors.New("signature not verified")

// VerifySignature implements oidc.KeySet. The verifier has already checked
// the algorithm against its list and that there is one signature.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	pr, _ := ctx.Value(probeKey{}).(*probe)
	if pr == nil {
		pr = &probe{}
	}
	jws, err := jose.ParseSigned(jwt, allAlgorithms)
	if err != nil || len(jws.Signatures) != 1 {
		pr.reason = "malformed token"
		return nil, errKeys
	}
	sig := jws.Signatures[0].Header
	cur := k.current.Load()
	if cur == nil || k.now().Sub(cur.fetched) > k.maxAge {
		cur = k.refresh(ctx, cur)
	}
	if cur == nil {
		pr.reason = "the issuer's keys cannot be fetched"
		return nil, errKeys
	}
	candidates := cur.find(sig.KeyID, sig.Algorithm)
	if len(candidates) == 0 && sig.KeyID != "" {
		// A key id we do not hold: the issuer may have rotated its keys.
		cur = k.refresh(ctx, cur)
		candidates = cur.find(sig.KeyID, sig.Algorithm)
	}
	if len(candidates) == 0 {
		if sig.KeyID == "" {
			pr.reason = "no key id (kid) and no key of the issuer for " + quote(sig.Algorithm)
		} else {
			pr.reason = "unknown signing key (kid " + quote(sig.KeyID) + " is not in the issuer's JWKS)"
		}
		return nil, errKeys
	}
	for i := range candidates {
		if payload, err := jws.Verify(&candidates[i]); err == nil {
			pr.verified = true
			return payload, nil
		}
	}
	// A known key that does not verify: a forged or altered token, not a
	// rotation; nothing is fetched.
	pr.reason = "bad signature"
	return nil, errKeys
}

// find returns the keys that may have made a signature with key id kid (all
// signing keys when kid is empty) and algorithm alg.
func (ks *keys) find(kid, alg string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, key := range ks.set {
		if (kid == "" || key.KeyID == kid) && (key.Algorithm == "" || key.Algorithm == alg) {
			out = append(out, key)
		}
	}
	return out
}

// refresh fetches the key set unless one was fetched since seen was, or a
// fetch was tried within the refresh interval; it returns the newest set
// (nil when none was ever fetched). A failed fetch keeps the set held.
func (k *keySet) refresh(ctx context.Context, seen *keys) *keys {
	select {
	case k.fetching <- struct{}{}:
	case <-ctx.Done():
		return k.current.Load()
	}
	defer func() { <-k.fetching }()
	cur := k.current.Load()
	if cur != seen || (!k.lastTry.IsZero() && k.now().Sub(k.lastTry) < k.every) {
		return cur
	}
	fetched, err := k.fetch(ctx)
	if err != nil {
		if ctx.Err() == nil {
			// A caller that gave up does not spend the interval.
			k.lastTry = k.now()
		}
		k.log.Warn("issuer's keys not fetched", "issuer", k.issuer, "err", err)
		return cur
	}
	k.lastTry = k.now()
	k.current.Store(fetched)
	return fetched
}

func (k *keySet) prefetch(ctx context.Context) error {
	select {
	case k.fetching <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-k.fetching }()
	fetched, err := k.fetch(ctx)
	if err != nil {
		return err
	}
	k.lastTry = k.now()
	k.current.Store(fetched)
	return nil
}

// fetch runs discovery (once, or again after a failure) and reads the JWKS.
// Called holding fetching.
func (k *keySet) fetch(ctx context.Context) (*keys, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	if k.jwksURL == "" {
		// The library's discovery also checks that the document names the
		// configured issuer.
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.client), k.issuer)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		var doc struct {
			JWKSURL string `json:"jwks_uri"`
		}
		if err := p.Claims(&doc); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		if err := checkURL(doc.JWKSURL); err != nil {
			return nil, fmt.Errorf("discovery: jwks_uri: %w", err)
		}
		k.jwksURL = doc.JWKSURL
	}
	set, err := k.getJWKS(ctx)
	if err != nil {
		k.jwksURL = "" // discover again next time: the issuer may have moved it
		return nil, err
	}
	k.log.Info("issuer's keys fetched", "issuer", k.issuer, "keys", len(set))
	return &keys{set: set, fetched: k.now()}, nil
}

func (k *keySet) getJWKS(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.jwksURL, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks %s: %s", k.jwksURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", k.jwksURL, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks %s: larger than %d bytes", k.jwksURL, maxJWKSBytes)
	}
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("jwks %s: %w", k.jwksURL, err)
	}
	var set []jose.JSONWebKey
	for _, raw := range doc.Keys {
		var key jose.JSONWebKey
		// A key of a type or curve go-jose does not know is skipped, as
		// RFC 7517 §5 asks, rather than failing the set.
		if err := json.Unmarshal(raw, &key); err != nil || !key.Valid() || key.Use == "enc" {
			continue
		}
		if _, symmetric := key.Key.([]byte); symmetric {
			// A shared secret published in a JWKS would let anyone sign.
			continue
		}
		set = append(set, key.Public())
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("jwks %s: no signing key", k.jwksURL)
	}
	return set, nil
}

// allAlgorithms lets jose parse what the library's verifier already checked
// against the configured list.
var allAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512, jose.EdDSA,
}
