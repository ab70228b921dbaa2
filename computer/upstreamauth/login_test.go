package upstreamauth_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/oauthtest"
	"github.com/smcpgw/smcp-gateway/internal/testbrowser"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

const storeKey = "0123456789abcdef0123456789abcdef-test-key"

// signInWith returns an OpenURL that signs in at the test authorization
// server's login page in headless Chromium, as a person would, and a wait
// for the browser to show the callback's page.
func signInWith(t *testing.T, browser context.Context, as *oauthtest.AS) (func(context.Context, string) error, func()) {
	done := make(chan struct{})
	return func(ctx context.Context, authURL string) error {
		// The browser works while Login waits for the callback.
		go func() {
			defer close(done)
			if err := oauthtest.SignIn(browser, as, authURL); err != nil {
				t.Errorf("browser sign-in: %v", err)
			}
		}()
		return nil
	}, func() { <-done }
}

func callEcho(ctx context.Context, hc *mcp.StreamableClientTransport) error {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, hc, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("echo answered isError")
	}
	return nil
}

// A desktop sign-in against a real authorization server (zitadel's OP,
// dynamic client registration, PKCE S256) and an MCP server behind the
// go-sdk's bearer middleware: the token lands in the encrypted store; the
// session's transport uses it and refreshes it past its expiry with no new
// sign-in (the refreshed token is written back); a second sign-in reuses
// the registered client; logout revokes at the AS and forgets the entry.
func TestLoginRefreshLogout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	as := oauthtest.StartAS(t, 2*time.Second)
	url := oauthtest.Protected(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(), "mcp:tools")
	path := filepath.Join(t.TempDir(), "state", upstreamauth.DefaultFile)
	st, err := upstreamauth.OpenStore(path, []byte(storeKey))
	if err != nil {
		t.Fatal(err)
	}
	browser := testbrowser.Start(t, ctx, testbrowser.Path(t))
	srv := upstreamauth.Server{ID: "Guarded_API", Name: "Guarded API", URL: url}

	// Without a token the transport goes anonymously and gets the 401.
	anon := &upstreamauth.Transport{Store: st, Server: srv.ID, Resource: url, Base: httpDefault(), Log: quiet()}
	if err := callEcho(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientOf(anon)}); err == nil {
		t.Fatal("the protected server answered without a token")
	}

	open, signedIn := signInWith(t, browser, as)
	e, err := upstreamauth.Login(ctx, srv, upstreamauth.LoginOptions{Store: st, OpenURL: open, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	signedIn()
	if e.Issuer != as.Issuer || e.Client.How != "dcr" || !slices.Contains(e.Scopes, "mcp:tools") || e.Token.RefreshToken == "" {
		t.Fatalf("entry: issuer %q client %q scopes %v refresh token %v", e.Issuer, e.Client.How, e.Scopes, e.Token.RefreshToken != "")
	}
	if as.Registrations() != 1 {
		t.Fatalf("%d registrations", as.Registrations())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	for _, secret := range []string{e.Token.AccessToken, e.Token.RefreshToken, e.Client.ID, as.Issuer} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the store file holds %q in the clear", secret)
		}
	}
	if _, err := upstreamauth.OpenStore(path, []byte("another key of enough length 0123456789")); err != nil {
		t.Fatal(err)
	} else if other, _ := upstreamauth.OpenStore(path, []byte("another key of enough length 0123456789")); func() bool { _, err := other.List(); return err == nil }() {
		t.Error("the store opened with another key")
	}

	// The session's transport: signed in now.
	tr := &upstreamauth.Transport{Store: st, Server: srv.ID, Resource: url, Base: httpDefault(), Log: quiet()}
	if err := callEcho(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientOf(tr)}); err != nil {
		t.Fatalf("call with the token: %v", err)
	}
	// Past the access token's expiry: refreshed, no new sign-in.
	first := e.Token.AccessToken
	testwait.Poll(10*time.Second, func() bool { return time.Now().After(e.Token.Expiry.Add(200 * time.Millisecond)) })
	if err := callEcho(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientOf(tr)}); err != nil {
		t.Fatalf("call after the token's expiry: %v", err)
	}
	if as.Refreshes() == 0 {
		t.Error("no refresh_token grant past the expiry")
	}
	now, err := st.Get(srv.ID, url)
	if err != nil || now == nil || now.Token.AccessToken == first {
		t.Errorf("the refreshed token was not written back (%v)", err)
	}

	// The grant revoked at the AS (the store still holding it): past the
	// token's expiry the refresh is refused once, and the calls go
	// anonymously (401) without asking the token endpoint again each time.
	if err := upstreamauth.Revoke(ctx, nil, now); err != nil {
		t.Fatal(err)
	}
	now, _ = st.Get(srv.ID, url)
	testwait.Poll(10*time.Second, func() bool { return time.Now().After(now.Token.Expiry.Add(200 * time.Millisecond)) })
	counted := &countingRT{next: httpDefault(), path: "/oauth/token"}
	tr = &upstreamauth.Transport{Store: st, Server: srv.ID, Resource: url, Base: counted, Log: quiet()}
	for range 3 {
		if err := callEcho(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClientOf(tr)}); err == nil {
			t.Fatal("a call succeeded with a revoked grant")
		}
	}
	if n := counted.n.Load(); n != 1 {
		t.Errorf("%d requests to the token endpoint for 3 calls after a refused refresh, want 1", n)
	}

	// A second sign-in reuses the registered client.
	open, signedIn = signInWith(t, browser, as)
	if _, err := upstreamauth.Login(ctx, srv, upstreamauth.LoginOptions{Store: st, OpenURL: open, Log: quiet()}); err != nil {
		t.Fatal(err)
	}
	signedIn()
	if as.Registrations() != 1 {
		t.Errorf("the second sign-in registered again (%d registrations)", as.Registrations())
	}

	// Logout: revoked at the AS, gone from the store.
	gone, err := st.Delete("Guarded API")
	if err != nil || len(gone) != 1 {
		t.Fatalf("delete: %v %d", err, len(gone))
	}
	if err := upstreamauth.Revoke(ctx, nil, gone[0]); err != nil {
		t.Errorf("revoke: %v", err)
	}
	if as.Revoked() == 0 {
		t.Error("nothing revoked at the AS")
	}
	if e, _ := st.Get(srv.ID, url); e != nil {
		t.Error("the entry survived the logout")
	}
}

// No key, no store: tokens are never written in the clear.
func TestStoreRefusesWithoutKey(t *testing.T) {
	for _, key := range []string{"", "  \n", "short"} {
		_, err := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "s"), []byte(key))
		if err == nil {
			t.Errorf("key %q accepted", key)
		}
	}
	if _, err := upstreamauth.OpenStore("x", nil); !errors.Is(err, upstreamauth.ErrNoKey) {
		t.Errorf("no key: %v", err)
	}
}

// The host-driven sign-in of a headless computer: Begin gives the URL and
// its state without opening anything; the host (here the test, as a
// gateway would) shows the URL, receives the authorization response at a
// callback of its own, routes it by state, and hands code, state and iss
// to Complete; the token is stored. A response with a wrong state is
// refused by the grant.
func TestSignInDrivenByHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	as := oauthtest.StartAS(t, time.Hour)
	url := oauthtest.Protected(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(), "mcp:tools")
	st, err := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store"), []byte(storeKey))
	if err != nil {
		t.Fatal(err)
	}
	srv := upstreamauth.Server{ID: "Guarded_API", Name: "Guarded API", URL: url}

	var mu sync.Mutex
	pending := map[string]*upstreamauth.SignIn{}
	completed := make(chan error, 1)
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		p := pending[q.Get("state")]
		delete(pending, q.Get("state"))
		mu.Unlock()
		if p == nil {
			http.Error(w, "no such sign-in", http.StatusNotFound)
			return
		}
		_, err := p.Complete(q.Get("code"), q.Get("state"), q.Get("iss"))
		completed <- err
		_, _ = io.WriteString(w, "<!doctype html><p>Signed in.")
	}))
	t.Cleanup(host.Close)

	p, err := upstreamauth.Begin(ctx, srv, host.URL+"/oauth/callback/pc", upstreamauth.LoginOptions{Store: st, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if p.State == "" || !strings.HasPrefix(p.URL, as.Issuer) {
		t.Fatalf("sign-in URL %q state %q", p.URL, p.State)
	}
	if e, _ := st.Get(srv.ID, url); e != nil {
		t.Fatal("stored before the sign-in completed")
	}
	mu.Lock()
	pending[p.State] = p
	mu.Unlock()
	if err := oauthtest.SignIn(testbrowser.Start(t, ctx, testbrowser.Path(t)), as, p.URL); err != nil {
		t.Fatal(err)
	}
	if err := <-completed; err != nil {
		t.Fatalf("complete: %v", err)
	}
	if e, _ := st.Get(srv.ID, url); e == nil || e.Token == nil || e.Issuer != as.Issuer {
		t.Fatalf("entry after the host-driven sign-in: %+v", e)
	}

	// A forged answer (another state) is refused, and nothing is stored.
	st2, _ := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store2"), []byte(storeKey))
	p, err = upstreamauth.Begin(ctx, srv, host.URL+"/oauth/callback/pc", upstreamauth.LoginOptions{Store: st2, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Complete("some-code", "not-"+p.State, ""); err == nil || !strings.Contains(err.Error(), "state mismatch") {
		t.Errorf("forged state: %v", err)
	}
	if e, _ := st2.Get(srv.ID, url); e != nil {
		t.Error("a forged answer stored a credential")
	}
	// Cancel ends a sign-in nobody answers.
	p, err = upstreamauth.Begin(ctx, srv, host.URL+"/oauth/callback/pc", upstreamauth.LoginOptions{Store: st2, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	p.Cancel()
}
