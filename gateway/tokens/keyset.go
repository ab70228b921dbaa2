package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
// Fetches are single-flight and bounded: one every RefreshInterval at most,
// whatever the tokens ask for. A fetch counts against the bound when it
// starts and is detached from the request that started it (its own
// timeout, FetchTimeout): a caller that resets its stream (an h2c
// RST_STREAM cancels the request's context at once) neither cancels the
// fetch nor gets the interval back, so that resets cannot turn each forged
// token into a call to the identity provider.
type keySet struct {
	issuer  string
	client  *http.Client
	every   time.Duration // RefreshInterval
	maxAge  time.Duration
	timeout time.Duration
	log     *slog.Logger
	now     func() time.Time
	current atomic.Pointer[keys]

	mu      sync.Mutex
	flight  *flight   // the fetch in progress; nil when none
	lastTry time.Time // when the last fetch started

	// Only the goroutine running a flight reads or writes it.
	jwksURL string // from discovery; cleared when a fetch fails
}

// flight is one fetch, which its concurrent waiters share.
type flight struct {
	done chan struct{}
	err  error // set before done is closed
}

// keys is one fetched key set.
type keys struct {
	set     []jose.JSONWebKey
	fetched time.Time
}

func newKeySet(cfg Config) *keySet {
	return &keySet{
		issuer: cfg.Issuer, client: cfg.HTTPClient, every: cfg.RefreshInterval, maxAge: cfg.MaxKeyAge,
		timeout: cfg.FetchTimeout, log: cfg.Logger, now: time.Now,
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
// fetch started within the refresh interval; it returns the newest set (nil
// when none was ever fetched). A fetch in flight is waited for (until ctx
// ends) rather than started again. A failed fetch keeps the set held.
func (k *keySet) refresh(ctx context.Context, seen *keys) *keys {
	f, run := k.join(seen, false)
	switch {
	case f == nil:
	case run:
		// The starter waits for its fetch even when its own request is
		// gone: at most one goroutine does, for at most FetchTimeout, and
		// every goroutine stays its caller's.
		k.run(ctx, f)
	default:
		select {
		case <-f.done:
		case <-ctx.Done():
		}
	}
	return k.current.Load()
}

// join returns the fetch in flight, or starts one (run: the caller must run
// it) when seen is still the held set and the refresh interval has passed
// since the last start, or always when force. It returns nil when no fetch
// is due.
func (k *keySet) join(seen *keys, force bool) (f *flight, run bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !force && k.current.Load() != seen {
		return nil, false
	}
	if k.flight != nil {
		return k.flight, false
	}
	if !force && !k.lastTry.IsZero() && k.now().Sub(k.lastTry) < k.every {
		return nil, false
	}
	k.flight = &flight{done: make(chan struct{})}
	// Counted now, whatever becomes of the fetch or of its requester.
	k.lastTry = k.now()
	return k.flight, true
}

// run fetches for f, detached from ctx's cancellation (fetch applies its
// own timeout), and hands the outcome to f's waiters.
func (k *keySet) run(ctx context.Context, f *flight) {
	fetched, err := k.fetch(context.WithoutCancel(ctx))
	if err != nil {
		k.log.Warn("issuer's keys not fetched", "issuer", k.issuer, "err", err)
	} else {
		k.current.Store(fetched)
	}
	k.mu.Lock()
	k.flight = nil
	k.mu.Unlock()
	f.err = err
	close(f.done)
}

// prefetch fetches now, whatever the interval (Verifier.Prefetch, at
// start), or waits for the fetch in flight, and returns its error.
func (k *keySet) prefetch(ctx context.Context) error {
	f, run := k.join(nil, true)
	if run {
		k.run(ctx, f)
		return f.err
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for the issuer's keys: %w", ctx.Err())
	}
}

// fetch runs discovery (once, or again after a failure) and reads the JWKS.
// Called by the goroutine running a flight. Errors quote at most a short
// prefix of what the issuer sent (see clip): an error page may be
// megabytes.
func (k *keySet) fetch(ctx context.Context) (*keys, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	if k.jwksURL == "" {
		// The library's discovery also checks that the document names the
		// configured issuer.
		p, err := oidc.NewProvider(oidc.ClientContext(ctx, k.client), k.issuer)
		if err != nil {
			// The library quotes the whole body of a refusal.
			return nil, fmt.Errorf("discovery: %s", clip(err.Error()))
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
	// The client's transport bounds the body (MaxIssuerDocumentBytes).
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", k.jwksURL, err)
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

// errTooLarge ends the reading of a discovery document or key set larger
// than MaxIssuerDocumentBytes.
var errTooLarge = fmt.Errorf("larger than %d bytes", MaxIssuerDocumentBytes)

// boundedBodies is the fetching client's transport: every response body
// (discovery, JWKS, an error page) reads at most limit bytes, then fails
// with errTooLarge. The OIDC library reads discovery documents and error
// bodies whole (io.ReadAll) with no bound of its own.
type boundedBodies struct {
	next  http.RoundTripper
	limit int64
}

func (t boundedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.limit}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	// One byte more than is left, to tell "exactly the limit" from "over".
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, errTooLarge
	}
	b.left -= int64(n)
	return n, err
}

// maxQuoted bounds what an error quotes of an issuer's answer.
const maxQuoted = 256

// clip bounds a text an issuer controls (an error quoting its answer) for a
// log line or an error.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}
