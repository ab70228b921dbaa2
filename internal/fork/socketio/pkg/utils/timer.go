package utils

import (
	"runtime"
	"sync"
	"time"
)

// Patched (see internal/fork/socketio/PATCHED.md): a Timer is stopped by
// closing its stop channel, once. Upstream sent on an unbuffered channel
// without blocking, which nobody received when the timer's goroutine had not
// reached its select yet (a timeout cleared right after it was set: a fast
// ack, a fast upgrade): that goroutine then waited forever. It also sent only
// when time.Timer.Stop reported an active timer, so an interval cleared while
// its tick was being handled was never stopped.
type Timer struct {
	timer *time.Timer
	sleep time.Duration
	fn    func()
	stop  *stopSignal
}

type stopSignal struct {
	once sync.Once
	ch   chan struct{}
}

func (s *stopSignal) close() { s.once.Do(func() { close(s.ch) }) }

func newTimer(sleep time.Duration) *Timer {
	return &Timer{timer: time.NewTimer(sleep), sleep: sleep, stop: &stopSignal{ch: make(chan struct{})}}
}

// Refresh restarts a running timer. A stopped timer stays stopped (upstream
// could revive it).
func (t *Timer) Refresh() *Timer {
	defer t.timer.Reset(t.sleep)

	if !t.timer.Stop() {
		// Idempotent repeated calls
		go t.fn()
	}

	return t
}

func (t *Timer) Unref() {
	stop := t.stop
	runtime.AddCleanup(t, func(timer *time.Timer) {
		timer.Stop()
		stop.close()
	}, t.timer)
}

func SetTimeout(fn func(), sleep time.Duration) *Timer {
	timer := newTimer(sleep)
	timer.fn = func() {
		select {
		case <-timer.timer.C:
			fn()
		case <-timer.stop.ch:
		}
	}
	// Idempotent repeated calls
	go timer.fn()
	return timer
}

func ClearTimeout(timer *Timer) {
	if timer != nil {
		timer.Stop()
	}
}

func (t *Timer) Stop() {
	t.timer.Stop()
	t.stop.close()
}

func SetInterval(fn func(), sleep time.Duration) *Timer {
	timer := newTimer(sleep)
	timer.fn = func() {
		for {
			select {
			case <-timer.timer.C:
				timer.timer.Reset(timer.sleep)
				// Idempotent repeated calls
				go fn()
			case <-timer.stop.ch:
				timer.timer.Stop()
				return
			}
		}
	}
	// Idempotent repeated calls
	go timer.fn()
	return timer
}

func ClearInterval(timer *Timer) {
	ClearTimeout(timer)
}
