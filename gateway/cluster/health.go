package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Health follows whether Redis answers this node, for its log: one line
// when a call first fails, one when the heartbeat is answered again,
// whatever the number of failed calls (heartbeats, registry calls, the
// publishing and receiving of Peers) in between.
type Health struct {
	log *slog.Logger

	mu       sync.Mutex
	down     bool
	since    time.Time
	failures int
}

// NewHealth logs to log.
func NewHealth(log *slog.Logger) *Health {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Health{log: log}
}

// Failed reports a failed Redis call; what names the caller.
func (h *Health) Failed(what string, err error) {
	h.mu.Lock()
	if h.down {
		h.failures++
		h.mu.Unlock()
		return
	}
	h.down, h.since, h.failures = true, time.Now(), 1
	h.mu.Unlock()
	h.log.Warn("redis unreachable: cluster calls fail until it answers again", "during", what, "err", err)
}

// Answered reports that Redis answered a heartbeat; wasDown tells whether
// it had stopped answering before.
func (h *Health) Answered() (wasDown bool) {
	h.mu.Lock()
	if !h.down {
		h.mu.Unlock()
		return false
	}
	h.down = false
	after, failures := time.Since(h.since), h.failures
	h.mu.Unlock()
	h.log.Info("redis answers again", "after", after.Round(time.Millisecond).String(), "failed_calls", failures)
	return true
}

// Down reports whether Redis is deemed unreachable.
func (h *Health) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// RedisLogger carries go-redis's own log (redis.SetLogger, process-wide:
// set by the program, not a library) to slog at debug level: go-redis logs a
// line per failed dial until its pool stops dialing, which Health already
// sums up in one line per outage.
type RedisLogger struct{ Log *slog.Logger }

// Printf implements go-redis's internal.Logging.
func (l RedisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.Log.DebugContext(ctx, fmt.Sprintf(format, v...))
}
