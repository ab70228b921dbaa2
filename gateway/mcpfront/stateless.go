package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// MCP 2026-07-28 (SEP-2575) has no sessions: every request carries its
// protocol version and the client's capabilities in _meta, and the go-sdk
// serves it with a stateless StreamableHTTPHandler, one ephemeral
// ServerSession per request. The front end serves such requests from one
// shared view per office (an mcp.Server mirroring the office, as a session's
// does, kept current from the office's notifications), and each request acts
// in the office with a seat of its own, taken for as long as it runs (a
// subscriptions/listen stream: as long as it is open).
//
// A view has no seat, and reads the office (get_tools, get_desktop, ...) only
// on behalf of a caller: the office's notifications are noted, and applied
// by the next request before it is served (waiting at most syncBudget), or
// at once while a subscriptions/listen stream is open, so that its client
// hears of the change. Those reads act as a seat of their own, taken with
// the caller's key and agent name and given back when they end.

const (
	// syncBudget is how long a request (an initialize, a 2026-07-28 request)
	// waits for the office's computers to list their tools and resources; a
	// computer slower than that is listed when it answers, and the client is
	// sent list_changed.
	syncBudget = 800 * time.Millisecond
	// viewIdle closes an office's shared view after this long without
	// requests or listen streams (its watch of the office with it).
	viewIdle = 5 * time.Minute
	// maxPending bounds the notifications a view keeps for its next
	// request; beyond, the whole office is listed again.
	maxPending = 256
	// viewWatchBuffer is a shared view's watch buffer: its pump only notes
	// what it reads, and an overflow lists the office anew, so a view of an
	// office without computers holds a few notifications, not the hub's
	// default buffer (most of what an idle view cost).
	viewWatchBuffer = 16
)

// methodListen is MCP 2026-07-28's stream of notifications.
const methodListen = "subscriptions/listen"

// viewState is what a shared view has beyond a session's mirror; guarded by
// the session's mu.
type viewState struct {
	// pending are the office's notifications not yet applied, in order;
	// resync asks for the whole office to be listed again instead.
	pending []core.Notification
	resync  bool
	// refreshing is closed when the refresh in progress ends; nil when
	// none. It started at refreshed.
	refreshing chan struct{}
	refreshed  time.Time
	// listeners counts the open subscriptions/listen streams.
	listeners int
	// p and agent are the last caller's, whose identity the refreshes done
	// for a listen stream take.
	p     *core.Principal
	agent string
}

type viewKey struct{}

// isStateless reports a request of MCP 2026-07-28 or later: its
// Mcp-Protocol-Version header says so, or (for a client that left the
// header out, which the go-sdk then refuses as the revision requires) its
// body carries the revision's per-request protocol version.
func isStateless(r *http.Request, body []byte) bool {
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= statelessProtocol
	}
	return bytes.Contains(body, []byte(`"io.modelcontextprotocol/protocolVersion"`))
}

// isListen reports a subscriptions/listen request.
func isListen(body []byte) bool {
	if !bytes.Contains(body, []byte(methodListen)) {
		return false
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == methodListen
}

// serveStateless serves one request of MCP 2026-07-28 from the office's
// shared view, acting as agent with a seat of its own.
func (s *Server) serveStateless(w http.ResponseWriter, r *http.Request, p *core.Principal, office, agent string, body []byte) {
	if r.Method != http.MethodPost {
		s.stateless.ServeHTTP(w, r) // the go-sdk's 405
		return
	}
	listen := isListen(body)
	// A listen stream does not end on its own: a drain must not wait for it.
	// While draining, the middleware answers an MCP error saying why.
	if !listen && s.calls.Begin() {
		defer s.calls.End()
	}
	if listen {
		// Bounded before anything is taken for it: a stream holds a seat,
		// goroutines and a connection for as long as its client keeps it.
		release, err := s.takeListen(httpauth.ClientIP(r.RemoteAddr), p.ID)
		if err != nil {
			httpError(w, err)
			return
		}
		defer release()
	}
	st, err := s.takeSeat(r.Context(), p, office, agent)
	if err != nil {
		httpError(w, err)
		return
	}
	defer st.release()
	v, err := s.useView(p, office)
	if err != nil {
		httpError(w, err)
		return
	}
	defer s.doneWithView(v)
	v.refresh(r.Context(), p, agent, syncBudget)
	if listen {
		v.mu.Lock()
		v.vs.listeners++
		v.mu.Unlock()
		defer func() {
			v.mu.Lock()
			v.vs.listeners--
			v.mu.Unlock()
		}()
	}
	ctx := withSeat(context.WithValue(r.Context(), viewKey{}, v), st)
	s.stateless.ServeHTTP(w, r.WithContext(ctx))
}

// statelessServer is the stateless handler's getServer: the request's view.
func (s *Server) statelessServer(r *http.Request) *mcp.Server {
	if v, ok := r.Context().Value(viewKey{}).(*session); ok {
		return v.server
	}
	return s.base
}

// useView returns the office's shared view, made on first use, counted as in
// use until doneWithView.
//
// Views are bounded gateway-wide and per key (the key of the request that
// makes one): a key allowed in every office could otherwise make one per
// office id it names. At a bound the least recently used idle view (no
// request, no listen stream) that makes room is closed; with none, the
// request is refused naming the bound.
func (s *Server) useView(p *core.Principal, office string) (*session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, smcp.Errorf(codeUnavailable, "the gateway is shutting down")
	}
	key := s.viewKeyOf(p, office)
	if v := s.views[key]; v != nil {
		s.viewUsers[v]++
		s.mu.Unlock()
		return v, nil
	}
	var reclaimed *session
	if h, err := s.viewBound.check("", p.ID); err != nil {
		if reclaimed = s.idleViewLocked(h, p.ID); reclaimed == nil {
			s.mu.Unlock()
			return nil, err
		}
		s.dropViewLocked(reclaimed)
	}
	v, err := s.newViewLocked(p, office, key)
	s.mu.Unlock()
	if reclaimed != nil {
		// After the lock: closing waits for the view's listings.
		reclaimed.log.Debug("mcp office view reclaimed, idle, for another office's")
		reclaimed.close()
	}
	return v, err
}

// idleViewLocked is the least recently used view nobody uses whose end
// makes room for a new view of owner (a key) under the bounds h says it hit; nil when
// there is none. Unlike sessions, a view is the office's, not its maker's:
// any idle one may make room under the gateway-wide bound.
func (s *Server) idleViewLocked(h hit, owner string) *session {
	var lru *session
	for _, v := range s.views {
		if s.viewUsers[v] > 0 || (h.key && v.viewOwner != owner) {
			continue
		}
		if lru == nil || s.viewUsed[v].Before(s.viewUsed[lru]) {
			lru = v
		}
	}
	return lru
}

// newViewLocked makes office's shared view, counted against p's key and in
// use by one request.
func (s *Server) newViewLocked(p *core.Principal, office, key string) (*session, error) {
	watch, err := s.hub.WatchBuffered(p, office, viewWatchBuffer)
	if err != nil {
		return nil, err
	}
	v := newView(s, "office:"+office, p, office, "", watch)
	v.shared, v.viewKey, v.viewOwner = true, key, p.ID
	s.viewBound.take("", p.ID)
	v.vs.resync = true // listed by its first request
	v.server = mcp.NewServer(implementation(office), v.serverOptions())
	v.addSkillMethods()
	v.server.AddReceivingMiddleware(v.middleware)
	s.views[key] = v
	s.viewUsers[v] = 1
	s.viewUsed[v] = time.Now()
	// Counted under the lock that Close takes before it waits.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		v.pump()
	}()
	return v, nil
}

// viewKeyOf is the key of the view that serves p in office: one per
// office, or, when the gateway's governance may show each caller other
// tools (core.Config.Guard), one per office and key or token subject.
func (s *Server) viewKeyOf(p *core.Principal, office string) string {
	if s.hub.Config().Guard == nil {
		return office
	}
	return office + "\x00" + p.ID
}

func (s *Server) doneWithView(v *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.viewUsers[v]; ok {
		s.viewUsers[v]--
		s.viewUsed[v] = time.Now()
	}
}

// closeIdleView closes v when nobody used it for viewIdle; it reports
// whether it did.
func (s *Server) closeIdleView(v *session) bool {
	s.mu.Lock()
	idle := s.viewUsers[v] == 0 && time.Since(s.viewUsed[v]) >= viewIdle
	if idle {
		s.dropViewLocked(v)
	}
	s.mu.Unlock()
	if idle {
		v.close()
	}
	return idle
}

// forgetView removes a closed view, however it ended.
func (s *Server) forgetView(v *session) {
	s.mu.Lock()
	s.dropViewLocked(v)
	s.mu.Unlock()
}

func (s *Server) dropViewLocked(v *session) {
	if s.views[v.viewKey] == v {
		delete(s.views, v.viewKey)
		s.viewBound.give("", v.viewOwner)
	}
	delete(s.viewUsers, v)
	delete(s.viewUsed, v)
}

// noted keeps a notification of the office for the view's next request, and
// applies it at once while a listen stream is open.
func (x *session) noted(n core.Notification) {
	if notifiedComputer(n) == "" {
		return
	}
	x.mu.Lock()
	if !x.vs.resync {
		x.vs.pending = append(x.vs.pending, n)
		if len(x.vs.pending) > maxPending {
			x.vs.pending, x.vs.resync = nil, true
		}
	}
	listening, p, agent := x.vs.listeners > 0, x.vs.p, x.vs.agent
	x.mu.Unlock()
	if listening {
		x.refresh(x.ctx, p, agent, 0)
	}
}

// rewatchShared is rewatch for a shared view: watch again, and list the
// whole office at the next refresh.
func (x *session) rewatchShared() bool {
	if !x.watchAgain() {
		return false
	}
	defer x.mu.Unlock()
	x.vs.pending, x.vs.resync = nil, true
	return true
}

// refresh applies what the view has noted of the office (or lists it anew),
// acting as a seat of p and agent taken for the purpose, and waits for it
// (or for a refresh already running) at most budget. It also records p and
// agent as the view's last caller.
func (x *session) refresh(ctx context.Context, p *core.Principal, agent string, budget time.Duration) {
	x.mu.Lock()
	if p != nil {
		x.vs.p, x.vs.agent = p, agent
	}
	if running := x.vs.refreshing; running != nil {
		// Waited for within the budget of the request that started it: a
		// computer that never answers holds the refresh for syncTimeout,
		// and must not delay every request meanwhile, nor what the office
		// notified since (a refresh of its own, beside).
		if left := budget - time.Since(x.vs.refreshed); left > 0 {
			x.mu.Unlock()
			waitAtMost(ctx, running, left)
			return
		}
	}
	pending, resync := x.vs.pending, x.vs.resync
	if (len(pending) == 0 && !resync) || p == nil || x.stopped {
		x.mu.Unlock()
		return
	}
	x.vs.pending, x.vs.resync = nil, false
	done := make(chan struct{})
	x.vs.refreshing, x.vs.refreshed = done, time.Now()
	x.mu.Unlock()
	finish := func(failed bool) {
		x.mu.Lock()
		if failed {
			// Not applied: the next request tries again.
			x.vs.resync = x.vs.resync || resync
			x.vs.pending = append(pending, x.vs.pending...)
		}
		if x.vs.refreshing == done {
			x.vs.refreshing = nil
		}
		x.mu.Unlock()
		close(done)
	}
	rs, err := x.front.takeSeat(ctx, p, x.office, agent)
	if err != nil {
		x.log.Debug("office view not refreshed", "err", err)
		finish(true)
		return
	}
	x.inBackground(ctx, rs, budget, func() { rs.release() }, func(ctx context.Context) {
		defer finish(false)
		if resync {
			x.relist(ctx)
			return
		}
		for _, n := range pending {
			x.handle(ctx, n)
		}
	})
}

// relist lists the office anew, acting as ctx's seat: computers gone are
// dropped, the others listed, side by side.
func (x *session) relist(ctx context.Context) {
	st, err := x.seat(ctx)
	if err != nil {
		return
	}
	members, err := st.lease.ListRoomContext(ctx, x.office)
	if err != nil {
		x.log.Warn("list office", "err", err)
		x.mu.Lock()
		x.vs.resync = true
		x.mu.Unlock()
		return
	}
	present := map[string]bool{}
	for _, m := range members {
		if m.GetRole() == smcp.RoleComputer {
			present[m.GetName()] = true
		}
	}
	x.mu.Lock()
	var gone []string
	for n := range x.computers {
		if !present[n] {
			gone = append(gone, n)
		}
	}
	x.mu.Unlock()
	for _, n := range gone {
		x.drop(n)
	}
	var wg sync.WaitGroup
	for n := range present {
		wg.Go(func() { x.syncComputer(ctx, n) })
	}
	wg.Wait()
}

// listen serves a subscriptions/listen request (next parks until its
// context ends) for as long as the stream may last: until its client
// cancels it, or the gateway closes, or its seat is evicted by an operator
// (the office has another agent then, whom the stream must not overhear),
// or its key or token ends (core.Principal.Bound). In the last two cases
// the stream ends with an MCP error saying why, rather than the result of
// a stream its client closed.
func (x *session) listen(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	st, err := x.seat(ctx)
	if err != nil {
		return nil, mcpError(err, false)
	}
	bound, stop := st.lease.Principal().Bound(ctx)
	defer stop()
	life, end := context.WithCancelCause(bound)
	defer end(nil)
	evicted := make(chan struct{})
	go func() {
		defer close(evicted)
		select {
		case <-st.lease.Done():
			if cause := st.lease.Cause(); cause != nil {
				end(smcp.Errorf(smcp.CodeForbidden, "%v", cause))
			}
		case <-life.Done():
		}
	}()
	res, err := next(life, method, req)
	why := context.Cause(life)
	end(nil)
	<-evicted
	if ctx.Err() == nil && why != nil {
		x.log.Info("mcp listen stream ended", "err", why)
		return nil, mcpError(why, false)
	}
	return res, err
}

func waitAtMost(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
