// Package upstreamauth signs a computer in to MCP servers that need OAuth
// (the MCP authorization specification, 2025-11-25): discovery (RFC 9728,
// then RFC 8414 or OpenID discovery), client identity by a client ID
// metadata document or dynamic client registration (RFC 7591), the
// authorization code grant with PKCE S256, refresh before expiry, and
// step-up on insufficient_scope. The OAuth client is the go-sdk's
// (internal/fork/mcpsdk/auth, oauthex) and golang.org/x/oauth2; this
// package adds what a computer needs around it: an encrypted token store
// shared by `smcp computer auth` and the running computer, the loopback
// sign-in of a desktop (RFC 8252), and the RoundTripper that puts the
// token on a server's requests.
//
// Tokens, client secrets, codes and the store key never reach a log, an
// error or an agent.
package upstreamauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// KeyEnv is the environment variable that holds the store key when no key
// file is given. The computer never passes it to a stdio MCP server
// (config.ComputerSecretEnv: every SMCP_* variable is the computer's own).
const KeyEnv = "SMCP_AUTH_STORE_KEY"

// DefaultFile is the store's file name in DefaultDir.
const DefaultFile = "upstream-auth.enc"

// ErrNoKey is returned when a store is opened without a key: tokens are
// never written in the clear.
var ErrNoKey = errors.New("no token store key: give one with --auth-store-key-file or $" + KeyEnv +
	" (at least 32 bytes, e.g. `openssl rand -base64 32`); tokens are never stored unencrypted")

// minKeyLen is the least key material accepted (bytes, after trimming).
const minKeyLen = 32

// DefaultDir is where the store lives unless told otherwise:
// $XDG_STATE_HOME/smcp, else ~/.local/state/smcp.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "smcp"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("token store location: %w", err)
	}
	return filepath.Join(home, ".local", "state", "smcp"), nil
}

// Client is the OAuth client identity used with one authorization server:
// the result of dynamic client registration is kept so that a refresh or
// a later sign-in needs no new registration.
type Client struct {
	ID     string `json:"id"`
	Secret string `json:"secret,omitempty"`
	// How is "dcr", "cimd" or "preregistered".
	How string `json:"how"`
}

// Entry is the credential of one MCP server. It is keyed as the MCP SDKs
// key theirs: the server (bundle id), the resource (the server's URL),
// the issuer, the client id and the scopes.
type Entry struct {
	// Server is the server's bundle id; Name its name in the configuration.
	Server   string   `json:"server"`
	Name     string   `json:"name"`
	Resource string   `json:"resource"`
	Issuer   string   `json:"issuer"`
	Client   Client   `json:"client"`
	Scopes   []string `json:"scopes,omitempty"`
	// StepUp are scopes an insufficient_scope challenge asked for since the
	// last sign-in: the next sign-in asks for them too.
	StepUp []string `json:"step_up,omitempty"`
	// Endpoints of the authorization server, as discovered at sign-in.
	TokenURL      string           `json:"token_url"`
	AuthURL       string           `json:"auth_url"`
	RevocationURL string           `json:"revocation_url,omitempty"`
	AuthStyle     oauth2.AuthStyle `json:"auth_style"`
	Token         *oauth2.Token    `json:"token,omitempty"`
	Updated       time.Time        `json:"updated"`
}

// Key is the entry's full key (bundle id, resource, issuer, client id,
// scopes), in the form `smcp computer auth list` shows it.
func (e *Entry) Key() string {
	s := slices.Clone(e.Scopes)
	slices.Sort(s)
	return strings.Join([]string{e.Server, e.Resource, e.Issuer, e.Client.ID, strings.Join(s, " ")}, "|")
}

// oauthConfig is the x/oauth2 configuration of the entry.
func (e *Entry) oauthConfig() *oauth2.Config {
	return &oauth2.Config{
		ClientID: e.Client.ID, ClientSecret: e.Client.Secret,
		Endpoint: oauth2.Endpoint{AuthURL: e.AuthURL, TokenURL: e.TokenURL, AuthStyle: e.AuthStyle},
		Scopes:   e.Scopes,
	}
}

// Store is the token store: one file of mode 0600, sealed with AES-256-GCM
// under a key derived from the operator's key material. Each change is
// written to a temporary file and renamed over the store, so a reader
// (the running computer, while `smcp computer auth login` writes) sees the
// old content or the new, never a torn one.
type Store struct {
	path string
	aead cipher.AEAD
	mu   sync.Mutex
	// cached is the file's content as last read, valid while the file's
	// size and modification time are cachedAt's: a server's transport asks
	// the store on each request while it has no token (a server that never
	// asks for one among them), and a stat is cheaper than a decryption.
	cached   *storeFile
	cachedAt fs.FileInfo
}

// storeAAD binds the sealed content to this format.
var storeAAD = []byte("smcp upstream-auth store v1")

// OpenStore opens (without creating) the store at path with key material
// (the content of the operator's key file or $SMCP_AUTH_STORE_KEY).
func OpenStore(path string, key []byte) (*Store, error) {
	key = []byte(strings.TrimSpace(string(key)))
	if len(key) == 0 {
		return nil, ErrNoKey
	}
	if len(key) < minKeyLen {
		return nil, fmt.Errorf("token store key: %d bytes, at least %d needed (e.g. `openssl rand -base64 32`)", len(key), minKeyLen)
	}
	// The key material may be text (base64 from openssl); SHA-256 makes
	// the AES-256 key of any material of enough length.
	k := sha256.Sum256(key)
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	return &Store{path: path, aead: aead}, nil
}

// Open opens the store as an operator names it: path (default
// DefaultDir/DefaultFile) and the key in keyFile, else in $SMCP_AUTH_STORE_KEY.
// Without a key it returns ErrNoKey when required, else no store (nil, nil).
func Open(path, keyFile string, required bool) (*Store, error) {
	var key []byte
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("token store key file: %w", err)
		}
		key = b
	} else {
		key = []byte(os.Getenv(KeyEnv))
	}
	if len(strings.TrimSpace(string(key))) == 0 && !required {
		return nil, nil
	}
	if path == "" {
		dir, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, DefaultFile)
	}
	return OpenStore(path, key)
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

type storeFile struct {
	Entries []*Entry `json:"entries"`
}

func (s *Store) load() (*storeFile, error) {
	raw, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &storeFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	ns := s.aead.NonceSize()
	if len(raw) < ns {
		return nil, fmt.Errorf("token store %s: truncated", s.path)
	}
	plain, err := s.aead.Open(nil, raw[:ns], raw[ns:], storeAAD)
	if err != nil {
		// Never says more: a wrong key and a tampered file look alike.
		return nil, fmt.Errorf("token store %s: cannot decrypt (wrong key, or the file was changed)", s.path)
	}
	var f storeFile
	if err := json.Unmarshal(plain, &f); err != nil {
		return nil, fmt.Errorf("token store %s: %w", s.path, err)
	}
	return &f, nil
}

func (s *Store) save(f *storeFile) error {
	plain, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	sealed := s.aead.Seal(nonce, nonce, plain, storeAAD)
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".upstream-auth-*")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	// CreateTemp makes the file 0600 already; Chmod says so for readers.
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if _, err := tmp.Write(sealed); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("token store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return nil
}

// List returns the entries. They are shared: the caller must not change
// them (Modify does).
func (s *Store) List() ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.cached, s.cachedAt = nil, nil
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("token store: %w", err)
	case s.cached != nil && s.cachedAt.Size() == fi.Size() && s.cachedAt.ModTime().Equal(fi.ModTime()):
		return s.cached.Entries, nil
	}
	f, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cached, s.cachedAt = f, fi
	return f.Entries, nil
}

// Get returns the entry of a server at resource, nil if none.
func (s *Store) Get(server, resource string) (*Entry, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.Server == server && e.Resource == resource {
			return e, nil
		}
	}
	return nil, nil
}

// Put adds or replaces the entry of (e.Server, e.Resource).
func (s *Store) Put(e *Entry) error {
	return s.update(func(f *storeFile) error {
		e.Updated = time.Now().UTC()
		f.Entries = slices.DeleteFunc(f.Entries, func(o *Entry) bool { return o.Server == e.Server && o.Resource == e.Resource })
		f.Entries = append(f.Entries, e)
		return nil
	})
}

// Modify changes the entry of (server, resource) in place; it is a no-op
// when there is none.
func (s *Store) Modify(server, resource string, change func(*Entry)) error {
	return s.update(func(f *storeFile) error {
		for _, e := range f.Entries {
			if e.Server == server && e.Resource == resource {
				change(e)
				e.Updated = time.Now().UTC()
			}
		}
		return nil
	})
}

// Delete removes the entries of a server (by bundle id or name) and
// returns them.
func (s *Store) Delete(server string) ([]*Entry, error) {
	var gone []*Entry
	err := s.update(func(f *storeFile) error {
		f.Entries = slices.DeleteFunc(f.Entries, func(e *Entry) bool {
			if e.Server == server || e.Name == server {
				gone = append(gone, e)
				return true
			}
			return false
		})
		return nil
	})
	return gone, err
}

func (s *Store) update(change func(*storeFile) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read afresh (another process may have written), and changed copies
	// only: the cache is dropped.
	s.cached, s.cachedAt = nil, nil
	f, err := s.load()
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	return s.save(f)
}
