package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// SignIn is a sign-in to an MCP server that a headless computer needs
// (docs/UPSTREAM.md): its URL is for an operator's browser, never for an
// agent (the MCP specification forbids authorization URLs in auth_hint).
type SignIn struct {
	// Office and Computer are the session's that reported it, never what
	// the report says.
	Office, Computer string
	// Server is the MCP server's name on the computer, BundleID its id.
	Server, BundleID string
	// URL is the authorization URL; State its state parameter, the key the
	// callback comes back with.
	URL, State string
	Expires    time.Time
}

// SignInAnswer is the authorization response the gateway received at its
// callback, for the computer to finish the sign-in with.
type SignInAnswer struct {
	Code, State, Iss string
	// Error is the callback's error parameter (the user refused, ...).
	Error string
}

// Bounds of the sign-ins a computer may have waiting: one per server is
// the computer's own rule; this caps what a misbehaving one can make the
// gateway keep.
const (
	maxSignInsPerComputer = 32
	maxSignInTTL          = 15 * time.Minute
	codeTooManySignIns    = 429
)

// ErrNoSignIn answers a callback whose state no computer of that office
// and name is waiting for (never reported, used, expired, or its computer
// left).
var ErrNoSignIn = errors.New("no sign-in in progress for this computer has this state")

// signIns are the pending sign-ins of this node's computers. Its lock may
// be taken with the hub's held, never the other way round.
type signIns struct {
	mu   sync.Mutex
	byID map[signInKey]*pendingSignIn
}

type signInKey struct{ office, computer, state string }

type pendingSignIn struct {
	SignIn
	sess *Session
	// taken: a callback is being handed to the computer; the state is
	// used. gone is closed when the computer leaves.
	taken bool
	gone  chan struct{}
}

// ReportSignIn records a sign-in the session (a computer in an office)
// needs, until the callback comes, it expires, or the computer leaves.
func (s *Session) ReportSignIn(si SignIn) error {
	if si.State == "" || si.URL == "" || si.Server == "" {
		return smcp.Errorf(smcp.CodeBadRequest, "a sign-in needs server, url and state")
	}
	// An operator's browser opens it: http(s) only, never javascript: or
	// data:.
	if u, err := url.Parse(si.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return smcp.Errorf(smcp.CodeBadRequest, "a sign-in's url must be an absolute http(s) URL")
	}
	h := s.hub
	// The hub's lock is held to the end, as leaveLocked holds it while it
	// drops the session's sign-ins: none is added after its computer left.
	h.mu.Lock()
	defer h.mu.Unlock()
	name, office := s.name, s.officeID
	if s.closed || s.role != smcp.RoleComputer || office == "" {
		return smcp.Errorf(smcp.CodeForbidden, "only a computer in an office may report a sign-in")
	}
	now := time.Now()
	if si.Expires.IsZero() || si.Expires.After(now.Add(maxSignInTTL)) {
		si.Expires = now.Add(maxSignInTTL)
	}
	si.Office, si.Computer = office, name
	t := &h.signIns
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[signInKey]*pendingSignIn{}
	}
	k := signInKey{office, name, si.State}
	n := 0
	for pk, p := range t.byID {
		switch {
		case !p.taken && !p.Expires.After(now):
			delete(t.byID, pk)
		case p.sess == s && pk != k: // a sign-in reported again replaces itself
			n++
		}
	}
	if n >= maxSignInsPerComputer {
		return smcp.Errorf(codeTooManySignIns, "a computer may have %d sign-ins waiting at most", maxSignInsPerComputer)
	}
	if p := t.byID[k]; p != nil && p.taken {
		return smcp.Errorf(smcp.CodeBadRequest, "this sign-in's state was used already")
	}
	t.byID[k] = &pendingSignIn{SignIn: si, sess: s, gone: make(chan struct{})}
	h.log.Info("sign-in needed", "office", office, "computer", name, "server", si.Server)
	return nil
}

// dropSignIns forgets the sign-ins s reported: it left its office.
func (h *Hub) dropSignIns(s *Session) {
	t := &h.signIns
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, p := range t.byID {
		if p.sess == s {
			delete(t.byID, k)
			close(p.gone)
		}
	}
}

// SignIns lists the sign-ins waiting on this node, of office ("" all),
// by office, computer and server. Operator views only: a sign-in's URL is
// for an operator.
func (h *Hub) SignIns(office string) []SignIn {
	t := &h.signIns
	now := time.Now()
	t.mu.Lock()
	var out []SignIn
	for _, p := range t.byID {
		if !p.taken && p.Expires.After(now) && (office == "" || p.Office == office) {
			out = append(out, p.SignIn)
		}
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Office != b.Office {
			return a.Office < b.Office
		}
		if a.Computer != b.Computer {
			return a.Computer < b.Computer
		}
		return a.Server < b.Server
	})
	return out
}

// CompleteSignIn hands the authorization response of the sign-in of
// computer in office with a.State to that computer (client:auth_callback
// over its connection) and waits for its answer: the server it signed in
// to, or why not. The state is single use: it is forgotten first, whatever
// the computer answers. ErrNoSignIn when nothing waits for it.
func (h *Hub) CompleteSignIn(ctx context.Context, office, computer string, a SignInAnswer) (string, error) {
	t := &h.signIns
	k := signInKey{office, computer, a.State}
	t.mu.Lock()
	p := t.byID[k]
	if p == nil || p.taken || a.State == "" || !p.Expires.After(time.Now()) {
		t.mu.Unlock()
		return "", ErrNoSignIn
	}
	p.taken = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		if t.byID[k] == p {
			delete(t.byID, k)
		}
		t.mu.Unlock()
	}()
	payload, err := json.Marshal(map[string]string{"state": a.State, "code": a.Code, "iss": a.Iss, "error": a.Error})
	if err != nil {
		return "", fmt.Errorf("sign-in callback: %w", err)
	}
	type result struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan result, 1)
	forget := p.sess.conn.Request(smcp.EventAuthCallback, payload, func(raw json.RawMessage, err error) {
		ch <- result{raw, err}
	})
	var r result
	select {
	case r = <-ch:
	case <-p.gone:
		r.err = errors.New("the computer left before it answered")
	case <-ctx.Done():
		r.err = context.Cause(ctx)
	}
	if forget != nil {
		forget()
	}
	if r.err != nil {
		return p.Server, fmt.Errorf("computer %q: sign-in to %q: %w", computer, p.Server, r.err)
	}
	var ans struct {
		Server  string `json:"server"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(r.raw, &ans); err != nil {
		return p.Server, fmt.Errorf("computer %q: sign-in to %q: malformed answer: %w", computer, p.Server, err)
	}
	if ans.Code != 0 {
		return p.Server, fmt.Errorf("computer %q: sign-in to %q: %w", computer, p.Server, smcp.Errorf(ans.Code, "%s", ans.Message))
	}
	return p.Server, nil
}
