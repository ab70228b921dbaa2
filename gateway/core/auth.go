package core

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"slices"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Principal is an authenticated caller and what its key allows.
type Principal struct {
	// ID names the key in logs; it is never the key itself.
	ID string
	// Roles the key may join as; empty allows every role.
	Roles []string
	// Offices the key may enter; empty (or "*") allows every office.
	Offices []string
	// Name, when set, is the only name the key may use.
	Name string
	// Operator marks a key of the gateway's operator: a key-ring key with no
	// scope (no roles, offices or name), or any caller of an --insecure
	// gateway. Only an operator may evict an office's agent. A bearer
	// token is never one.
	Operator bool
	// Expires is when the credential stops being valid (a token's exp);
	// zero for an API key, which is valid until it is revoked.
	Expires time.Time
	// revoked ends when a reload of the keys removes or changes the key
	// (nil: never). See Bound.
	revoked context.Context
	// reserved are the names other keys of the same ring hold as their
	// Name. A key without a Name may not use them: else it could act as
	// that agent over a stateless front end (sharing its office slot,
	// cancelling its calls). Shared between the ring's principals, never
	// written after the ring is built.
	reserved map[string]struct{}
}

// ErrCredentialExpired and ErrKeyRevoked are the causes (context.Cause) of
// a context from Principal.Bound that ended with its credential.
var (
	ErrCredentialExpired = smcp.Errorf(smcp.CodeUnauthenticated, "the token has expired")
	ErrKeyRevoked        = smcp.Errorf(smcp.CodeUnauthenticated, "the API key was revoked")
)

// Bound returns a context that ends when ctx does or when p's credential
// does: at Expires, or when its key is revoked. Whatever outlives one
// request (a Socket.IO connection, a watch or listen stream, an MCP
// session) serves under it, so that an expired token or a revoked key ends
// it; context.Cause says which. The caller must call cancel.
func (p *Principal) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	cancelDeadline := func() {}
	if !p.Expires.IsZero() {
		ctx, cancelDeadline = context.WithDeadlineCause(ctx, p.Expires, ErrCredentialExpired)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := func() bool { return false }
	if p.revoked != nil {
		stop = context.AfterFunc(p.revoked, func() { cancel(ErrKeyRevoked) })
	}
	return ctx, func() { stop(); cancel(context.Canceled); cancelDeadline() }
}

// AllowsRole reports whether p may act in role.
func (p *Principal) AllowsRole(role string) bool {
	return len(p.Roles) == 0 || slices.Contains(p.Roles, role)
}

// AllowsOffice reports whether p may enter office id.
func (p *Principal) AllowsOffice(id string) bool {
	return len(p.Offices) == 0 || slices.Contains(p.Offices, "*") || slices.Contains(p.Offices, id)
}

// check returns a 403 when p may not be name in role in office. It is the
// one rule of what a key allows, for every front end: joins (JoinContext)
// and stateless calls (ActAsAgent, CheckAgent) both apply it.
func (p *Principal) check(role, name, office string) error {
	_, taken := p.reserved[name]
	switch {
	case !p.AllowsRole(role):
		return smcp.Errorf(smcp.CodeForbidden, "this key may not act as %s", role)
	case !p.AllowsOffice(office):
		return smcp.Errorf(smcp.CodeForbidden, "this key may not enter office %q", office)
	case p.Name != "" && p.Name != name:
		return smcp.Errorf(smcp.CodeForbidden, "this key may only use the name %q", p.Name)
	case p.Name == "" && taken:
		return smcp.Errorf(smcp.CodeForbidden, "the name %q belongs to another key", name)
	}
	return nil
}

// CheckAgent applies the rule ActAsAgent applies before it claims the
// office: a front end calls it to refuse a caller before it reads (and pays
// for) the rest of the request.
func (p *Principal) CheckAgent(officeID, name string) error {
	if officeID == "" || name == "" {
		return smcp.Errorf(smcp.CodeBadRequest, "office_id and agent name are required")
	}
	// An HTTP header or a percent-decoded path can hold any byte; such a
	// name would be relayed to computers (in tool calls and notifications)
	// inside WebSocket text frames, which must be UTF-8.
	if !utf8.ValidString(officeID) || !utf8.ValidString(name) {
		return smcp.Errorf(smcp.CodeBadRequest, "office_id and agent name must be valid UTF-8")
	}
	return p.check(smcp.RoleAgent, name, officeID)
}

// Authenticator turns a credential (an API key) into a Principal. A refusal is
// an *smcp.Error with code 401. The Principal may be shared by every caller
// of one key (no copy per call): nobody may modify it.
type Authenticator interface {
	Authenticate(ctx context.Context, credential string) (*Principal, error)
}

// AllowAll accepts every caller, with or without a key. It exists for
// --insecure and must never be the default.
type AllowAll struct{}

// insecure is AllowAll's principal, one for every caller: it is never
// modified (see Authenticator).
var insecure = Principal{ID: "insecure", Operator: true}

// Authenticate returns a principal allowed everything.
func (AllowAll) Authenticate(context.Context, string) (*Principal, error) {
	return &insecure, nil
}

// Key is one entry of a KeyRing, as written in a keys file.
type Key struct {
	// Key is the secret.
	Key string `yaml:"key" json:"key"`
	// ID names the key in logs; defaults to "key#<index>".
	ID      string   `yaml:"id" json:"id"`
	Roles   []string `yaml:"roles" json:"roles"`
	Offices []string `yaml:"offices" json:"offices"`
	Name    string   `yaml:"name" json:"name"`
}

// KeyRing authenticates API keys. Keys are kept as SHA-256 digests and
// compared in constant time against every entry, so neither the timing nor the
// length of a guess reveals anything.
type KeyRing struct {
	entries []keyEntry
	// reserved: the keys' fixed names (see Principal.reserved).
	reserved map[string]struct{}
}

// NameReserver is an Authenticator whose keys hold names (a KeyRing).
// ReserveNames makes p, a principal another authenticator made (a bearer
// token's, freshly made for the call), subject to those names as the
// reserver's own keys without a name are: without a fixed Name, p may not
// act under them.
type NameReserver interface {
	ReserveNames(p *Principal)
}

// ReserveNames implements NameReserver.
func (r *KeyRing) ReserveNames(p *Principal) {
	if p.Name == "" && len(r.reserved) > 0 {
		p.reserved = r.reserved
	}
}

type keyEntry struct {
	digest    [sha256.Size]byte
	principal Principal
}

// NewKeyRing builds a KeyRing. Empty keys, duplicate keys, duplicate ids and
// unknown roles are refused: the id is who a key is to the front ends (an
// MCP session belongs to the id that opened it), so two keys of one id
// would be one caller.
func NewKeyRing(keys ...Key) (*KeyRing, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("key ring: no keys")
	}
	r := &KeyRing{}
	seen := map[[sha256.Size]byte]bool{}
	ids := map[string]int{}
	reserved := map[string]struct{}{}
	for i, k := range keys {
		if k.Key == "" {
			return nil, fmt.Errorf("key ring: entry %d has an empty key", i)
		}
		for _, role := range k.Roles {
			if role != smcp.RoleAgent && role != smcp.RoleComputer {
				return nil, fmt.Errorf("key ring: entry %d: unknown role %q", i, role)
			}
		}
		d := sha256.Sum256([]byte(k.Key))
		if seen[d] {
			return nil, fmt.Errorf("key ring: entry %d repeats an earlier key", i)
		}
		seen[d] = true
		id := k.ID
		if id == "" {
			id = fmt.Sprintf("key#%d", i)
		}
		if j, dup := ids[id]; dup {
			return nil, fmt.Errorf("key ring: entries %d and %d have the same id %q (ids must be unique)", j, i, id)
		}
		ids[id] = i
		if k.Name != "" {
			reserved[k.Name] = struct{}{}
		}
		r.entries = append(r.entries, keyEntry{digest: d, principal: Principal{
			ID: id, Roles: slices.Clone(k.Roles), Offices: slices.Clone(k.Offices), Name: k.Name,
			Operator: len(k.Roles) == 0 && k.Name == "" && (len(k.Offices) == 0 || slices.Contains(k.Offices, "*")),
		}})
	}
	r.reserved = reserved
	for i := range r.entries {
		r.ReserveNames(&r.entries[i].principal)
	}
	return r, nil
}

// LoadKeyRing reads a keys file, YAML or JSON (JSON is YAML):
//
//	keys:
//	  - key: s3cret
//	    id: alice
//	    roles: [agent]
//	    offices: [office-1]
//	    name: alice
func LoadKeyRing(path string) (*KeyRing, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys file: %w", err)
	}
	var f struct {
		Keys []Key `yaml:"keys"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	r, err := NewKeyRing(f.Keys...)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	return r, nil
}

// Authenticate finds the principal of credential.
func (r *KeyRing) Authenticate(_ context.Context, credential string) (*Principal, error) {
	if credential == "" {
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "missing API key")
	}
	// The key's bytes on the stack: a conversion copies more than 32
	// bytes to the heap, per call.
	var buf [256]byte
	d := sha256.Sum256(append(buf[:0], credential...))
	found := -1
	for i := range r.entries {
		if subtle.ConstantTimeCompare(d[:], r.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "invalid API key")
	}
	// The ring's own principal: never modified after the ring is built.
	return &r.entries[found].principal, nil
}
