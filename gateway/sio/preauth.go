package sio

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/metrics"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// preauth bounds what an Engine.IO session costs until a namespace CONNECT
// on it is authenticated: its messages are bounded by the engine's initial
// limit (Config.MaxFrameBytesBeforeAuth) until authenticate raises it, each
// client address holds at most a fixed number of such sessions
// (Config.MaxUnauthenticatedPerAddr, a handshake beyond gets 429), and a
// session that has not authenticated within Config.AuthTimeout is closed.
//
// A slot is taken by the handshake request, before Engine.IO makes a
// session, so that a refusal is a plain HTTP answer; the session the
// handshake makes then holds it until it authenticates or closes.
type preauth struct {
	slots   *httpauth.AddrSlots
	timeout time.Duration
	metrics *metrics.Metrics
	log     *slog.Logger

	mu       sync.Mutex
	sessions map[string]*unauthenticated // by Engine.IO session id
}

type unauthenticated struct {
	ip    string
	timer *time.Timer
}

// handshakeSlot is the slot a handshake request took; the session it
// makes claims it, and the request gives it back if none did.
type handshakeSlot struct {
	ip      string
	claimed atomic.Bool
}

type handshakeSlotKey struct{}

func newPreauth(limit int, timeout time.Duration, m *metrics.Metrics, log *slog.Logger) *preauth {
	return &preauth{slots: httpauth.NewAddrSlots(limit), timeout: timeout, metrics: m, log: log,
		sessions: map[string]*unauthenticated{}}
}

// handshakes takes a slot for every Engine.IO handshake (a request without
// sid) before next serves it.
func (p *preauth) handshakes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("sid") {
			next.ServeHTTP(w, r)
			return
		}
		ip := httpauth.ClientIP(r.RemoteAddr)
		if !p.slots.Take(ip) {
			p.metrics.Refused("unauthenticated_per_address")
			refuseHTTP(w, http.StatusTooManyRequests,
				smcp.Errorf(CodeRateLimited, "too many connections from this address that have not authenticated yet"))
			return
		}
		slot := &handshakeSlot{ip: ip}
		// Engine.IO makes the session, and emits "connection", before its
		// handler returns (polling waits for its answer; a WebSocket is
		// upgraded and handed over on this goroutine).
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), handshakeSlotKey{}, slot)))
		if !slot.claimed.Load() {
			p.slots.Give(ip)
		}
	})
}

// opened is the engine's "connection" listener: the new session takes over
// its handshake's slot and must authenticate within the timeout.
func (p *preauth) opened(args ...any) {
	conn, ok := args[0].(engine.Socket)
	if !ok || conn.Request() == nil {
		return
	}
	slot, _ := conn.Request().Request().Context().Value(handshakeSlotKey{}).(*handshakeSlot)
	if slot == nil {
		return
	}
	slot.claimed.Store(true)
	id := conn.Id()
	u := &unauthenticated{ip: slot.ip}
	p.mu.Lock()
	p.sessions[id] = u
	// Under the lock: settle, which stops it, must find it set.
	u.timer = time.AfterFunc(p.timeout, func() {
		if p.settle(id) {
			p.metrics.Refused("authentication_timeout")
			p.log.Info("closing a connection that did not authenticate in time", "addr", conn.RemoteAddress(), "timeout", p.timeout.String())
			conn.Close(false)
		}
	})
	p.mu.Unlock()
	_ = conn.Once("close", func(...any) { p.settle(id) })
}

// authenticated settles the session: its slot is given back and its timer
// stopped. Later calls do nothing.
func (p *preauth) authenticated(id string) { p.settle(id) }

// settle ends the session's unauthenticated state; false if it was over.
func (p *preauth) settle(id string) bool {
	p.mu.Lock()
	u, ok := p.sessions[id]
	delete(p.sessions, id)
	p.mu.Unlock()
	if !ok {
		return false
	}
	u.timer.Stop()
	p.slots.Give(u.ip)
	return true
}

// refuseHTTP answers a refused Engine.IO request with a flat error.
func refuseHTTP(w http.ResponseWriter, status int, e *smcp.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(e.Wire())
}
