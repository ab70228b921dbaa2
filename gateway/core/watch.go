package core

import (
	"errors"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// ErrWatchOverflow ends a watch whose reader fell more than
// Config.WatchBuffer notifications behind.
var ErrWatchOverflow = errors.New("core: watcher fell behind and was dropped")

// Watcher receives every notification of one office.
type Watcher struct {
	hub    *Hub
	office string
	ch     chan Notification
	err    error // guarded by hub.mu
	closed bool  // guarded by hub.mu
	// principal and since (Unix ms) say who watches since when, for
	// Connections.
	principal *Principal
	since     int64
}

// Watch subscribes to officeID's notifications: exactly those its members
// receive (each member also misses its own). p must allow the agent role and
// the office. Close the watcher when done.
func (h *Hub) Watch(p *Principal, officeID string) (*Watcher, error) {
	return h.WatchBuffered(p, officeID, h.cfg.WatchBuffer)
}

// WatchBuffered is Watch with a buffer of its own size (Config.WatchBuffer
// when buffer <= 0), for a watcher that reads fast and recovers from an
// overflow (lists its office anew), so that watching an office that rarely
// changes costs little.
func (h *Hub) WatchBuffered(p *Principal, officeID string, buffer int) (*Watcher, error) {
	if buffer <= 0 {
		buffer = h.cfg.WatchBuffer
	}
	if officeID == "" {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "office_id is required")
	}
	if !p.AllowsRole(smcp.RoleAgent) || !p.AllowsOffice(officeID) {
		return nil, smcp.Errorf(smcp.CodeForbidden, "this key may not watch office %q", officeID)
	}
	w := &Watcher{hub: h, office: officeID, ch: make(chan Notification, buffer), principal: p, since: time.Now().UnixMilli()}
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.officeLocked(officeID)
	if o.watchers == nil {
		o.watchers = map[*Watcher]struct{}{}
	}
	o.watchers[w] = struct{}{}
	return w, nil
}

// C delivers the notifications. It is closed by Close or when the watcher
// falls behind (then Err is ErrWatchOverflow).
func (w *Watcher) C() <-chan Notification { return w.ch }

// Err tells why C was closed by the hub; nil otherwise.
func (w *Watcher) Err() error {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return w.err
}

// Close ends the watch. It is idempotent.
func (w *Watcher) Close() {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	o := h.offices[w.office]
	if o == nil {
		return
	}
	if _, ok := o.watchers[w]; ok {
		delete(o.watchers, w)
		close(w.ch)
	}
	h.gcLocked(o)
}
