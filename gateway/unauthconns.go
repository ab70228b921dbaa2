package gateway

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/metrics"
)

// unauthConns bounds the HTTP connections that have not carried an
// authenticated request yet: each client address may hold at most limit of
// them (more are closed as soon as accepted), and every read deadline
// net/http sets on one (the idle wait between requests, the header and
// body reads) is brought forward to at most timeout from now. Without it a
// caller without a key held each connection for the 2-minute idle timeout,
// as many as it liked. A connection leaves this state at its first
// authenticated request (any front end: the authenticator the gateway
// hands them marks the connection its context names) or when it is
// hijacked (a WebSocket: Socket.IO's own bound on sessions that have not
// authenticated takes over).
type unauthConns struct {
	slots   *httpauth.AddrSlots
	timeout time.Duration
	metrics *metrics.Metrics
}

func newUnauthConns(limit int, timeout time.Duration, m *metrics.Metrics) *unauthConns {
	return &unauthConns{slots: httpauth.NewAddrSlots(limit), timeout: timeout, metrics: m}
}

// listener wraps ln: every accepted connection takes a slot of its address.
func (u *unauthConns) listener(ln net.Listener) net.Listener { return &unauthListener{ln, u} }

type unauthListener struct {
	net.Listener
	u *unauthConns
}

func (l *unauthListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err // unwrapped: net/http inspects it (temporary errors)
		}
		ip := httpauth.ClientIP(c.RemoteAddr().String())
		if !l.u.slots.Take(ip) {
			// Closed without an answer: an answer would have to wait for
			// the client to send its request (or TLS hello), which is the
			// holding this bound is there to stop.
			l.u.metrics.Refused("unauthenticated_conns_per_address")
			_ = c.Close()
			continue
		}
		w := &watchedConn{Conn: c, u: l.u, ip: ip}
		w.counted.Store(true)
		return w, nil
	}
}

// watchedConn is an accepted connection until it has authenticated.
type watchedConn struct {
	net.Conn
	u  *unauthConns
	ip string
	// trusted: authenticated or hijacked; its deadlines are its own.
	trusted atomic.Bool
	// counted: it holds a slot of its address.
	counted atomic.Bool

	mu sync.Mutex // orders bounded deadlines with trust
	// asked is the read deadline net/http asked for when bound brought it
	// forward (zero when it did not): trust gives it back, so that a body
	// whose deadline was set before its request authenticated (an upload's
	// 30 s) is not cut at the auth timeout.
	asked time.Time
}

func (c *watchedConn) SetReadDeadline(t time.Time) error {
	if c.trusted.Load() {
		return c.Conn.SetReadDeadline(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn.SetReadDeadline(c.bound(t))
}

func (c *watchedConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// bound brings a read deadline forward to the timeout of a connection that
// has not authenticated. No deadline stays none: net/http sets none while a
// handler runs (a long-poll), and its background read must not time out.
// Called with mu held.
func (c *watchedConn) bound(t time.Time) time.Time {
	c.asked = time.Time{}
	if t.IsZero() || c.trusted.Load() {
		return t
	}
	if limit := time.Now().Add(c.u.timeout); t.After(limit) {
		c.asked = t
		return limit
	}
	return t
}

func (c *watchedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// trust ends the connection's unauthenticated state. The deadline that was
// brought forward is given back before trusted is set, so that no deadline
// set after trust (without mu) is overwritten by an older one.
func (c *watchedConn) trust() {
	c.mu.Lock()
	if !c.trusted.Load() {
		if !c.asked.IsZero() {
			_ = c.Conn.SetReadDeadline(c.asked)
			c.asked = time.Time{}
		}
		c.trusted.Store(true)
	}
	c.mu.Unlock()
	c.release()
}

func (c *watchedConn) release() {
	if c.counted.CompareAndSwap(true, false) {
		c.u.slots.Give(c.ip)
	}
}

// watched finds the watchedConn under c (a *tls.Conn wraps it).
func watched(c net.Conn) *watchedConn {
	for {
		switch x := c.(type) {
		case *watchedConn:
			return x
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil
		}
	}
}

type watchedConnKey struct{}

// connContext is the server's ConnContext: requests of the connection carry
// it, for markingAuth.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if w := watched(c); w != nil {
		return context.WithValue(ctx, watchedConnKey{}, w)
	}
	return ctx
}

// trackState is the part of the server's ConnState hook for these
// connections: a hijacked one is handed over.
func trackState(c net.Conn, state http.ConnState) {
	if state == http.StateHijacked {
		if w := watched(c); w != nil {
			w.trust()
		}
	}
}

// markingAuth is the authenticator every front end is given: a request that
// authenticates marks its connection as authenticated; one refused is
// recorded in the audit trail, if there is one.
type markingAuth struct {
	core.Authenticator
	audit *authAudit
}

func (a markingAuth) Authenticate(ctx context.Context, credential string) (*core.Principal, error) {
	p, err := a.Authenticator.Authenticate(ctx, credential)
	if err == nil {
		if w, ok := ctx.Value(watchedConnKey{}).(*watchedConn); ok {
			w.trust()
		}
	} else {
		a.audit.refused(err)
	}
	return p, err
}
