// Package sio is the Socket.IO front end of the gateway: the /smcp namespace
// on a zishang520 socket.io server, mounted as an http.Handler. It decodes,
// authenticates and encodes; every rule lives in gateway/core.
package sio

import (
	"context"
	"encoding/json"

	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/inflight"
	"github.com/smcpgw/smcp-gateway/gateway/metrics"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of Config.
const (
	DefaultPath            = "/socket.io/"
	DefaultAPIKeyHeader    = "x-api-key"
	DefaultMaxMessageBytes = 1 << 20
	// DefaultEventsPerSecond and DefaultEventBurst shape each connection's
	// token bucket: far above what an agent or computer needs, low enough
	// that one connection cannot monopolise the gateway.
	DefaultEventsPerSecond = 2000
	DefaultEventBurst      = 4000
	// DefaultMaxConnsPerAddr bounds the connections of one client address.
	DefaultMaxConnsPerAddr = 4096
	// DefaultMaxFrameBytesBeforeAuth bounds a message before the
	// connection has authenticated: a namespace CONNECT with its auth
	// object is a few hundred bytes.
	DefaultMaxFrameBytesBeforeAuth = 16 << 10
	// DefaultMaxUnauthenticatedPerAddr bounds the sessions of one client
	// address that have not authenticated yet; a legitimate client holds
	// one for the few milliseconds between handshake and CONNECT.
	DefaultMaxUnauthenticatedPerAddr = 256
	// DefaultAuthTimeout is how long a session may stay without
	// authenticating.
	DefaultAuthTimeout = 10 * time.Second
)

// CodeRateLimited answers an event beyond the connection's rate.
const CodeRateLimited = 429

// CodeUnavailable refuses connections and new requests while the gateway
// drains for shutdown.
const CodeUnavailable = 503

// Config tunes the front end. Zero fields take the defaults.
type Config struct {
	// Path is the Engine.IO HTTP path.
	Path string
	// APIKeyHeader is the header carrying the API key.
	APIKeyHeader string
	// MaxMessageBytes bounds an event's payload: larger payloads get a flat
	// 400 and the connection survives. Engine.IO frames above twice this
	// size, or above the hub's MaxAnswerBytes plus this size if that is
	// more, close the connection.
	MaxMessageBytes int
	// Protocols are the profiles served (PROTOCOL-0.4.md §3); empty: every
	// released profile smcp knows (smcp.DefaultVersions: a draft is served
	// only when named).
	Protocols []smcp.Version
	// RequireVersion refuses handshakes without the a2c_version parameter
	// (otherwise they speak 0.2, when 0.2 is served).
	RequireVersion bool
	// EventsPerSecond and EventBurst are each connection's token bucket:
	// an event beyond it gets a flat 429 ack; a connection that keeps
	// sending at more than twice the rate is disconnected. Negative: no limit.
	EventsPerSecond float64
	EventBurst      int
	// MaxConnsPerAddr bounds the open connections of one client IP address;
	// more are refused with 429 at connect. Negative: no limit.
	MaxConnsPerAddr int
	// MaxFrameBytesBeforeAuth bounds each message of a connection until a
	// namespace CONNECT on it is authenticated (a larger one closes it);
	// the frame limit above applies after. MaxUnauthenticatedPerAddr bounds
	// the connections of one client address in that state (more handshakes
	// get 429; negative: no limit), AuthTimeout how long one may stay in it
	// (then it is closed).
	MaxFrameBytesBeforeAuth   int
	MaxUnauthenticatedPerAddr int
	AuthTimeout               time.Duration
	// PingInterval and PingTimeout are Engine.IO's heartbeat: a peer that
	// does not answer a ping within PingInterval+PingTimeout is
	// disconnected (its seat freed). Zero: the library's 25 s and 20 s.
	PingInterval, PingTimeout time.Duration
	// AllowedOrigins are the browser origins, besides the gateway's own,
	// whose pages may connect (httpauth.Origins: an origin,
	// "https://*.example.com", or "*" for any); requests with another
	// Origin get 403. Clients that send no Origin (every non-browser
	// client) are not affected.
	AllowedOrigins []string
	// AllowedHosts are host names a loopback listener answers besides
	// loopback ones (httpauth.Rebound); other Host names get 403.
	AllowedHosts []string
	// Metrics, when set, records connections, calls and refusals.
	Metrics *metrics.Metrics
	// Tracer, when set, traces each routed client: event. Unset, no span
	// (nor its options and attributes) is made.
	Tracer trace.Tracer
	Logger *slog.Logger
	// MaxQueuedEvents bounds the events of one connection waiting for the
	// ones before them that wait on the office registry (joins, leaves,
	// list_room, calls to a computer of another node, and what follows
	// them): more get a flat 429 ack. Zero: DefaultMaxQueuedEvents.
	MaxQueuedEvents int
	// MaxQueuedBytesPerComputer bounds the bytes of requests toward one
	// computer's connection that are not written yet (it stopped reading);
	// more get a flat 429 until it reads. MaxQueuedBytes bounds them over
	// every connection of the gateway; more get a flat 503. Zero: the
	// defaults.
	MaxQueuedBytesPerComputer int
	MaxQueuedBytes            int
}

// Server is the Socket.IO front end.
type Server struct {
	cfg     Config
	hub     *core.Hub
	auth    core.Authenticator
	log     *slog.Logger
	io      *socket.Server
	nsp     socket.Namespace
	handler http.Handler
	vers    versions

	addrs *httpauth.AddrSlots // connections per client address
	// queued: bytes of requests toward computers not written yet, over
	// every connection (sendQueue).
	queued atomic.Int64
	calls  inflight.Gate // client: requests in flight
	pre    *preauth      // sessions not authenticated yet
	// maxFrame is the Engine.IO frame limit once authenticated.
	maxFrame int64
}

// New builds the front end over hub. auth must not be nil: use
// core.AllowAll{} for an insecure gateway.
func New(hub *core.Hub, auth core.Authenticator, cfg Config) *Server {
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	if !strings.HasSuffix(cfg.Path, "/") {
		cfg.Path += "/"
	}
	if cfg.APIKeyHeader == "" {
		cfg.APIKeyHeader = DefaultAPIKeyHeader
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.EventsPerSecond == 0 {
		cfg.EventsPerSecond = DefaultEventsPerSecond
	}
	if cfg.EventBurst <= 0 {
		cfg.EventBurst = max(DefaultEventBurst, int(2*cfg.EventsPerSecond))
	}
	if cfg.MaxConnsPerAddr == 0 {
		cfg.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if cfg.MaxFrameBytesBeforeAuth <= 0 {
		cfg.MaxFrameBytesBeforeAuth = DefaultMaxFrameBytesBeforeAuth
	}
	if cfg.MaxUnauthenticatedPerAddr == 0 {
		cfg.MaxUnauthenticatedPerAddr = DefaultMaxUnauthenticatedPerAddr
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = DefaultAuthTimeout
	}
	if cfg.MaxQueuedEvents <= 0 {
		cfg.MaxQueuedEvents = DefaultMaxQueuedEvents
	}
	if cfg.MaxQueuedBytesPerComputer <= 0 {
		cfg.MaxQueuedBytesPerComputer = DefaultMaxQueuedBytesPerComputer
	}
	if cfg.MaxQueuedBytes <= 0 {
		cfg.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, hub: hub, auth: auth, log: cfg.Logger, addrs: httpauth.NewAddrSlots(cfg.MaxConnsPerAddr),
		vers: newVersions(cfg.Protocols, cfg.RequireVersion),
		pre:  newPreauth(cfg.MaxUnauthenticatedPerAddr, cfg.AuthTimeout, cfg.Metrics, cfg.Logger)}
	cfg.Metrics.QueuedBytes(s.queued.Load)

	opts := socket.DefaultServerOptions()
	opts.SetPath(strings.TrimSuffix(cfg.Path, "/"))
	opts.SetServeClient(false)
	opts.SetTransports(types.NewSet(socket.Polling, socket.WebSocket))
	// The Engine.IO frame limit is a hard one (a larger frame closes the
	// connection), so it is set above both payload limits: a request over
	// MaxMessageBytes gets a 400 and an answer over the hub's MaxAnswerBytes
	// fails its one call (core), both on a connection that survives.
	s.maxFrame = int64(max(2*cfg.MaxMessageBytes, hub.Config().MaxAnswerBytes+cfg.MaxMessageBytes))
	opts.SetMaxHttpBufferSize(s.maxFrame)
	// Until a namespace CONNECT is authenticated (authenticate raises it),
	// a connection may cost only this much per message: a client without a
	// key must not make the gateway read a 17 MiB frame.
	opts.SetInitialMaxHttpBufferSize(min(int64(cfg.MaxFrameBytesBeforeAuth), s.maxFrame))
	// Event and ack arguments stay the bytes received (parser.go).
	opts.SetParser(rawParser{})
	// The library can drop a namespace CONNECT that arrives right after the
	// Engine.IO handshake; closing such connections soon lets the client
	// reconnect instead of hanging for the default 45 s.
	opts.SetConnectTimeout(5 * time.Second)
	if cfg.PingInterval > 0 {
		opts.SetPingInterval(cfg.PingInterval)
	}
	if cfg.PingTimeout > 0 {
		opts.SetPingTimeout(cfg.PingTimeout)
	}
	s.io = socket.NewServer(nil, opts)
	engine := s.io.ServeHandler(opts)
	_ = s.io.Engine().On("connection", s.pre.opened)
	s.handler = originCheck(cfg.AllowedOrigins, cfg.AllowedHosts, s.vers.check(s.pre.handshakes(engine)))

	nsp := s.io.Of(smcp.Namespace, nil)
	s.nsp = nsp
	nsp.Use(s.authenticate)
	_ = nsp.On("connection", func(args ...any) {
		if sock, ok := args[0].(*socket.Socket); ok {
			s.onConnection(sock)
		}
	})
	return s
}

// Path is where Handler must be mounted.
func (s *Server) Path() string { return s.cfg.Path }

// Handler serves Engine.IO at Path.
func (s *Server) Handler() http.Handler { return s.handler }

// Refuse refuses new calls from now on, without waiting for those in
// flight (Drain waits).
func (s *Server) Refuse() { s.calls.Close() }

// Drain refuses new connections and requests, then waits until the requests
// in flight are answered or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	if err := s.calls.Drain(ctx); err != nil {
		return fmt.Errorf("sio: %w", err)
	}
	return nil
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.calls.Draining() }

// Close closes every connection, first giving queued packets (the answers of
// the last calls) up to a second to reach the wire: the library discards
// unsent packets on close. Clients see a transport close and reconnect, as
// they should when a gateway restarts.
func (s *Server) Close() {
	deadline := time.Now().Add(time.Second)
	for !s.flushed() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Written is not yet read: the Go client, for one, handles a transport
	// close before the data that preceded it. Linger briefly.
	time.Sleep(closeLinger)
	s.io.Close(nil)
}

const closeLinger = 200 * time.Millisecond

// flushed reports whether no socket has packets on their way: a transport is
// not writable while it sends, or (polling) until the client polls again.
func (s *Server) flushed() bool {
	all := true
	s.io.Of(smcp.Namespace, nil).Sockets().Range(func(_ socket.SocketId, sock *socket.Socket) bool {
		if conn := sock.Conn(); conn != nil && conn.Transport() != nil && !conn.Transport().Writable() {
			all = false
		}
		return all
	})
	return all
}

// authenticate is the namespace middleware: a refused connect gets a
// connect_error whose data is a flat error.
func (s *Server) authenticate(sock *socket.Socket, next func(*socket.ExtendedError)) {
	refuse := func(e *smcp.Error) {
		next(socket.NewExtendedError(e.Message, e.Wire()))
	}
	if s.calls.Draining() {
		refuse(smcp.Errorf(CodeUnavailable, "gateway is shutting down"))
		return
	}
	p, err := s.auth.Authenticate(s.handshakeContext(sock), s.credential(sock))
	if err != nil {
		e, ok := smcp.AsError(err)
		if !ok {
			s.log.Error("authenticator failed", "err", err)
			e = smcp.Errorf(smcp.CodeUnauthenticated, "authentication failed")
		}
		s.log.Info("connection refused", "sid", string(sock.Id()), "addr", sock.Handshake().Address, "reason", e.Message)
		refuse(e)
		return
	}
	// The slot is taken here, before the client is told it is connected, so
	// that a client never sees a connect that is then cut for its address.
	if !s.addrs.Take(clientIP(sock)) {
		s.cfg.Metrics.Refused("connections_per_address")
		refuse(smcp.Errorf(CodeRateLimited, "too many connections from this address"))
		return
	}
	// The handshake's version passed the HTTP check (versions.check): the
	// same pick gives the same profile.
	proto, ref := s.vers.pick(handshakeQuery(sock))
	if ref != nil {
		s.addrs.Give(clientIP(sock))
		refuse(smcp.Errorf(ref.Code, "%s", ref.Message))
		return
	}
	sock.SetData(&connData{principal: p, proto: proto})
	// Raised before the CONNECT ack is written (next), so the client's
	// first events, which it sends once acked, are read under it.
	if conn := sock.Conn(); conn != nil {
		conn.SetMaxHttpBufferSize(s.maxFrame)
		s.pre.authenticated(conn.Id())
	}
	next(nil)
}

// connData is what authenticate learns of a connection for onConnection.
type connData struct {
	principal *core.Principal
	proto     core.Protocol
}

// handshakeQuery is the query of the request that opened the Engine.IO
// session.
func handshakeQuery(sock *socket.Socket) url.Values {
	if req := sock.Request(); req != nil {
		return req.Request().URL.Query()
	}
	return nil
}

// handshakeContext is the context of the connection's handshake request,
// which names the HTTP connection it came on (the gateway's authenticator
// marks it), without its cancellation: that request may be over.
func (s *Server) handshakeContext(sock *socket.Socket) context.Context {
	if req := sock.Request(); req != nil && req.Request() != nil {
		return context.WithoutCancel(req.Request().Context())
	}
	return context.Background()
}

func (s *Server) credential(sock *socket.Socket) string {
	if req := sock.Request(); req != nil {
		if v := req.Request().Header.Get(s.cfg.APIKeyHeader); v != "" {
			return v
		}
	}
	auth := sock.Handshake().Auth
	for _, k := range []string{"api_key", "token"} {
		if v, ok := auth[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// clientIP is the connection's remote IP, without its port.
func clientIP(sock *socket.Socket) string { return httpauth.ClientIP(sock.Handshake().Address) }

func (s *Server) onConnection(sock *socket.Socket) {
	d, _ := sock.Data().(*connData)
	if d == nil {
		sock.Disconnect(true)
		return
	}
	p := d.principal
	ip := clientIP(sock)
	sid := string(sock.Id())
	out := &conn{sock: sock, sendq: sendQueue{srv: s}}
	out.sent = out.sendq.sent
	sess, err := s.hub.Attach(sid, p, out, d.proto)
	if err != nil {
		s.addrs.Give(ip)
		s.log.Error("attach session", "sid", sid, "err", err)
		sock.Disconnect(true)
		return
	}
	s.cfg.Metrics.Connected(1)
	// The connection serves under its credential: a revoked key or an
	// expired token ends it (endWithCredential).
	ctx, cancel := p.Bound(context.Background())
	s.log.Info("connected", "sid", sid, "key", p.ID, "addr", sock.Handshake().Address)
	h := &handler{srv: s, sess: sess, ctx: ctx, sid: sid, key: p.ID, events: eventsOf[d.proto.Version]}
	stopEnding := context.AfterFunc(ctx, func() { h.endWithCredential(sock) })
	h.work.init(s.cfg.MaxQueuedEvents)
	limit := func([]any) bool { return true }
	if s.cfg.EventsPerSecond > 0 {
		limit = s.rateLimit(sock, h)
	}

	// The library calls this listener from the socket's packet queue, which
	// runs one packet at a time (acks of calls included), so nothing here
	// may wait: events that may wait on the registry go to the connection's
	// worker (handler.dispatch).
	// client: events wait for a computer, so they are answered from a
	// callback and never hold the socket's queue.
	// One catch-all listener dispatching through a shared table, rather than
	// a listener per event: the library's per-listener maps were ~8 KiB per
	// connection in the heap profile of idle connections.
	// The limit is checked here rather than as socket middleware: the
	// library calls OnAny listeners before (and regardless of) middleware.
	// The parser hands an event's ack id over as its last argument
	// (decodePacket): it becomes the Ack callback every handler answers
	// with.
	sock.OnAny(func(args ...any) {
		if n := len(args); n > 1 {
			if id, ok := args[n-1].(*ackID); ok {
				args[n-1] = out.ackFunc(uint64(*id))
			}
		}
		if !limit(args[1:]) {
			return
		}
		name, _ := args[0].(string)
		if spec, ok := h.events[name]; ok {
			h.dispatch(name, spec, args[1:])
			return
		}
		if ack, ok := args[len(args)-1].(socket.Ack); ok {
			e := h.unknownEvent(name)
			if bad, ok := args[1].(*badArgs); ok && name == malformedEvent {
				e = smcp.Errorf(smcp.CodeBadRequest, "%s", bad.reason)
			}
			ack([]any{e.Wire()}, nil)
		}
	})
	_ = sock.On("disconnect", func(args ...any) {
		// The worker is closed (its registry calls cut short) before the
		// session, so that no join of it lands after the session's close.
		stopEnding()
		cancel()
		out.sendq.close()
		h.work.close()
		sess.Close()
		s.addrs.Give(ip)
		s.cfg.Metrics.Connected(-1)
		h.log().Info("disconnected", "reason", fmt.Sprint(args...))
	})
}

// endWithCredential closes the connection whose context its credential
// ended (a revoked key, an expired token). The transport is closed rather
// than the namespace disconnected, so that a client reconnects as it does
// after any lost connection and meets the keys in force: a key changed by
// a reload comes back under its new entry, a removed key or an expired
// token gets a connect_error with the flat 401 saying why.
func (h *handler) endWithCredential(sock *socket.Socket) {
	cause := core.CredentialEnded(h.ctx)
	if cause == nil {
		return
	}
	h.log().Info("closing the connection: its credential ended", "reason", cause.Error())
	if conn := sock.Conn(); conn != nil {
		conn.Close(false)
	}
}

// rateLimit returns a connection's gate: events beyond the token bucket get a
// flat 429 ack and are not handled (the gate returns false). A second bucket at the same rate and
// twice the burst counts the refusals: when it is exhausted too, the client
// keeps sending at more than twice the rate whatever it is told, and is
// disconnected.
func (s *Server) rateLimit(sock *socket.Socket, h *handler) func(args []any) bool {
	allowed := rate.NewLimiter(rate.Limit(s.cfg.EventsPerSecond), s.cfg.EventBurst)
	refused := rate.NewLimiter(rate.Limit(s.cfg.EventsPerSecond), 2*s.cfg.EventBurst)
	var cut atomic.Bool
	return func(args []any) bool {
		if cut.Load() {
			return false // packets already read when the connection was cut
		}
		if allowed.Allow() {
			return true
		}
		s.cfg.Metrics.Refused("events_per_second")
		if !refused.Allow() {
			cut.Store(true)
			s.cfg.Metrics.Refused("abuse_disconnect")
			h.log().Warn("disconnecting a connection that ignores its rate limit", "events_per_second", s.cfg.EventsPerSecond)
			sock.Disconnect(true)
			return false
		}
		if n := len(args); n > 0 {
			if ack, ok := args[n-1].(socket.Ack); ok {
				ack([]any{smcp.Errorf(CodeRateLimited, "rate limit of %g events per second exceeded", s.cfg.EventsPerSecond).Wire()}, nil)
			}
		}
		return false
	}
}

// eventSpec is how the front end handles one event a client may send.
type eventSpec struct {
	// fn handles the event. wctx is the worker's context when fn runs on
	// the connection's worker, nil when it runs at once.
	fn func(h *handler, event string, payload any, ack socket.Ack, wctx context.Context)
	// registry: fn may wait on the office registry (a network round trip in
	// a cluster), so it always runs on the connection's worker.
	registry bool
	// officeAck: refusals are acked [false, reason] (join and leave), not
	// with a flat error.
	officeAck bool
	// noAck: the event has no ack in the connection's profile; one asked
	// for is never answered.
	noAck bool
}

// eventsOf maps each event a client of a profile may send to its handler,
// from the protocol table: every routed event of the profile is routed,
// every server event that only notifies its office (server:update_*) is an
// update; the other server events have handlers of their own.
var eventsOf = func() map[smcp.Version]map[string]*eventSpec {
	own := map[string]*eventSpec{
		smcp.EventJoinOffice: {fn: func(h *handler, _ string, p any, ack socket.Ack, ctx context.Context) { h.join(ctx, p, ack) },
			registry: true, officeAck: true},
		smcp.EventLeaveOffice: {fn: func(h *handler, _ string, p any, ack socket.Ack, _ context.Context) { h.leave(p, ack) },
			registry: true, officeAck: true},
		smcp.EventListRoom: {fn: func(h *handler, _ string, p any, ack socket.Ack, ctx context.Context) { h.listRoom(ctx, p, ack) },
			registry: true},
	}
	route := &eventSpec{fn: (*handler).route}
	out := map[smcp.Version]map[string]*eventSpec{}
	for _, v := range smcp.Versions() {
		prof := smcp.ProfileOf(v)
		m := map[string]*eventSpec{}
		for _, e := range prof.Events(smcp.Server) {
			switch spec, ok := own[e.Name]; {
			case ok:
				spec := *spec
				spec.officeAck = spec.officeAck && e.Ack(v) == smcp.OfficeAck // from 0.5 refusals are flat
				m[e.Name] = &spec
			case e.Name == smcp.EventToolCallCancel:
				m[e.Name] = &eventSpec{fn: func(h *handler, _ string, p any, ack socket.Ack, _ context.Context) { h.cancel(p, ack) },
					noAck: e.Ack(v) == smcp.NoAck}
			case e.Notifies != "":
				m[e.Name] = &eventSpec{fn: func(h *handler, event string, p any, ack socket.Ack, _ context.Context) { h.update(event, p, ack) },
					noAck: e.Ack(v) == smcp.NoAck}
			default:
				panic("sio: no handler for server event " + e.Name)
			}
		}
		for _, e := range prof.Events(smcp.Routed) {
			m[e.Name] = route
		}
		// In no profile's table: only this gateway's computers send it.
		m[smcp.EventAuthRequired] = &eventSpec{fn: func(h *handler, _ string, p any, ack socket.Ack, _ context.Context) { h.authRequired(p, ack) }}
		out[v] = m
	}
	return out
}()

// unknownEvent answers an event the connection's profile does not have:
// 400 in 0.2 as before, 404 from 0.3 (PROTOCOL-0.4.md §4 G5).
func (h *handler) unknownEvent(name string) *smcp.Error {
	if h.sess.Protocol().Version == smcp.V02 {
		return smcp.Errorf(smcp.CodeBadRequest, "unknown event %q", name)
	}
	return smcp.Errorf(smcp.CodeNotFound, "unknown event %s", name)
}

// conn is how the core reaches one socket.
type conn struct {
	sock  *socket.Socket
	sendq sendQueue
	sent  engine.SendCallback // sendq.sent, made once
}

func (c *conn) Notify(n core.Notification) {
	_ = c.sock.Emit(n.Event, n.Wire)
}

// Disconnect implements core.Disconnecter: the hub has sent the agent its
// leave_office, and logged the reason.
func (c *conn) Disconnect(string) { c.sock.Disconnect(true) }

// Request emits with an ack and no library timeout: the core keeps the
// deadline, and the library's timeout paths are racy or leak (DESIGN.md).
// The payload goes out as the bytes the agent sent and the computer's first
// ack argument comes back as the bytes it sent.
//
// The packet is written here rather than by Socket.EmitWithAck so that the
// ack id is known: the library keeps an ack callback registered until the
// ack comes or the socket disconnects, so every call the core gave up on
// (timeout, caller gone) would hold its callback, and the agent's answer
// path through it, for the computer's lifetime. forget removes it, with the
// library's own public Acks map; a late ack then finds no callback and is
// dropped by the library. What EmitWithAck does besides (outgoing
// listeners, connection state recovery, per-emit flags) the gateway uses
// none of.
func (c *conn) Request(event string, payload json.RawMessage, done func(json.RawMessage, error)) (forget func()) {
	n := int64(len(payload))
	if err := c.sendq.reserve(n); err != nil {
		done(nil, err)
		return nil
	}
	nsp := c.sock.Nsp()
	id := nsp.Ids()
	acks := c.sock.Acks()
	acks.Store(id, func(args []any, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		if len(args) == 0 {
			done(json.RawMessage("null"), nil)
			return
		}
		doneWithJSON(args[0], done)
	})
	// Encoded here in one buffer and handed to the engine as it is: the
	// library's path (a Packet, its encoder, Client.WriteToEngine's copy of
	// every encoded packet, made for broadcasts that share one) cost seven
	// allocations and a copy per call, and its JSON encoding of the event
	// name a deep stack on a goroutine that often starts afresh.
	c.sock.Conn().Write(types.NewStringBuffer(appendEvent(make([]byte, 0, len(nsp.Name())+len(event)+len(payload)+32), nsp.Name(), id, event, payload)),
		nil, c.sent)
	return func() { acks.Delete(id) }
}

// ackFunc is the Ack callback of the client's event id: the ACK packet is
// written straight to the engine (appendArg encodes each argument), at most
// once, and not once the socket is disconnected, as the library's own
// callback does; without the library's packet, encoder and copy.
func (c *conn) ackFunc(id uint64) socket.Ack {
	a := &acker{conn: c, id: id}
	return a.send
}

type acker struct {
	*conn
	id   uint64
	sent atomic.Bool
}

func (a *acker) send(args []any, _ error) {
	if a.sent.Swap(true) || !a.sock.Connected() {
		return
	}
	a.write(encodeArgs(parser.ACK, a.sock.Nsp().Name(), &a.id, args))
}

// write hands one encoded Socket.IO packet to the connection's engine
// socket, which queues it for its transport's writer (and drops it once
// the connection is closing).
func (c *conn) write(b []byte) {
	c.sock.Conn().Write(types.NewStringBuffer(b), nil, nil)
}

// doneWithJSON hands done an ack's first argument as JSON: the raw bytes
// from the parser, or a bad answer's marker; anything else (no parser of
// this server makes it) is encoded again.
func doneWithJSON(arg any, done func(json.RawMessage, error)) {
	switch x := arg.(type) {
	case json.RawMessage:
		done(x, nil)
		return
	case *badArgs:
		done(nil, &core.BadAnswerError{Reason: x.reason})
		return
	}
	b, err := smcp.MarshalDecoded(arg)
	if err != nil {
		done(nil, &core.BadAnswerError{Reason: "answer does not encode as JSON: " + err.Error()})
		return
	}
	done(b, nil)
}
