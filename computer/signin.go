package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// SignInTTL is how long a sign-in started for a host waits for its
// authorization response.
const SignInTTL = 10 * time.Minute

// SignInRequest is a sign-in a headless computer needs: its host shows
// the URL to an operator (never to an agent: the MCP specification forbids
// authorization URLs in auth_hint) and hands the authorization response
// back with CompleteSignIn.
type SignInRequest struct {
	// Server is the server's name, BundleID its bundle id.
	Server, BundleID string
	// URL is the authorization URL, State its state parameter (the key of
	// CompleteSignIn).
	URL, State string
	Expires    time.Time
}

// signIns are the sign-ins this computer started for its host.
type signIns struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	byState map[string]*pendingSignIn
	active  map[string]bool // server name -> a sign-in is being started or waits
}

type pendingSignIn struct {
	server string
	req    SignInRequest
	p      *upstreamauth.SignIn
	ended  chan struct{}
}

func newSignIns() *signIns {
	ctx, cancel := context.WithCancel(context.Background())
	return &signIns{ctx: ctx, cancel: cancel, byState: map[string]*pendingSignIn{}, active: map[string]bool{}}
}

// close abandons the sign-ins in progress and waits for them.
func (s *signIns) close() {
	// Under mu: a sign-in that startSignIn counts is counted before Wait.
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
}

// startSignIn starts the host-driven sign-in of a server whose initialize
// was refused with a Bearer 401, unless one is under way: discovery and
// registration run here, off the server's goroutine, and the request goes
// to Options.OnSignIn. It is a no-op unless the computer has a token
// store, a redirect URI and a host to tell.
func (c *Computer) startSignIn(name string) {
	o := c.opts
	if o.AuthStore == nil || o.SignInRedirect == "" || o.OnSignIn == nil {
		return
	}
	snap, ok := c.servers.Snapshot(name)
	if !ok || snap.Config == nil {
		return
	}
	srv := upstreamauth.Server{ID: snap.BundleID, Name: name}
	switch p := snap.Config.Params; {
	case p.Streamable != nil:
		srv.URL, srv.Headers = p.Streamable.URL, p.Streamable.Headers
	case p.SSE != nil:
		srv.URL, srv.Headers, srv.SSE = p.SSE.URL, p.SSE.Headers, true
	default:
		return
	}
	s := c.signIns
	s.mu.Lock()
	if s.active[name] || s.ctx.Err() != nil {
		s.mu.Unlock()
		return
	}
	s.active[name] = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.active, name)
			s.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(s.ctx, SignInTTL)
		defer cancel()
		p, err := upstreamauth.Begin(ctx, srv, o.SignInRedirect, upstreamauth.LoginOptions{Store: o.AuthStore, Log: c.log})
		if err != nil {
			c.log.Warn("upstream auth: cannot start the sign-in", "server", name, "err", err)
			return
		}
		deadline, _ := ctx.Deadline()
		req := SignInRequest{Server: name, BundleID: snap.BundleID, URL: p.URL, State: p.State, Expires: deadline}
		pend := &pendingSignIn{server: name, req: req, p: p, ended: make(chan struct{})}
		s.mu.Lock()
		s.byState[p.State] = pend
		s.mu.Unlock()
		c.log.Info("upstream auth: sign-in needed; the host shows its link to operators", "server", name)
		o.OnSignIn(req)
		select {
		case <-pend.ended:
		case <-ctx.Done():
			s.mu.Lock()
			_, waiting := s.byState[p.State]
			delete(s.byState, p.State)
			s.mu.Unlock()
			if waiting {
				p.Cancel()
				c.log.Info("upstream auth: sign-in abandoned", "server", name, "reason", context.Cause(ctx))
				return
			}
			<-pend.ended // CompleteSignIn holds it
		}
	}()
}

// ErrNoSignIn is returned by CompleteSignIn for a state it does not know
// (never issued, used already, or expired).
var ErrNoSignIn = errors.New("no sign-in in progress has this state")

// CompleteSignIn hands a sign-in the authorization response its host
// received (code, state, iss; or oauthError, the callback's error
// parameter), and waits for the token to be stored: the server connects
// at its next attempt. It names the server signed in to.
func (c *Computer) CompleteSignIn(code, state, iss, oauthError string) (string, error) {
	s := c.signIns
	s.mu.Lock()
	pend := s.byState[state]
	delete(s.byState, state)
	s.mu.Unlock()
	if pend == nil {
		return "", ErrNoSignIn
	}
	defer close(pend.ended)
	var err error
	if oauthError != "" {
		_, err = pend.p.Fail(oauthError)
	} else {
		_, err = pend.p.Complete(code, state, iss)
	}
	if err != nil {
		return pend.server, fmt.Errorf("sign-in to %q: %w", pend.server, err)
	}
	c.log.Info("upstream auth: signed in", "server", pend.server)
	return pend.server, nil
}

// authRequired reacts to a server refused for authorization.
func (c *Computer) authRequired(ev servers.Event) { c.startSignIn(ev.Server) }

// GatewaySignInRedirect is the redirect URI of a sign-in the gateway at
// base (its URL as browsers reach it) receives for computer name of
// office: its /oauth/callback/{office}/{computer}.
func GatewaySignInRedirect(base, office, name string) string {
	return strings.TrimSuffix(base, "/") + "/oauth/callback/" + url.PathEscape(office) + "/" + url.PathEscape(name)
}

// reportSignIn is OnSignIn when the host is the gateway: the request goes
// over the link as server:auth_required. Without a link now, it goes at
// the next join (reportSignIns).
func (c *Computer) reportSignIn(r SignInRequest) {
	c.linkMu.Lock()
	link := c.link
	c.linkMu.Unlock()
	if link == nil {
		return
	}
	if err := link.Emit(smcp.EventAuthRequired, map[string]any{"server": r.Server, "bundle_id": r.BundleID,
		"url": r.URL, "state": r.State, "expires_at": r.Expires.UTC().Format(time.RFC3339)}); err != nil {
		c.log.Warn("upstream auth: the sign-in not reported to the gateway", "server", r.Server, "err", err)
	}
}

// reportSignIns reports again the sign-ins that wait: a gateway forgets a
// computer's when it leaves (a reconnect, a failover to another node).
func (c *Computer) reportSignIns() {
	if !c.signInViaLink {
		return
	}
	s := c.signIns
	s.mu.Lock()
	reqs := make([]SignInRequest, 0, len(s.byState))
	for _, p := range s.byState {
		reqs = append(reqs, p.req)
	}
	s.mu.Unlock()
	for _, r := range reqs {
		c.opts.OnSignIn(r)
	}
}

// authCallback answers client:auth_callback: the gateway received the
// authorization response of one of this computer's sign-ins. The answer
// is {server} or a flat error; the code is never logged.
func (c *Computer) authCallback(payload any) any {
	var m struct {
		State string `json:"state"`
		Code  string `json:"code"`
		Iss   string `json:"iss"`
		Error string `json:"error"`
	}
	if err := decodeJSON(payload, &m); err != nil {
		return smcp.Errorf(smcp.CodeBadRequest, "%s: %v", smcp.EventAuthCallback, err).Wire()
	}
	server, err := c.CompleteSignIn(m.Code, m.State, m.Iss, m.Error)
	switch {
	case errors.Is(err, ErrNoSignIn):
		return smcp.Errorf(smcp.CodeNotFound, "%v", err).Wire()
	case err != nil:
		c.log.Warn("upstream auth: sign-in failed", "server", server, "err", err)
		return smcp.Errorf(smcp.CodeToolAuthorizationFailed, "%v", err).Wire()
	}
	return map[string]any{"server": server}
}

// decodeJSON decodes a payload that is raw JSON bytes (a Socket.IO
// connection's) or a value that encodes to JSON (an in-process caller's).
func decodeJSON(payload any, v any) error {
	b, ok := payload.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(payload); err != nil {
			return err
		}
	}
	return json.Unmarshal(b, v)
}
