// Package mcpfront serves every office of a gateway as one MCP server, over
// streamable HTTP at /mcp/{office_id} (the MCP go-sdk's server and its
// StreamableHTTPHandler). It is the gateway's third front end beside the
// Socket.IO one (gateway/sio) and the Connect API (gateway/rpc), and goes
// through gateway/core like them: any MCP client (Claude Desktop, VS Code,
// Cursor, agent kits) uses every computer of an office with no SMCP code.
//
// One MCP session is one agent of the office: the session holds the
// office's agent seat (core.Hub.TakeSeat) as a lease that each request
// renews and that lapses core.Config.SeatLease after the last one, so that
// a client that vanished frees the office long before the session's idle
// timeout; a later request of that session takes the seat again if it is
// free, or is refused naming the agent that took it. An operator's
// EvictAgent closes the session. (A stateless request, without a session,
// takes the seat for its own length: TakeSeat with core.Seat{Front:
// core.FrontMCP}, closed when it is answered.) Each session
// has its own mcp.Server whose tools and resources mirror what its office
// holds, kept current from the office's notifications (core.Hub.Watch): the
// go-sdk then sends tools/list_changed and resources/list_changed to that
// session alone, so no session ever sees another office.
//
// What the office offers, as MCP:
//
//   - tools: the union of the computers' tools, named "{computer}__{tool}"
//     (the computer's alias-resolved names), schemas and annotations carried
//     over; tools/call is a client:tool_call with the call's deadline, whose
//     result reaches the client as the computer wrote it (SMCP's "meta"
//     renamed "_meta"), and an MCP cancellation (notifications/cancelled)
//     becomes server:tool_call_cancel, which makes the computer cancel its
//     own MCP call;
//   - resources: desktop windows (window://) and finder documents (dpe://),
//     one catalog resource per dpe:// host, the dpe:// URI templates;
//     resources/read goes through the computer's read bridge at every level;
//     subscriptions get resources/updated when the owning computer sends
//     update_desktop / update_finder;
//   - completion of the dpe:// template arguments doc_ref and page_index,
//     from the finder the gateway already holds;
//   - skills: skill:// resources, and the MCP Skills extension's
//     skills/list and skills/get (skillsext.go).
//
// What SMCP cannot carry, and so this front end does not offer: progress
// notifications (SMCP has no progress event from a computer to an agent), and
// the computers' own MCP completion (SMCP has no completion event).
package mcpfront

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/inflight"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of Options.
const (
	// Pattern is where Mount serves the endpoint (net/http ServeMux syntax).
	Pattern             = "/mcp/{office_id}"
	DefaultAPIKeyHeader = "x-api-key"
	// AgentHeader names the agent of a caller whose key has no fixed name
	// (the same header as the Connect API's).
	AgentHeader  = httpauth.AgentHeader
	DefaultAgent = "mcp-agent"
	// DefaultToolTimeout is a tools/call's SMCP timeout when the call carries
	// no deadline of its own.
	DefaultToolTimeout     = 60 * time.Second
	DefaultMaxRequestBytes = 4 << 20
	DefaultEventsPerSecond = 2000
	DefaultEventBurst      = 4000
	DefaultMaxSessions     = 1024
	// DefaultMaxSessionsPerAddr bounds the sessions of one client IP. An MCP
	// client opens one session per configured server, and a session is an
	// agent of one office, so even a team behind one NAT needs a few dozen;
	// at 1/16 of DefaultMaxSessions, one address (a runaway client, a
	// reconnect loop that never sends DELETE) cannot lock every other client
	// out of the gateway.
	DefaultMaxSessionsPerAddr = 64
	// DefaultMaxSessionsPerKey bounds the sessions of one key (or token
	// subject), from however many addresses: at 1/4 of DefaultMaxSessions,
	// one key cannot hold every session of the gateway.
	DefaultMaxSessionsPerKey = 256
	// DefaultMaxListenStreams, DefaultMaxListenStreamsPerAddr and
	// DefaultMaxListenStreamsPerKey bound the open subscriptions/listen
	// streams (MCP 2026-07-28): each holds a seat, goroutines and a
	// connection for as long as its client keeps it. A client needs one per
	// office it follows, so the bounds are those of sessions.
	DefaultMaxListenStreams        = 1024
	DefaultMaxListenStreamsPerAddr = 64
	DefaultMaxListenStreamsPerKey  = 256
	// DefaultMaxOfficeViews and DefaultMaxOfficeViewsPerKey bound the
	// offices' shared views (stateless.go), which any key allowed in every
	// office could otherwise make one per office id it names. An idle one
	// is reclaimed before a new one is refused.
	DefaultMaxOfficeViews       = 1024
	DefaultMaxOfficeViewsPerKey = 256
	// DefaultSessionTimeout closes a session (and frees its office) after
	// this long without a request from its client.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxDocuments bounds the finder documents listed as resources per
	// computer; the others stay readable by URI.
	DefaultMaxDocuments = 1000
	// syncTimeout bounds the reads that refresh one computer's tools or
	// resources.
	syncTimeout = 30 * time.Second
)

// statelessProtocol is the first MCP version without sessions (SEP-2575),
// which a stateful endpoint refuses with the versions it speaks.
const statelessProtocol = "2026-07-28"

// Options configure the front end. Zero fields take the defaults.
type Options struct {
	// APIKeyHeader carries the API key; "Authorization: Bearer <key>" is
	// always accepted too.
	APIKeyHeader string
	// DefaultAgent is the agent name of a key without a fixed name whose
	// client sends no AgentHeader.
	DefaultAgent string
	// DefaultToolTimeout is the SMCP timeout of a call without a deadline.
	DefaultToolTimeout time.Duration
	// MaxRequestBytes bounds an HTTP request body (413 beyond).
	MaxRequestBytes int64
	// EventsPerSecond and EventBurst are each session's token bucket over
	// its requests: beyond it a request gets an error with SMCP code 429.
	// Negative EventsPerSecond: no limit.
	EventsPerSecond float64
	EventBurst      int
	// MaxSessions bounds the open MCP sessions of the gateway (429 beyond).
	MaxSessions int
	// MaxBlobBytes bounds the bytes drained from blob handles for one
	// answer (a skill file, a tool result's items); 0: DefaultMaxBlobBytes.
	MaxBlobBytes int
	// MaxSessionsPerAddr bounds the open MCP sessions of one client IP
	// address (the TCP peer; 429 beyond). Negative: no limit.
	MaxSessionsPerAddr int
	// MaxSessionsPerKey bounds the open MCP sessions of one key (a
	// principal's ID). Negative: no limit. At either bound, the least
	// recently used idle session (no request in flight, no open stream) of
	// the same address or key is closed to make room; with none, 429.
	MaxSessionsPerKey int
	// MaxListenStreams, MaxListenStreamsPerAddr and MaxListenStreamsPerKey
	// bound the open subscriptions/listen streams (429 beyond); per address
	// and per key, negative: no limit.
	MaxListenStreams        int
	MaxListenStreamsPerAddr int
	MaxListenStreamsPerKey  int
	// MaxOfficeViews and MaxOfficeViewsPerKey bound the offices' shared
	// views of 2026-07-28 requests, each counted against the key whose
	// request made it (per key, negative: no limit). At a bound the least
	// recently used idle view is closed; with none, 429.
	MaxOfficeViews       int
	MaxOfficeViewsPerKey int
	// SessionTimeout closes a session idle that long.
	SessionTimeout time.Duration
	// MaxDocuments bounds the finder documents listed per computer.
	MaxDocuments int
	Logger       *slog.Logger
	// Tracer, when set, makes every MCP request a server span (see
	// TracerName); nil: no tracing.
	Tracer trace.Tracer
	// AuthorizationServers, when set (the OIDC issuer whose tokens sign
	// in), make each office's endpoint an OAuth protected resource: its
	// metadata (RFC 9728) at MetadataPrefix+"/mcp/{office_id}", and 401s
	// that point to it.
	AuthorizationServers []string
	// Scopes are published in the metadata as scopes_supported.
	Scopes []string
	// AllowedOrigins are the web origins (httpauth.Origins: an origin,
	// "https://*.example.com", or "*" for any) whose pages may call the
	// endpoint, beside the request's own host and loopback; a request with
	// another Origin gets 403. Requests without Origin (clients that are
	// not browsers) are allowed.
	AllowedOrigins []string
	// AllowedHosts are host names a loopback listener answers besides
	// loopback ones (httpauth.Rebound).
	AllowedHosts []string
	// PublicURL is the gateway's URL as clients reach it (behind a proxy:
	// https://gateway.example.com), for the metadata's resource; default:
	// the scheme and host each request was sent to.
	PublicURL string
	// Peers, in a cluster, makes session ids name this node and forwards
	// the requests of other nodes' sessions to them (see forward.go); nil:
	// one node.
	Peers Peers
}

func (o Options) withDefaults() Options {
	if o.APIKeyHeader == "" {
		o.APIKeyHeader = DefaultAPIKeyHeader
	}
	if o.DefaultAgent == "" {
		o.DefaultAgent = DefaultAgent
	}
	if o.DefaultToolTimeout <= 0 {
		o.DefaultToolTimeout = DefaultToolTimeout
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.EventsPerSecond == 0 {
		o.EventsPerSecond = DefaultEventsPerSecond
	}
	if o.EventBurst <= 0 {
		o.EventBurst = max(DefaultEventBurst, int(2*o.EventsPerSecond))
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxBlobBytes <= 0 {
		o.MaxBlobBytes = DefaultMaxBlobBytes
	}
	if o.MaxSessionsPerAddr == 0 {
		o.MaxSessionsPerAddr = DefaultMaxSessionsPerAddr
	}
	if o.MaxSessionsPerKey == 0 {
		o.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	if o.MaxListenStreams <= 0 {
		o.MaxListenStreams = DefaultMaxListenStreams
	}
	if o.MaxListenStreamsPerAddr == 0 {
		o.MaxListenStreamsPerAddr = DefaultMaxListenStreamsPerAddr
	}
	if o.MaxListenStreamsPerKey == 0 {
		o.MaxListenStreamsPerKey = DefaultMaxListenStreamsPerKey
	}
	if o.MaxOfficeViews <= 0 {
		o.MaxOfficeViews = DefaultMaxOfficeViews
	}
	if o.MaxOfficeViewsPerKey == 0 {
		o.MaxOfficeViewsPerKey = DefaultMaxOfficeViewsPerKey
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxDocuments <= 0 {
		o.MaxDocuments = DefaultMaxDocuments
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Server is the MCP front end of one hub. It is an http.Handler for Pattern.
type Server struct {
	hub     *core.Hub
	auth    core.Authenticator
	opts    Options
	origins httpauth.Origins
	log     *slog.Logger
	handler *mcp.StreamableHTTPHandler
	// stateless serves MCP 2026-07-28 requests (stateless.go).
	stateless *mcp.StreamableHTTPHandler
	// keyHeader and agentHeader are APIKeyHeader and AgentHeader in
	// canonical form: Header.Get makes that form anew, allocating, for a
	// name not in it, on every request.
	keyHeader, agentHeader string
	// base answers the handler's protocol-version checks on requests of
	// sessions that exist already; it never has a session of its own.
	base *mcp.Server

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by MCP session id
	// views are the offices' shared views of 2026-07-28 requests, with
	// the requests using each and when one last ended.
	views     map[string]*session
	viewUsers map[*session]int
	viewUsed  map[*session]time.Time
	// holders is the client IP and key of every session in sessions
	// (reserved ones too), whose slot in sessionBound it holds; both change
	// with sessions, in open and releaseLocked.
	holders      map[string]holder
	sessionBound *bound
	// listens counts the open subscriptions/listen streams, viewBound the
	// shared views (against the keys of views' owner).
	listens, viewBound *bound
	// draining refuses new sessions and requests; inflight counts the
	// requests being served (tools/call, resources/read, ...), and idle is
	// closed when draining and none is left.
	calls inflight.Gate
	// wg counts every goroutine of every session, awaited by Close.
	wg sync.WaitGroup
	// waiters are the reusable waits of routed requests (routeRequest).
	waiters sync.Pool
	// reqPrefix and reqSeq make the ids of the requests sent to computers
	// (newReqID).
	reqPrefix string
	reqSeq    atomic.Uint64

	// Cluster only: peers locates the owners of other nodes' sessions, fwd
	// proxies to them (Close ends the proxied streams).
	peers Peers
	fwd   *forwarder
}

// New makes the MCP front end of hub, authenticating callers with auth.
func New(hub *core.Hub, auth core.Authenticator, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{hub: hub, auth: auth, opts: opts, log: opts.Logger,
		sessions: map[string]*session{}, holders: map[string]holder{},
		sessionBound: newBound("MCP sessions", opts.MaxSessions, opts.MaxSessionsPerAddr, opts.MaxSessionsPerKey),
		listens:      newBound("MCP listen streams", opts.MaxListenStreams, opts.MaxListenStreamsPerAddr, opts.MaxListenStreamsPerKey),
		viewBound:    newBound("MCP office views", opts.MaxOfficeViews, 0, opts.MaxOfficeViewsPerKey),
		views:        map[string]*session{}, viewUsers: map[*session]int{}, viewUsed: map[*session]time.Time{},
		peers: opts.Peers, reqPrefix: "mcp-" + rand.Text()[:10] + "-",
		keyHeader: http.CanonicalHeaderKey(opts.APIKeyHeader), agentHeader: http.CanonicalHeaderKey(AgentHeader)}
	s.waiters.New = newWaiter
	if s.peers != nil {
		s.fwd = newForwarder(s.peers, opts.Logger)
	}
	s.base = mcp.NewServer(implementation(""), nil)
	s.stateless = mcp.NewStreamableHTTPHandler(s.statelessServer, &mcp.StreamableHTTPOptions{
		Logger:              opts.Logger,
		Stateless:           true,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		JSONResponse:        true,
		// Rebound requests are refused before (ServeHTTP), with the
		// configured hosts allowed, which the go-sdk's own check knows not.
		DisableLocalhostProtection: len(opts.AllowedHosts) > 0,
		// The POST is the request's whole life: a client gone cancels its
		// call (and the computer's) as a cancellation would.
		PropagateRequestCancellation: true,
		ErrorStatus:                  errorStatus,
	})
	s.handler = mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{
		Logger:              opts.Logger,
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		// A POST is answered as one JSON body rather than an event stream: the
		// spec lets the server choose (the client accepts both), nothing of
		// ours is sent during a request (no progress over SMCP), and the
		// stream framing costs the gateway per call.
		JSONResponse:               true,
		DisableLocalhostProtection: len(opts.AllowedHosts) > 0, // as above
		ErrorStatus:                errorStatus,
	})
	s.origins, _ = httpauth.ParseOrigins(opts.AllowedOrigins) // checked where configured
	return s
}

func implementation(office string) *mcp.Implementation {
	name := "smcp-gateway"
	if office != "" {
		name += " office " + office
	}
	return &mcp.Implementation{Name: name, Title: name, Version: "0.2.0"}
}

// Mount serves the endpoint at Pattern on mux, and its protected-resource
// metadata when tokens of an authorization server sign in.
func (s *Server) Mount(mux *http.ServeMux) {
	mux.Handle(Pattern, s)
	if s.protectedResource() {
		mux.HandleFunc("GET "+MetadataPrefix+Pattern, s.serveMetadata)
	}
}

type sessionKey struct{}

// serverFor is the go-sdk's getServer: the new session's own server for the
// request that opens it, the base server otherwise.
func (s *Server) serverFor(r *http.Request) *mcp.Server {
	if sess, ok := r.Context().Value(sessionKey{}).(*session); ok {
		return sess.server
	}
	return s.base
}

// ServeHTTP authenticates the caller, checks that its key may act as an agent
// of the office, opens a session on a POST without Mcp-Session-Id (the
// initialize) and hands the request to the go-sdk.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.foreignOrigin(r) {
		// Before anything else (the 403 MCP's transport asks for): a web page may not use the caller's
		// credentials (cookies do not sign in, but a local gateway's
		// insecure mode takes no key at all).
		w.Header().Set("Vary", "Origin")
		httpError(w, smcp.Errorf(smcp.CodeForbidden, "requests from origin %q are not allowed (see --mcp-allowed-origins)", r.Header.Get("Origin")))
		return
	}
	office := r.PathValue("office_id")
	if strings.TrimSpace(office) == "" {
		httpError(w, smcp.Errorf(smcp.CodeNotFound, "no office in the path: use /mcp/{office_id}"))
		return
	}
	if httpauth.Rebound(r, s.opts.AllowedHosts) {
		// The go-sdk refuses it too (unless AllowedHosts turned its own
		// check off); refusing first takes no lease.
		httpError(w, httpauth.ReboundError(r))
		return
	}
	// Authenticated here even when the session is another node's: an
	// unauthenticated client cannot use this node as a proxy.
	p, agent, err := s.caller(r)
	if err != nil {
		s.refuse(w, r, err)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if s.peers != nil && sid != "" {
		if owner := ownerOf(sid); owner != "" && owner != s.peers.ID() {
			s.forward(w, r, owner) // the owner checks the body
			return
		}
	}
	var body []byte
	if r.Method == http.MethodPost {
		if body, err = s.checkBody(r); err != nil {
			httpError(w, err)
			return
		}
	}
	if sid == "" && isStateless(r, body) {
		s.serveStateless(w, r, p, office, agent, body)
		return
	}
	if sid != "" {
		// A session answers only to the key and office that opened it; to
		// anyone else it does not exist.
		s.mu.Lock()
		sess := s.sessions[sid]
		if sess != nil && (sess.office != office || sess.principal.ID != p.ID) {
			s.mu.Unlock()
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if sess != nil {
			// Busy while any request or stream of it is served: only an
			// idle session may be reclaimed for a new one (open).
			sess.active++
			sess.lastUsed = time.Now()
			defer s.idle(sess)
		}
		s.mu.Unlock()
		if sess != nil && p != sess.principal {
			sess.present(p) // a refreshed token
		}
		// A request is in flight until its answer is written, not only
		// until its handler returns: counted here, the drain waits for the
		// go-sdk to write the answer before Close ends the session.
		// (Streams are GETs and are not counted: they never end on their own.)
		if r.Method == http.MethodPost && s.calls.Begin() {
			defer s.calls.End()
		}
		if r.Method == http.MethodDelete && sess != nil {
			// The go-sdk ends a session once its calls are done: end them
			// first (each is cancelled at its computer), or a slow one
			// would hold the DELETE, and run on for nobody.
			sess.cancel()
		}
		s.handler.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		// The go-sdk's own answer: 400 / 405; it needs no office.
		s.handler.ServeHTTP(w, r)
		return
	}
	sess, err := s.open(r.Context(), p, office, agent, httpauth.ClientIP(r.RemoteAddr))
	if err != nil {
		httpError(w, err)
		return
	}
	s.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
	s.started(sess)
	s.idle(sess) // open counted its initialize as busy
}

// idle ends one request or stream of sess (see session.active).
func (s *Server) idle(sess *session) {
	s.mu.Lock()
	sess.active--
	sess.lastUsed = time.Now()
	s.mu.Unlock()
}

// checkBody refuses a body that is not UTF-8 (400, nothing relayed). The
// go-sdk decodes it with encoding/json, which would replace such bytes with
// U+FFFD and relay text the client did not write, where the Socket.IO and
// Connect front ends refuse it (smcp.CheckJSON). The body is read here and
// handed on as read; a body over the limit is left to the go-sdk's 413.
func (s *Server) checkBody(r *http.Request) ([]byte, error) {
	body, err := readBody(r.Body, r.ContentLength, s.opts.MaxRequestBytes+1)
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "reading the request body: %v", err)
	}
	if int64(len(body)) > s.opts.MaxRequestBytes {
		// The rest is still to be read: the go-sdk counts it for its 413.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		return body, nil
	}
	// Read to its end: the go-sdk reads the same bytes again.
	rc := &readCloser{Closer: r.Body}
	rc.Reset(body)
	r.Body = rc
	if err := smcp.CheckUTF8(body); err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "request body: %v", err)
	}
	return body, nil
}

// presizeMax bounds the buffer readBody sizes from a Content-Length.
const presizeMax = 64 << 10

// readCloser is a body already read (Reader) whose Close still closes the
// request's own body: one allocation (a pointer in an io.ReadCloser, the
// reader within).
type readCloser struct {
	bytes.Reader
	io.Closer
}

// readBody reads up to limit bytes of body into a buffer sized from the
// request's Content-Length (when it gives one within the limit), not grown
// from io.ReadAll's 512 bytes: one allocation per request rather than a few.
// A body longer than it announced is still read whole (up to limit). The
// first buffer is at most presizeMax: a Content-Length is only a claim, and
// one near the limit must not make the gateway hold that much for a client
// that then sends little.
func readBody(body io.Reader, contentLength, limit int64) ([]byte, error) {
	size := int64(512)
	if contentLength >= 0 && contentLength < limit {
		size = min(contentLength+1, presizeMax) // room to see EOF without growing
	}
	buf := make([]byte, 0, size)
	lr := io.LimitedReader{R: body, N: limit}
	for {
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// caller authenticates the request and decides the agent name it acts as.
func (s *Server) caller(r *http.Request) (*core.Principal, string, error) {
	cred, err := httpauth.Credential(r.Header, s.keyHeader)
	if err != nil {
		return nil, "", err
	}
	p, err := s.auth.Authenticate(r.Context(), cred)
	if err != nil {
		s.log.Info("mcp refused", "err", err)
		return nil, "", err
	}
	agent, err := httpauth.AgentName(p, r.Header.Get(s.agentHeader), s.opts.DefaultAgent)
	if err != nil {
		return nil, "", err
	}
	// The core's rule (role, office, name), the one every front end applies.
	if err := p.CheckAgent(r.PathValue("office_id"), agent); err != nil {
		return nil, "", err
	}
	return p, agent, nil
}

// httpStatus maps the SMCP code of a refusal before any MCP session exists.
var httpStatus = map[int]int{
	smcp.CodeBadRequest:      http.StatusBadRequest,
	smcp.CodeUnauthenticated: http.StatusUnauthorized,
	smcp.CodeForbidden:       http.StatusForbidden,
	smcp.CodeNotFound:        http.StatusNotFound,
	core.CodeTooManyPending:  http.StatusTooManyRequests,
	codeUnavailable:          http.StatusServiceUnavailable,
	codeBadGateway:           http.StatusBadGateway,
}

// codeUnavailable refuses new sessions while the front end closes.
const codeUnavailable = 503

// httpError answers a refusal as JSON: the flat SMCP error, with the HTTP
// status of its code (401 carries a Bearer challenge, as MCP clients expect).
func httpError(w http.ResponseWriter, err error) {
	e, ok := smcp.AsError(err)
	if !ok {
		e = smcp.Errorf(smcp.CodeInternal, "internal error")
	}
	status, ok := httpStatus[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="smcp-gateway"`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e.Wire())
}

// open makes the session of a new MCP client at address ip: its agent
// lease, its watch of the office and its own mcp.Server holding the office's
// tools and resources as they are now.
func (s *Server) open(ctx context.Context, p *core.Principal, office, agent, ip string) (*session, error) {
	id := s.newSessionID()
	s.mu.Lock()
	if s.closed || s.calls.Draining() {
		s.mu.Unlock()
		return nil, smcp.Errorf(codeUnavailable, "the gateway is shutting down")
	}
	var reclaimed *session
	if h, err := s.sessionBound.check(ip, p.ID); err != nil {
		// A client that never sends DELETE (the MCP Inspector's CLI) leaves
		// its sessions to the idle timeout: its own idle ones make room
		// for it rather than lock it out.
		if reclaimed = s.reclaimableLocked(h, ip, p.ID); reclaimed == nil {
			s.mu.Unlock()
			return nil, err
		}
		s.releaseLocked(reclaimed.id)
	}
	// Take the slots now so that concurrent opens respect the bounds.
	s.sessions[id] = nil
	s.holders[id] = holder{ip: ip, key: p.ID}
	s.sessionBound.take(ip, p.ID)
	s.mu.Unlock()
	if reclaimed != nil {
		reclaimed.log.Info("mcp session reclaimed, idle, for a new session of its address or key")
		reclaimed.close()
	}
	sess, err := newSession(ctx, s, id, p, office, agent)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.releaseLocked(id)
		return nil, err
	}
	sess.active = 1 // its initialize, until started
	sess.lastUsed = time.Now()
	s.sessions[id] = sess
	return sess, nil
}

// holder is who holds a session's slots.
type holder struct{ ip, key string }

// reclaimableLocked is the least recently used idle session (no request in
// flight, no open stream) whose end makes room for a new session of key
// at ip under the bounds h says it hit, and that shares its address or
// key; nil when there is none.
func (s *Server) reclaimableLocked(h hit, ip, key string) *session {
	var lru *session
	for id, sess := range s.sessions {
		if sess == nil || sess.active > 0 {
			continue
		}
		if hd := s.holders[id]; !h.relieves(hd.ip, hd.key, ip, key) {
			continue
		}
		if lru == nil || sess.lastUsed.Before(lru.lastUsed) {
			lru = sess
		}
	}
	return lru
}

// releaseLocked gives back the slots of session id, once: open's failure,
// a reclaim and the session's own end (forget) may each call it.
func (s *Server) releaseLocked(id string) {
	delete(s.sessions, id)
	hd, ok := s.holders[id]
	if !ok {
		return
	}
	delete(s.holders, id)
	s.sessionBound.give(hd.ip, hd.key)
}

// started is called once the request that opened sess is answered: when the
// go-sdk kept an initialized session, sess lives until it ends; otherwise
// (a failed initialize) sess ends now.
func (s *Server) started(sess *session) {
	var ss *mcp.ServerSession
	for x := range sess.server.Sessions() {
		ss = x
	}
	s.mu.Lock()
	if ss == nil || ss.InitializeParams() == nil || s.closed {
		s.mu.Unlock()
		if ss != nil {
			_ = ss.Close()
		}
		sess.close()
		return
	}
	// Counted under the lock that Close takes before it waits.
	s.wg.Add(2)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		sess.close()
	}()
	sess.run()
}

// forget removes a closed session, however it ended (DELETE, idle timeout,
// failed initialize, shutdown): every end goes through session.close.
func (s *Server) forget(id string) {
	s.mu.Lock()
	s.releaseLocked(id)
	s.mu.Unlock()
}

// Sessions is how many MCP sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Refuse refuses new calls from now on, without waiting for those in
// flight (Drain waits).
func (s *Server) Refuse() { s.calls.Close() }

// Drain refuses new sessions and new requests (a request gets an MCP error
// with SMCP code 503) and returns once the requests in flight are answered,
// or with an error when ctx ends first. Sessions stay open meanwhile, so a
// tools/call in flight gets its result and cancellations still get through;
// Close ends them afterwards.
func (s *Server) Drain(ctx context.Context) error {
	if err := s.calls.Drain(ctx); err != nil {
		return fmt.Errorf("mcpfront: %w", err)
	}
	return nil
}

// Close ends every session (each frees its office) and refuses new ones,
// then waits for the sessions' goroutines. Requests in flight get their
// answers cut; Close is meant for shutdown and is idempotent.
func (s *Server) Close() {
	if s.fwd != nil {
		s.fwd.close()
	}
	s.mu.Lock()
	s.closed = true
	var all []*session
	for _, sess := range s.sessions {
		if sess != nil {
			all = append(all, sess)
		}
	}
	for _, v := range s.views {
		all = append(all, v)
	}
	s.mu.Unlock()
	for _, sess := range all {
		sess.close()
	}
	s.wg.Wait()
}

// newReqID is a request id unique to this process: a random prefix drawn
// once and a counter. (Ids name calls between the gateway and a computer;
// they need no secrecy, as only the calling agent can cancel by id, and
// drawing 16 random characters per call showed in the profile.)
func (s *Server) newReqID() string {
	// Made in the frame (the prefix is 15 bytes, a counter at most 13):
	// only the string is allocated.
	var buf [48]byte
	b := append(buf[:0], s.reqPrefix...)
	return string(strconv.AppendUint(b, s.reqSeq.Add(1), 36))
}

func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
