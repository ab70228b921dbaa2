package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// session is one MCP client: an agent of its office for as long as the MCP
// session lasts, with its own mcp.Server mirroring the office.
type session struct {
	front     *Server
	id        string
	office    string
	agent     string
	principal *core.Principal
	// own is the session's seat, held from its initialize to its end; nil
	// for an office's shared view (stateless.go), whose calls each bring
	// their own (session.seat).
	own    *seat
	shared bool // an office's shared view: see officeView
	// viewKey is a shared view's key in Server.views (viewKeyOf);
	// viewOwner the key it is counted against (Server.viewBound): the one
	// whose request made it.
	viewKey, viewOwner string
	server             *mcp.Server
	limiter            *rate.Limiter // nil: no limit
	log                *slog.Logger

	// ctx ends when the session closes, or its client's DELETE arrives: it
	// stops the pump, the reads of a refresh in progress and the session's
	// tool calls.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	// credential ends when the session's key or token does (at its
	// expiry, or when the key is revoked: core.Principal.Bound), which
	// ends the session, its GET stream with it; nil for a shared view,
	// which serves every key of its office (its listen streams are bound
	// each to its own, in listen). bearer is the principal it is bound to:
	// a later request with a newer token of the same key moves it on
	// (present). Guarded by mu.
	credential    context.Context
	endCredential context.CancelFunc
	bearer        *core.Principal
	// active counts the client's HTTP requests and streams being served
	// and lastUsed is when the last began or ended, guarded by front.mu:
	// a session with none is idle, and may be reclaimed (Server.open).
	active   int
	lastUsed time.Time
	// bg counts the listings still running after the budget their request
	// waited for (syncBudget); close awaits them. Added to under mu, only
	// while not stopped.
	bg      sync.WaitGroup
	stopped bool

	// inflight counts the client's requests being served: while any is,
	// the pump keeps the seat (a tools/call may outlast a lease).
	inflight atomic.Int64

	mu        sync.Mutex
	watch     *core.Watcher
	computers map[string]*computerView
	// owners maps each listed resource URI to the computer that listed it
	// (the first one, when two computers list the same URI).
	owners map[string]string
	// templates counts, per dpe:// host, the computers serving it.
	templates map[string]int
	vs        viewState // a shared view's own state
	// subs counts the subscriptions of each resource URI (a shared view's
	// listen streams may subscribe to the same URI).
	subs map[string]int
}

// computerView is what a session has listed of one computer.
type computerView struct {
	tools     map[string][]byte // MCP tool name → its JSON, to skip unchanged tools
	windows   map[string][]byte // window URI → resource JSON
	documents map[string][]byte // dpe:// URI (documents and host catalogs) → resource JSON
	skills    map[string][]byte // skill:// URI → resource JSON (0.3/0.4 offices)
	// skillRefs are the skills of the computer's last get_skills answer,
	// by name (skills/list, skills/get: skillsext.go).
	skillRefs map[string]*smcpv1.A2CSkillRef
	hosts     map[string]bool
	// pages maps "host/doc_ref" to the document's page count (completion).
	pages map[string]int
}

func newComputerView() *computerView {
	return &computerView{tools: map[string][]byte{}, windows: map[string][]byte{}, documents: map[string][]byte{},
		skills: map[string][]byte{}, hosts: map[string]bool{}, pages: map[string]int{}}
}

// viewLocked is what the session lists of computer, made on first use;
// nil once the session is closing (nothing is listed any more).
func (x *session) viewLocked(computer string) *computerView {
	if x.ctx.Err() != nil {
		return nil
	}
	c := x.computers[computer]
	if c == nil {
		c = newComputerView()
		x.computers[computer] = c
	}
	return c
}

// newSession takes the office's agent lease and watch, builds the session's
// server and lists every computer already in the office.
func newSession(ctx context.Context, front *Server, id string, p *core.Principal, office, agent string) (*session, error) {
	own, err := front.takeSessionSeat(ctx, p, office, agent)
	if err != nil {
		return nil, err
	}
	watch, err := front.hub.Watch(p, office)
	if err != nil {
		own.release()
		return nil, err
	}
	x := newView(front, id, p, office, agent, watch)
	x.own = own
	x.credential, x.endCredential = p.Bound(context.Background())
	x.bearer = p
	x.server = mcp.NewServer(implementation(office), x.serverOptions())
	x.addSkillMethods()
	x.server.AddReceivingMiddleware(x.middleware)
	if err := x.syncAll(ctx, syncBudget); err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

// newView is the part of a session (or an office's shared view) that
// mirrors the office: the caller adds the seat and the server.
func newView(front *Server, id string, p *core.Principal, office, agent string, watch *core.Watcher) *session {
	x := &session{
		front: front, id: id, office: office, agent: agent, principal: p, watch: watch,
		log:       front.log.With("office", office, "agent", agent, "mcp_session", id[:8]),
		computers: map[string]*computerView{}, owners: map[string]string{}, templates: map[string]int{},
		subs: map[string]int{},
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	if o := front.opts; o.EventsPerSecond > 0 {
		x.limiter = rate.NewLimiter(rate.Limit(o.EventsPerSecond), o.EventBurst)
	}
	return x
}

// serverOptions are the options of the session's (or view's) mcp.Server.
func (x *session) serverOptions() *mcp.ServerOptions {
	office, id := x.office, x.id
	return &mcp.ServerOptions{
		Instructions: "The tools and resources of the computers in SMCP office " + office +
			". Tool names are {computer}__{tool}. Documents are dpe:// resources read level by level: " +
			"a host's catalog, a document (?depth=pages lists its pages), a page, an element; windows are window:// resources.",
		Logger:       x.front.log,
		GetSessionID: func() string { return id },
		// Advertised even while the office is empty: its computers may come.
		Capabilities: &mcp.ServerCapabilities{
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &mcp.CompletionCapabilities{},
			Extensions:  skillsCapability(),
		},
		SubscribeHandler:   x.subscribe,
		UnsubscribeHandler: x.unsubscribe,
		CompletionHandler:  x.complete,
		// 2026-07-28 results say how long they may be cached (SEP-2549):
		// the office's lists change whenever a computer's do, and they are
		// the office's, for callers its keys admit, so not for a shared cache.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs, c.CacheScope = 0, "private"
		},
	}
}

// syncAll lists the office's computers and each one's tools and resources,
// acting as ctx's seat, waiting at most budget: a computer that answers
// later is listed then (the client is sent list_changed), so one that never
// answers delays nobody but itself. A computer that does not answer within
// syncTimeout is logged and left without entries until its next
// notification.
func (x *session) syncAll(ctx context.Context, budget time.Duration) error {
	st, err := x.seat(ctx)
	if err != nil {
		return err
	}
	members, err := st.lease.ListRoomContext(ctx, x.office)
	if err != nil {
		return err
	}
	var names []string
	for _, m := range members {
		if m.GetRole() == smcp.RoleComputer {
			names = append(names, m.GetName())
		}
	}
	x.inBackground(ctx, st, budget, nil, func(ctx context.Context) {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Go(func() { x.syncComputer(ctx, name) })
		}
		wg.Wait()
	})
	return nil
}

// inBackground runs work acting as st, under the session's context (its
// end cancels the work) bounded by syncTimeout, and waits for it at most
// budget (or until ctx ends). after runs when work is done. The work is
// counted in x.bg; once the session is stopped nothing is started (after
// still runs).
func (x *session) inBackground(ctx context.Context, st *seat, budget time.Duration, after func(), work func(context.Context)) {
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		if after != nil {
			after()
		}
		return
	}
	x.bg.Add(1)
	x.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer x.bg.Done()
		defer close(done)
		if after != nil {
			defer after()
		}
		wctx, cancel := context.WithTimeout(withSeat(x.ctx, st), syncTimeout)
		defer cancel()
		work(wctx)
	}()
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		x.log.Debug("listing the office goes on in the background", "budget", budget)
	case <-ctx.Done():
	}
}

func (x *session) syncComputer(ctx context.Context, name string) {
	x.syncTools(ctx, name)
	x.syncResources(ctx, name, true, true)
	x.syncSkills(ctx, name)
}

// run starts the pump: the session follows its office until it closes. The
// caller has counted the goroutine in front.wg.
func (x *session) run() {
	go func() {
		defer x.front.wg.Done()
		x.pump()
	}()
}

// pump turns the office's notifications into changes of the session's
// server, in the order the office saw them.
//
// It also keeps the seat while the client has requests being served, and
// ends the session when an operator evicts its seat.
func (x *session) pump() {
	var idle <-chan time.Time // a shared view checks whether it is still used
	if x.shared {
		t := time.NewTicker(viewIdle / 4)
		defer t.Stop()
		idle = t.C
	}
	// A session's own seat: renewed while requests run, and watched for an
	// eviction.
	var renew <-chan time.Time
	var evicted <-chan struct{}
	if x.own != nil {
		t := time.NewTicker(max(x.front.hub.Config().SeatLease/4, 10*time.Millisecond))
		defer t.Stop()
		renew, evicted = t.C, x.own.lease.Done()
	}
	for {
		x.mu.Lock()
		w, credential := x.watch, x.credential
		x.mu.Unlock()
		if w == nil {
			return
		}
		var credentialEnded <-chan struct{}
		if credential != nil {
			credentialEnded = credential.Done()
		}
		select {
		case <-x.ctx.Done():
			return
		case <-evicted:
			if cause := x.own.lease.Cause(); cause != nil {
				x.log.Warn("mcp session closed: its agent seat was evicted", "err", cause)
			}
			x.close()
			return
		case <-credentialEnded:
			if x.ctx.Err() != nil {
				return // closed: ended with it
			}
			x.mu.Lock()
			moved := x.credential != credential
			x.mu.Unlock()
			if moved {
				continue // bound to a newer token (present)
			}
			// Its client's next request, with a valid credential, gets
			// 404 and initializes anew (MCP's rule for an ended session).
			x.log.Info("mcp session closed: its credential ended", "err", context.Cause(credential))
			x.close()
			return
		case <-renew:
			if x.inflight.Load() > 0 {
				if err := x.own.lease.Renew(x.ctx); err != nil {
					x.log.Info("agent seat not renewed during a request", "err", err)
				}
			}
		case <-idle:
			if x.front.closeIdleView(x) {
				return
			}
		case n, ok := <-w.C():
			if !ok {
				if x.ctx.Err() != nil {
					return
				}
				// The pump fell behind and the hub dropped the watch: watch
				// again and list everything anew.
				x.log.Warn("office watch overflowed; listing the office again", "err", w.Err())
				if !x.rewatch() {
					return
				}
				continue
			}
			if x.shared {
				x.noted(n)
				continue
			}
			ctx, cancel := context.WithTimeout(x.ctx, syncTimeout)
			x.handle(ctx, n)
			cancel()
		}
	}
}

// watchAgain watches the office anew after the hub ended the session's
// watch. It returns with x.mu held and the new watch installed, or false
// (x.mu not held) when the watch cannot be made or the session closed.
func (x *session) watchAgain() bool {
	buffer := 0 // the hub's
	if x.shared {
		buffer = viewWatchBuffer
	}
	w, err := x.front.hub.WatchBuffered(x.principal, x.office, buffer)
	if err != nil {
		x.log.Error("re-watch office", "err", err)
		x.close()
		return false
	}
	x.mu.Lock()
	if x.watch == nil { // closed meanwhile
		x.mu.Unlock()
		w.Close()
		return false
	}
	x.watch = w
	return true
}

func (x *session) rewatch() bool {
	if x.shared {
		// A shared view lists the office anew at its next request.
		return x.rewatchShared()
	}
	if !x.watchAgain() {
		return false
	}
	names := make([]string, 0, len(x.computers))
	for n := range x.computers {
		names = append(names, n)
	}
	x.mu.Unlock()
	members, err := x.own.lease.ListRoom(x.office)
	if err != nil {
		x.log.Error("list office", "err", err)
		return true
	}
	present := map[string]bool{}
	for _, m := range members {
		if m.GetRole() == smcp.RoleComputer {
			present[m.GetName()] = true
		}
	}
	for _, n := range names {
		if !present[n] {
			x.drop(n)
		}
	}
	ctx, cancel := context.WithTimeout(x.ctx, syncTimeout)
	defer cancel()
	for n := range present {
		x.syncComputer(ctx, n)
	}
	return true
}

// listFailed logs a listing of computer that failed: at Debug when the
// computer left the office meanwhile (404; its leave notification follows)
// or the session ended, which a busy office does all the time; else at Warn.
func (x *session) listFailed(what, computer string, err error) {
	if e, ok := smcp.AsError(err); (ok && e.Code == smcp.CodeNotFound) || errors.Is(err, context.Canceled) {
		x.log.Debug(what, "computer", computer, "err", err)
		return
	}
	x.log.Warn(what, "computer", computer, "err", err)
}

// computerNamed is what every notification payload about a computer has.
type computerNamed interface{ GetComputer() string }

// notifiedComputer is the computer a notification is about ("" for an
// agent entering or leaving, a cancellation).
func notifiedComputer(n core.Notification) string {
	if p, ok := n.Payload.(computerNamed); ok {
		return p.GetComputer()
	}
	return ""
}

// handle applies one notification of the office, acting as ctx's seat.
func (x *session) handle(ctx context.Context, n core.Notification) {
	name := notifiedComputer(n)
	if name == "" {
		return
	}
	switch n.Event {
	case smcp.NotifyEnterOffice:
		x.syncComputer(ctx, name)
	case smcp.NotifyLeaveOffice:
		x.drop(name)
	case smcp.NotifyUpdateToolList, smcp.NotifyUpdateConfig:
		x.syncTools(ctx, name)
	case smcp.NotifyUpdateDesktop:
		updated := x.subscribedOf(name, "window")
		x.syncResources(ctx, name, true, false)
		x.notifyUpdated(ctx, updated)
	case smcp.NotifyUpdateFinder:
		updated := x.subscribedOf(name, "dpe")
		x.syncResources(ctx, name, false, true)
		x.notifyUpdated(ctx, updated)
	case smcp.NotifyUpdateSkills:
		updated := x.subscribedOf(name, "skill")
		x.syncSkills(ctx, name)
		x.notifyUpdated(ctx, updated)
	}
}

// drop removes every tool and resource of a computer that left.
func (x *session) drop(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.computers[name]
	if c == nil {
		return
	}
	if len(c.tools) > 0 {
		x.server.RemoveTools(slices.Collect(maps.Keys(c.tools))...)
	}
	x.applyResourcesLocked(name, c, map[string][]byte{}, nil, true, true)
	x.applySkillsLocked(name, c, nil, nil)
	delete(x.computers, name)
}

// request routes one client: event as this session's agent. body holds the
// event's own fields; agent and req_id are added. A protocol error answered
// by the computer is returned as *smcp.Error.
func (x *session) request(ctx context.Context, event string, body map[string]any) (json.RawMessage, error) {
	st, err := x.seat(ctx)
	if err != nil {
		return nil, err
	}
	body["agent"] = st.agent
	if _, ok := body["req_id"]; !ok {
		body["req_id"] = x.front.newReqID()
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%s: %v", event, err)
	}
	return x.route(ctx, event, payload)
}

// syncRequest is request for the session's own reads (tools, desktop,
// finder): a refusal because the agent has too many requests in flight (its
// client's calls count too) is retried with backoff until ctx ends, so that
// a busy office does not leave the session's lists stale.
func (x *session) syncRequest(ctx context.Context, event string, body map[string]any) (json.RawMessage, error) {
	wait := 20 * time.Millisecond
	for {
		raw, err := x.request(ctx, event, body)
		e, ok := smcp.AsError(err)
		if !ok || e.Code != core.CodeTooManyPending {
			return raw, err
		}
		delete(body, "req_id")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// route sends an encoded client: event and returns the computer's answer.
func (x *session) route(ctx context.Context, event string, payload []byte) (json.RawMessage, error) {
	st, err := x.seat(ctx)
	if err != nil {
		return nil, err
	}
	r, err := core.ParseRequest(event, payload)
	if err != nil {
		return nil, err
	}
	return x.routeRequest(ctx, st, r)
}

// routeRequest routes r acting as st and returns the computer's answer.
// The wait ends with ctx or with the session (x.ctx, see x.ended), the way
// core.Session.Route ends with its ctx: watching both here costs a select
// case, where a context ending with either cost two contexts and their
// registrations (context.AfterFunc) per tools/call.
func (x *session) routeRequest(ctx context.Context, st *seat, r *core.Request) (json.RawMessage, error) {
	w := x.front.waiters.Get().(*waiter)
	abandon := st.lease.GoContext(ctx, r, w.done)
	var a routed
	reuse := true
	select {
	case a = <-w.answer:
	case <-ctx.Done():
		a, reuse = w.giveUp(abandon, ctx.Err())
	case <-x.ctx.Done():
		a, reuse = w.giveUp(abandon, context.Canceled)
	}
	if reuse {
		x.front.waiters.Put(w)
	}
	raw, err := a.raw, a.err
	if err != nil {
		return nil, err
	}
	if e, ok := smcp.ErrorFromAck(raw); ok {
		return nil, e
	}
	return raw, nil
}

// routed is the computer's answer to a routed request.
type routed struct {
	raw json.RawMessage
	err error
}

// waiter is where a routed request's answer is awaited: its channel and
// the callback that fills it are made once and reused (Server.waiters),
// rather than a channel and a closure per call. The core calls a
// request's callback exactly once, however the request settles (answer,
// timeout, computer gone, abandon), so a waiter whose answer was taken is
// empty again.
type waiter struct {
	answer chan routed
	done   func(json.RawMessage, error)
}

func newWaiter() any {
	w := &waiter{answer: make(chan routed, 1)}
	w.done = func(raw json.RawMessage, err error) { w.answer <- routed{raw, err} }
	return w
}

// giveUp abandons the request and returns err, as the request's answer.
// The waiter is reusable when the callback has run (abandoning settles the
// request and calls it at once, unless an answer settled it first): what it
// got is taken, so the waiter is empty again. Otherwise it is not reused and
// the late callback fills a channel nobody reads; the request never waits
// for it.
func (w *waiter) giveUp(abandon func(error), err error) (routed, bool) {
	abandon(err)
	select {
	case <-w.answer:
		return routed{err: err}, true
	default:
		return routed{err: err}, false
	}
}

// ended is the error of a request of the session whose context is ctx once
// either has ended (nil while both live): a request ends with its session.
func (x *session) ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.ctx.Err()
}

// close ends the session: its office is free again for another agent.
func (x *session) close() {
	x.closeOnce.Do(func() {
		x.cancel()
		x.mu.Lock()
		w := x.watch
		x.watch = nil
		x.stopped = true
		x.mu.Unlock()
		if w != nil {
			w.Close()
		}
		// The listings still running end with x.ctx; the seat they act as
		// must outlive them.
		x.bg.Wait()
		// The MCP session ends with the lease: its client must initialize
		// again rather than call as an agent it no longer is.
		for ss := range x.server.Sessions() {
			_ = ss.Close()
		}
		if x.own != nil {
			x.own.release()
		}
		x.mu.Lock()
		endCredential := x.endCredential
		x.mu.Unlock()
		if endCredential != nil {
			endCredential()
		}
		if x.shared {
			x.front.forgetView(x)
			x.log.Info("mcp office view closed")
			return
		}
		x.front.forget(x.id)
		x.log.Info("mcp session ended")
	})
}

// present binds the session to p, the principal of one of its requests,
// when p is a newer token of its key (one that expires later): an MCP
// client that refreshes its token goes on in its session rather than
// lose it at the first token's expiry. p is of the session's key (ID), as
// Server.ServeHTTP checked. A key without expiry binds for good: a revoked
// key is not made valid by a request, which its revocation refuses anyway.
func (x *session) present(p *core.Principal) {
	x.mu.Lock()
	cur := x.bearer
	if cur == nil || p == cur || cur.Expires.IsZero() || (!p.Expires.IsZero() && !p.Expires.After(cur.Expires)) || x.stopped {
		x.mu.Unlock()
		return
	}
	old := x.endCredential
	x.credential, x.endCredential = p.Bound(context.Background())
	x.bearer = p
	x.mu.Unlock()
	old() // the pump sees the newer one
}

// allow applies the session's rate limit to one request.
func (x *session) allow() bool { return x.limiter == nil || x.limiter.Allow() }

// middleware applies the rate limit to requests (not to notifications, so
// that a cancellation always gets through) and serves resources/read itself:
// every dpe:// level and query, and window:// URIs, are routed by host and
// document to the computer that serves them, whether or not they are listed.
//
// With a tracer, each request (not notification) is a span, ended here,
// before the go-sdk writes the answer.
func (x *session) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	serve := x.serve(next)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if x.front.opts.Tracer == nil || isNotification(method) {
			return serve(ctx, method, req)
		}
		ctx, span := x.startSpan(ctx, method, req)
		res, err := serve(ctx, method, req)
		endSpan(span, res, err)
		return res, err
	}
}

func (x *session) serve(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !isNotification(method) && method != "initialize" {
			// Each request renews the session's seat: one that lapsed is
			// taken again if it is free; if another agent took it, the
			// request is refused with the holder's name (the session stays,
			// its client may try again later).
			if x.own != nil {
				if err := x.own.lease.Renew(ctx); err != nil {
					return nil, mcpError(err, false)
				}
				x.inflight.Add(1)
				defer x.inflight.Add(-1)
			}
			if !x.allow() {
				return nil, mcpError(smcp.Errorf(core.CodeTooManyPending,
					"rate limit of %g requests per second exceeded", x.front.opts.EventsPerSecond), false)
			}
			// Counted in flight by Server.ServeHTTP; refused here once
			// draining, so that the client gets an MCP error saying why.
			if x.front.calls.Draining() {
				return nil, mcpError(smcp.Errorf(codeUnavailable, "the gateway is shutting down"), false)
			}
		}
		if method == methodListen {
			return x.listen(ctx, next, method, req)
		}
		if rr, ok := req.(*mcp.ReadResourceRequest); ok && method == "resources/read" && rr.Params != nil {
			res, err := x.read(ctx, rr.Params.URI)
			if res != nil {
				// What the go-sdk's own read would say (serverOptions).
				res.Cacheable = mcp.Cacheable{TTLMs: 0, CacheScope: "private"}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

func isNotification(method string) bool {
	return len(method) > len("notifications/") && method[:len("notifications/")] == "notifications/"
}
