// Package oauthtest starts, for a test, an OAuth authorization server and
// an MCP server protected by it, both real and on loopback:
//
//   - the authorization server is zitadel/oidc's OpenID provider (pkg/op)
//     over its example storage and login page (username/password form),
//     with JWT access tokens of a lifetime the test chooses; zitadel has
//     no dynamic client registration (RFC 7591), so the test server adds
//     one (/register, public native clients) and RFC 8414 metadata that
//     advertises it beside zitadel's own OpenID discovery;
//   - the MCP server is any go-sdk handler behind the go-sdk's
//     RequireBearerToken middleware, with RFC 9728 protected resource
//     metadata, verifying the tokens' signatures with go-oidc.
package oauthtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"slices"

	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/auth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/oauthex"
)

// Username and Password sign in at the authorization server's login page.
const (
	Password = "verysecure"
)

// AS is a running authorization server.
type AS struct {
	// Issuer is its URL (http://127.0.0.1:port).
	Issuer string
	// Username of its one user.
	Username string
	st       *asStorage
}

// Registrations counts the dynamic client registrations.
func (a *AS) Registrations() int { return int(a.st.registrations.Load()) }

// Refreshes counts the refresh_token grants served.
func (a *AS) Refreshes() int { return int(a.st.refreshes.Load()) }

// Revoked reports whether a token (access or refresh) was revoked.
func (a *AS) Revoked() int { return int(a.st.revoked.Load()) }

// StartAS starts the authorization server; its access tokens live for
// lifetime.
func StartAS(t testing.TB, lifetime time.Duration) *AS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	st := &asStorage{
		Storage:  storage.NewStorageWithClients(storage.NewUserStore(issuer), map[string]*storage.Client{}),
		lifetime: lifetime,
		clients:  map[string]op.Client{},
	}
	router := exampleop.SetupServer(issuer, st, nil, false)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /register", st.register)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		// zitadel's OpenID discovery, plus the registration endpoint.
		rec := httptest.NewRecorder()
		d, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "/.well-known/openid-configuration", nil)
		d.Host = r.Host
		router.ServeHTTP(rec, d)
		var meta map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &meta); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		meta["registration_endpoint"] = issuer + "/register"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(meta)
	})
	mux.Handle("/", router)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &AS{Issuer: issuer, Username: "test-user@127.0.0.1", st: st}
}

// asStorage is the example storage with dynamic clients, a chosen access
// token lifetime and counters.
type asStorage struct {
	*storage.Storage
	lifetime time.Duration

	mu            sync.Mutex
	clients       map[string]op.Client
	registrations atomic.Int32
	refreshes     atomic.Int32
	revoked       atomic.Int32
}

func (s *asStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	return s.Storage.GetClientByClientID(ctx, id)
}

func (s *asStorage) CreateAccessToken(ctx context.Context, r op.TokenRequest) (string, time.Time, error) {
	id, _, err := s.Storage.CreateAccessToken(ctx, r)
	return id, time.Now().Add(s.lifetime), err
}

func (s *asStorage) CreateAccessAndRefreshTokens(ctx context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	if current != "" {
		s.refreshes.Add(1)
	}
	id, refresh, _, err := s.Storage.CreateAccessAndRefreshTokens(ctx, r, current)
	return id, refresh, time.Now().Add(s.lifetime), err
}

func (s *asStorage) RevokeToken(ctx context.Context, token, userID, clientID string) *zoidc.Error {
	e := s.Storage.RevokeToken(ctx, token, userID, clientID)
	if e == nil {
		s.revoked.Add(1)
	}
	return e
}

// GetPrivateClaimsFromScopes puts the granted scopes in the JWT access
// token (zitadel writes no scope claim of its own), for the resource
// server to check.
func (s *asStorage) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromScopes(ctx, userID, clientID, scopes)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		claims = map[string]any{}
	}
	claims["scope"] = strings.Join(scopes, " ")
	return claims, nil
}

// register is RFC 7591 for public native clients with loopback redirects.
func (s *asStorage) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprint(w, `{"error":"invalid_client_metadata"}`)
		return
	}
	for _, u := range req.RedirectURIs {
		if _, ok := op.HTTPLoopbackOrLocalhost(u); !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = fmt.Fprint(w, `{"error":"invalid_redirect_uri"}`)
			return
		}
	}
	id := "dcr-" + rand.Text()
	s.mu.Lock()
	s.clients[id] = mcpClient{storage.NativeClient(id, req.RedirectURIs...)}
	s.mu.Unlock()
	s.registrations.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"client_id": id, "client_id_issued_at": time.Now().Unix(), "redirect_uris": req.RedirectURIs,
		"client_name": req.ClientName, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
}

// mcpClient is a native client whose access tokens are JWTs (verifiable by
// the resource server) and which may ask for the mcp:* scopes.
type mcpClient struct{ *storage.Client }

func (mcpClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (mcpClient) IsScopeAllowed(s string) bool        { return strings.HasPrefix(s, "mcp:") }

// Protected serves an MCP handler at /mcp behind bearer tokens of as that
// carry scopes, with its protected resource metadata, and returns the MCP
// endpoint's URL.
func Protected(t testing.TB, as *AS, mcpHandler http.Handler, scopes ...string) string {
	t.Helper()
	return ProtectedTools(t, as, mcpHandler, scopes, nil)
}

// ProtectedTools is Protected where calling a tool of toolScopes also
// needs that scope: a token without it gets 403 with a Bearer
// insufficient_scope challenge naming the scopes wanted (step-up, MCP
// authorization 2025-11-25).
func ProtectedTools(t testing.TB, as *AS, mcpHandler http.Handler, scopes []string, toolScopes map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	keys := oidc.NewRemoteKeySet(context.Background(), as.Issuer+"/keys")
	verifier := oidc.NewVerifier(as.Issuer, keys, &oidc.Config{SkipClientIDCheck: true})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tok, err := verifier.Verify(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		var claims struct {
			Scope string `json:"scope"`
		}
		if err := tok.Claims(&claims); err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{Scopes: strings.Fields(claims.Scope), Expiration: tok.Expiry, UserID: tok.Subject}, nil
	}
	prmURL := base + "/.well-known/oauth-protected-resource/mcp"
	mux := http.NewServeMux()
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && len(toolScopes) > 0 {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				if need := toolScopes[msg.Params.Name]; need != "" && !slices.Contains(auth.TokenInfoFromContext(r.Context()).Scopes, need) {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
						strings.Join(append(slices.Clone(scopes), need), " "), prmURL))
					http.Error(w, "insufficient scope", http.StatusForbidden)
					return
				}
			}
		}
		mcpHandler.ServeHTTP(w, r)
	})
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL, Scopes: scopes})(guarded))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{as.Issuer}, ScopesSupported: scopes,
	}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return base + "/mcp"
}

// SignIn signs in at the authorization server's login page in a chromedp
// browser, from the authorization URL to the page the client's loopback
// callback shows ("Signed in").
func SignIn(browser context.Context, as *AS, authURL string) error {
	ctx, cancel := context.WithTimeout(browser, 60*time.Second)
	defer cancel()
	return chromedp.Run(ctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.SendKeys("#username", as.Username, chromedp.ByQuery),
		chromedp.SendKeys("#password", Password, chromedp.ByQuery),
		chromedp.Submit("#password", chromedp.ByQuery),
		chromedp.WaitVisible(`//p[contains(., "Signed in")]`, chromedp.BySearch),
	)
}
