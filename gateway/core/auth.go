package core

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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
	// RuleSets name the rule sets (the keys file's rule_sets) that bound
	// what the caller may call: a key's rules, or those a token's claims
	// map to. The Guard applies them; none leaves the caller unbound.
	RuleSets []string
	// Claims are a token's verified claims (nil for an API key), for
	// rules that read them; Issuer is its issuer ("" for a key), for the
	// audit (ID holds its subject).
	Claims map[string]any
	Issuer string
	// Expires is when the credential stops being valid (a token's exp);
	// zero for an API key, which is valid until it is revoked.
	Expires time.Time
	// revoked ends when a reload of the keys removes or changes the key
	// (nil: never). See Bound.
	revoked context.Context
	// ring is the key ring of the principal's key (nil for a token or
	// AllowAll): the names its keys in force hold as their Name are
	// reserved to them. A key without a Name may not use them: else it
	// could act as that agent over a stateless front end (sharing its
	// office slot, cancelling its calls).
	ring *KeyRing
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
	switch {
	case p.revoked == nil:
	case p.revoked.Err() != nil:
		// Revoked between its Authenticate and now: ended already, not
		// by AfterFunc's goroutine some time later.
		cancel(ErrKeyRevoked)
	default:
		stop = context.AfterFunc(p.revoked, func() { cancel(ErrKeyRevoked) })
	}
	return ctx, func() { stop(); cancel(context.Canceled); cancelDeadline() }
}

// CredentialEnded is the cause of ctx's end when its credential ended it
// (ErrKeyRevoked, ErrCredentialExpired; see Bound), else nil: what a
// front end tells the client whose connection or stream ends with it.
func CredentialEnded(ctx context.Context) error {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrKeyRevoked) || errors.Is(cause, ErrCredentialExpired) {
		return cause
	}
	return nil
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
	switch {
	case !p.AllowsRole(role):
		return smcp.Errorf(smcp.CodeForbidden, "this key may not act as %s", role)
	case !p.AllowsOffice(office):
		return smcp.Errorf(smcp.CodeForbidden, "this key may not enter office %q", office)
	case p.Name != "" && p.Name != name:
		return smcp.Errorf(smcp.CodeForbidden, "this key may only use the name %q", p.Name)
	case p.Name == "" && p.ring.reserves(name):
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
	// Operator marks the operator's key, which may evict an office's
	// agent, whatever its roles and offices. A key without roles, offices
	// or name is one too.
	Operator bool `yaml:"operator" json:"operator"`
	// Rules name the key's rule sets (see Principal.RuleSets).
	Rules []string `yaml:"rules" json:"rules"`
}

// KeyRing authenticates API keys. Keys are kept as SHA-256 digests and
// compared in constant time against every entry, so neither the timing nor the
// length of a guess reveals anything.
//
// A ring can be given new keys while it serves (Replace, Reload): the new
// set is checked whole and then swapped in at once, so a request meets the
// old keys or the new ones, never a mix. A key whose entry is unchanged
// keeps its Principal; a key removed or changed is revoked (see Bound).
type KeyRing struct {
	set atomic.Pointer[keySet]
	// path is the keys file Reload reads ("" for NewKeyRing's rings).
	path string
	// mu makes reloads one at a time: each is computed against the set
	// it replaces.
	mu sync.Mutex
	// read is the SHA-256 of the file's bytes last read (under mu).
	read [sha256.Size]byte
	// also read the rest of the keys file on each reload (see AlsoReload).
	also []func(b []byte) (apply func(), err error)
}

// keySet is one version of a ring's keys; never modified once built.
type keySet struct {
	entries []keyEntry
	// reserved are the names keys of the set hold as their Name.
	reserved map[string]struct{}
}

// NameReserver is an Authenticator whose keys hold names (a KeyRing).
// ReserveNames makes p, a principal another authenticator made (a bearer
// token's, freshly made for the call), subject to those names as the
// reserver's own keys without a name are: without a fixed Name, p may not
// act under them (the names in force at each check: a reload counts).
type NameReserver interface {
	ReserveNames(p *Principal)
}

// ReserveNames implements NameReserver.
func (r *KeyRing) ReserveNames(p *Principal) {
	if p.Name == "" {
		p.ring = r
	}
}

type keyEntry struct {
	digest [sha256.Size]byte
	// spec is the entry as written, its id resolved and without the key
	// itself (the ring keeps only digests): a reload keeps the principal
	// of an entry equal to it in every field, whatever fields Key has.
	spec      Key
	principal *Principal
	revoke    context.CancelFunc
}

// NewKeyRing builds a KeyRing. Empty keys, duplicate keys, duplicate ids and
// unknown roles are refused: the id is who a key is to the front ends (an
// MCP session belongs to the id that opened it), so two keys of one id
// would be one caller.
func NewKeyRing(keys ...Key) (*KeyRing, error) {
	r := &KeyRing{}
	set, _, err := r.build(keys, nil)
	if err != nil {
		return nil, err
	}
	r.set.Store(set)
	return r, nil
}

// build checks keys and makes their set, keeping the principal of every
// entry of old that is unchanged; it changes nothing (old's principals are
// revoked by the caller once the set is in force).
func (r *KeyRing) build(keys []Key, old *keySet) (*keySet, KeyChanges, error) {
	var ch KeyChanges
	if len(keys) == 0 {
		return nil, ch, fmt.Errorf("key ring: no keys")
	}
	set := &keySet{reserved: map[string]struct{}{}}
	seen := map[[sha256.Size]byte]bool{}
	ids := map[string]int{}
	for i, k := range keys {
		if k.Key == "" {
			return nil, ch, fmt.Errorf("key ring: entry %d has an empty key", i)
		}
		for _, role := range k.Roles {
			if role != smcp.RoleAgent && role != smcp.RoleComputer {
				return nil, ch, fmt.Errorf("key ring: entry %d: unknown role %q", i, role)
			}
		}
		d := sha256.Sum256([]byte(k.Key))
		if seen[d] {
			return nil, ch, fmt.Errorf("key ring: entry %d repeats an earlier key", i)
		}
		seen[d] = true
		id := k.ID
		if id == "" {
			id = fmt.Sprintf("key#%d", i)
		}
		if j, dup := ids[id]; dup {
			return nil, ch, fmt.Errorf("key ring: entries %d and %d have the same id %q (ids must be unique)", j, i, id)
		}
		ids[id] = i
		if k.Name != "" {
			set.reserved[k.Name] = struct{}{}
		}
		spec := k
		spec.Key, spec.ID = "", id
		set.entries = append(set.entries, keyEntry{digest: d, spec: spec})
	}
	for i := range set.entries {
		e := &set.entries[i]
		if prev := old.find(e.digest); prev != nil && reflect.DeepEqual(prev.spec, e.spec) {
			e.principal, e.revoke = prev.principal, prev.revoke
			continue
		}
		revoked, revoke := context.WithCancel(context.Background())
		k := e.spec
		e.principal = &Principal{
			ID: k.ID, Roles: slices.Clone(k.Roles), Offices: slices.Clone(k.Offices), Name: k.Name,
			RuleSets: slices.Clone(k.Rules),
			Operator: k.Operator || len(k.Roles) == 0 && k.Name == "" && len(k.Rules) == 0 &&
				(len(k.Offices) == 0 || slices.Contains(k.Offices, "*")),
			revoked: revoked, ring: r,
		}
		e.revoke = revoke
	}
	ch.count(old, set)
	return set, ch, nil
}

// find is the entry of the key of digest d, or nil.
func (s *keySet) find(d [sha256.Size]byte) *keyEntry {
	if s == nil {
		return nil
	}
	for i := range s.entries {
		if s.entries[i].digest == d {
			return &s.entries[i]
		}
	}
	return nil
}

// reserves reports whether a key of r in force holds name as its Name.
func (r *KeyRing) reserves(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.set.Load().reserved[name]
	return ok
}

// LoadKeyRing reads a keys file, YAML or JSON (JSON is YAML):
//
//	keys:
//	  - key: s3cret
//	    id: alice
//	    roles: [agent]
//	    offices: [office-1]
//	    name: alice
//
// Reload reads the file again.
func LoadKeyRing(path string) (*KeyRing, error) {
	keys, sum, err := readKeysFile(path)
	if err != nil {
		return nil, err
	}
	r, err := NewKeyRing(keys...)
	if err != nil {
		return nil, fmt.Errorf("keys file %s: %w", path, err)
	}
	r.path, r.read = path, sum
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
	set := r.set.Load()
	found := -1
	for i := range set.entries {
		if subtle.ConstantTimeCompare(d[:], set.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, smcp.Errorf(smcp.CodeUnauthenticated, "invalid API key")
	}
	// The set's own principal: never modified.
	return set.entries[found].principal, nil
}
