package engine

import "time"

// pingTimer replaces utils.Timer for the ping interval and ping timeout
// (patched, see ../PATCHED.md). utils.SetTimeout parks a goroutine on every
// pending timer (one per idle connection, always) and can strand it when
// stopped before that goroutine starts; time.AfterFunc needs neither.
// Refresh and clearPingTimer keep utils' semantics: Refresh re-arms the timer
// for its full duration whether or not it fired or was stopped.
type pingTimer struct {
	t *time.Timer
	d time.Duration
}

func setPingTimer(fn func(), d time.Duration) *pingTimer {
	return &pingTimer{t: time.AfterFunc(d, fn), d: d}
}

// Refresh re-arms the timer.
func (p *pingTimer) Refresh() *pingTimer {
	if p != nil {
		p.t.Reset(p.d)
	}
	return p
}

func clearPingTimer(p *pingTimer) {
	if p != nil {
		p.t.Stop()
	}
}
