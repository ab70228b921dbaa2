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
	Office   string `json:"office"`
	Computer string `json:"computer"`
	// Server is the MCP server's name on the computer, BundleID its id.
	Server   string `json:"server"`
	BundleID string `json:"bundle_id,omitempty"`
	// URL is the authorization URL; State its state parameter, the key the
	// callback comes back with. The other nodes of a cluster list a
	// sign-in from this node's report (gateway/opsview) and need no State:
	// a callback is checked on the computer's node.
	URL     string    `json:"url"`
	State   string    `json:"-"`
	Expires time.Time `json:"expires"`
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
	// left, when not nil, answers the callback another node forwarded
	// here: its computer left before it answered.
	left func()
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
	var left []func()
	t.mu.Lock()
	for k, p := range t.byID {
		if p.sess == s {
			delete(t.byID, k)
			close(p.gone)
			if p.left != nil {
				left = append(left, p.left)
			}
		}
	}
	t.mu.Unlock()
	for _, f := range left {
		f()
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
//
// In a cluster the callback may reach any node: a state this node does not
// keep goes to the node the registry says the computer is connected to,
// as a call to it, where the same check is made (serveSignIn).
func (h *Hub) CompleteSignIn(ctx context.Context, office, computer string, a SignInAnswer) (string, error) {
	payload, err := json.Marshal(map[string]string{"state": a.State, "code": a.Code, "iss": a.Iss, "error": a.Error})
	if err != nil {
		return "", fmt.Errorf("sign-in callback: %w", err)
	}
	k := signInKey{office, computer, a.State}
	p, err := h.takeSignIn(k, nil)
	if errors.Is(err, ErrNoSignIn) && h.clustered && a.State != "" {
		return h.forwardSignIn(ctx, office, computer, payload)
	}
	if err != nil {
		return "", err
	}
	defer h.forgetSignIn(k, p)
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
		r.err = errLeftBeforeAnswer
	case <-ctx.Done():
		r.err = context.Cause(ctx)
	}
	if forget != nil {
		forget()
	}
	return signInOutcome(computer, p.Server, r.raw, r.err)
}

var errLeftBeforeAnswer = errors.New("the computer left before it answered")

// takeSignIn marks the sign-in k (reported by sess, when not nil) used
// and returns it; ErrNoSignIn when none waits.
func (h *Hub) takeSignIn(k signInKey, sess *Session) (*pendingSignIn, error) {
	t := &h.signIns
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[k]
	if p == nil || p.taken || k.state == "" || !p.Expires.After(time.Now()) || (sess != nil && p.sess != sess) {
		return nil, ErrNoSignIn
	}
	p.taken = true
	return p, nil
}

// forgetSignIn drops the used sign-in p.
func (h *Hub) forgetSignIn(k signInKey, p *pendingSignIn) {
	t := &h.signIns
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[k] == p {
		delete(t.byID, k)
	}
}

// signInResult is the computer's answer to client:auth_callback, and what
// the computer's node answers the node that forwarded the callback.
type signInResult struct {
	Server  string `json:"server"`
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// signInOutcome is the server and the outcome of the sign-in of computer
// to server (empty: the one the answer names) from the computer's answer
// raw (a signInResult) or the failure err.
func signInOutcome(computer, server string, raw json.RawMessage, err error) (string, error) {
	if err != nil {
		return server, fmt.Errorf("computer %q: sign-in to %q: %w", computer, server, err)
	}
	var ans signInResult
	if err := json.Unmarshal(raw, &ans); err != nil {
		return server, fmt.Errorf("computer %q: sign-in to %q: malformed answer: %w", computer, server, err)
	}
	if server == "" {
		server = ans.Server
	}
	if ans.Code != 0 {
		return server, fmt.Errorf("computer %q: sign-in to %q: %w", computer, server, smcp.Errorf(ans.Code, "%s", ans.Message))
	}
	return server, nil
}

// noSignInRefusal is how the computer's node tells the node that forwarded
// a callback that no sign-in waits for its state (ErrNoSignIn there).
func noSignInRefusal() *RefusedError {
	return &RefusedError{Wire: smcp.Errorf(smcp.CodeNotFound, "%s", ErrNoSignIn.Error())}
}

func isNoSignInRefusal(err error) bool {
	var refused *RefusedError
	return errors.As(err, &refused) && refused.Wire.Code == smcp.CodeNotFound && refused.Wire.Message == ErrNoSignIn.Error()
}

// forwardSignInTimeout bounds a forwarded callback when ctx has no
// deadline.
const forwardSignInTimeout = 30 * time.Second

// forwardSignIn sends the callback payload to the node computer of office
// is connected to, if another, and waits for its outcome.
func (h *Hub) forwardSignIn(ctx context.Context, office, computer string, payload json.RawMessage) (string, error) {
	m, ok, err := h.cfg.Registry.Computer(ctx, office, computer)
	if err != nil {
		h.logRegistry("registry computer", err, "office", office, "name", computer)
		return "", fmt.Errorf("computer %q: sign-in: find its node: %w", computer, err)
	}
	if !ok || m.Node == h.cfg.Node {
		return "", ErrNoSignIn
	}
	deadline := forwardSignInTimeout
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	type result struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan result, 1)
	forget := h.peers.Request(m, smcp.EventAuthCallback, payload, deadline, func(raw json.RawMessage, err error) {
		ch <- result{raw, err}
	})
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		r.err = context.Cause(ctx)
	}
	if forget != nil {
		forget()
	}
	switch {
	case isNoSignInRefusal(r.err), errors.Is(r.err, ErrNoSession):
		return "", ErrNoSignIn
	case r.err != nil:
		return "", fmt.Errorf("computer %q: sign-in: node %s: %w", computer, m.Node, r.err)
	}
	return signInOutcome(computer, "", r.raw, nil)
}

// serveSignIn completes, for the node that received it, the callback of a
// sign-in of computer session s (Serve of client:auth_callback): the state
// is checked and used here, where the sign-in is kept. done gets a
// signInResult naming the server, whatever the computer answers; no
// sign-in waiting is a noSignInRefusal.
func (h *Hub) serveSignIn(s *Session, payload json.RawMessage, done func(json.RawMessage, error)) (forget func(), err error) {
	var a struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(payload, &a); err != nil {
		return nil, noSignInRefusal()
	}
	h.mu.Lock()
	k := signInKey{s.officeID, s.name, a.State}
	h.mu.Unlock()
	p, err := h.takeSignIn(k, s)
	if err != nil {
		return nil, noSignInRefusal()
	}
	var once sync.Once
	finish := func(raw json.RawMessage, err error) {
		once.Do(func() {
			h.forgetSignIn(k, p)
			res := signInResult{Server: p.Server}
			switch {
			case err != nil:
				res.Code, res.Message = smcp.CodeInternal, err.Error()
				if e, ok := smcp.AsError(err); ok {
					res.Code, res.Message = e.Code, e.Message
				}
			default:
				var ans signInResult
				if uerr := json.Unmarshal(raw, &ans); uerr != nil {
					res.Code, res.Message = smcp.CodeInternal, "malformed answer: "+uerr.Error()
				} else {
					res.Code, res.Message = ans.Code, ans.Message
				}
			}
			b, merr := json.Marshal(res)
			done(b, merr)
		})
	}
	h.onSignInLeft(p, func() { finish(nil, errLeftBeforeAnswer) })
	connForget := s.conn.Request(smcp.EventAuthCallback, payload, finish)
	return func() {
		// The forwarding node gave up: the state stays used.
		if connForget != nil {
			connForget()
		}
		h.forgetSignIn(k, p)
	}, nil
}

// onSignInLeft has f called when the computer of the used sign-in p
// leaves (at once if it has).
func (h *Hub) onSignInLeft(p *pendingSignIn, f func()) {
	t := &h.signIns
	t.mu.Lock()
	select {
	case <-p.gone:
		t.mu.Unlock()
		f()
		return
	default:
	}
	p.left = f
	t.mu.Unlock()
}
