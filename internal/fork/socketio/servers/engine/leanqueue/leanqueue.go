// Package leanqueue is a patched-in replacement for socket.io/v3's
// pkg/queue (see ../../PATCHED.md): tasks of one queue run one at a time, in
// order, never blocking Enqueue. Unlike pkg/queue it holds no goroutine and
// no 1024-slot backing array while idle: a goroutine runs only while tasks
// are pending, and for Linger after. Upstream's queue cost every connection
// two parked goroutines and ~23 KiB of heap (two queues per WebSocket
// connection).
//
// The linger is what makes a queue cheap under a steady load that is not
// saturation: a goroutine started per task grows its stack anew through the
// WebSocket write path each time (2 KiB to 16 KiB: three copies), which
// took a quarter of the gateway's CPU at 4,000 calls/s; a runner that waits
// a little for the next task keeps its stack and is woken instead.
package leanqueue

import (
	"log"
	"runtime"
	"sync"
	"time"
)

// Linger is how long a queue's goroutine waits for another task once the
// queue is empty, before it ends.
const Linger = 100 * time.Millisecond

// Queue runs tasks sequentially.
type Queue struct {
	mu      sync.Mutex
	tasks   []func()
	running bool // a runner goroutine exists, working or waiting
	waiting bool // the runner waits for a wake
	closed  bool
	wake    chan struct{} // the runner's: sent once per waiting
}

// New makes an empty queue.
func New() *Queue { return &Queue{wake: make(chan struct{}, 1)} }

// Enqueue adds a task; it never blocks. Tasks enqueued after TryClose are
// dropped, as upstream does.
func (q *Queue) Enqueue(task func()) {
	if task == nil {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.tasks = append(q.tasks, task)
	if q.running {
		q.wakeLocked()
		q.mu.Unlock()
		return
	}
	q.running = true
	q.mu.Unlock()
	go q.run()
}

// wakeLocked wakes a waiting runner; q.mu is held. The channel has room for
// the one wake of each wait: the send never blocks.
func (q *Queue) wakeLocked() {
	if q.waiting {
		q.waiting = false
		q.wake <- struct{}{}
	}
}

func (q *Queue) run() {
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	q.mu.Lock()
	for {
		if len(q.tasks) == 0 {
			if q.closed || !q.wait(&idle) {
				q.running = false
				q.tasks = nil // release the backing array while idle
				q.mu.Unlock()
				return
			}
			continue
		}
		task := q.tasks[0]
		q.tasks[0] = nil
		q.tasks = q.tasks[1:]
		q.mu.Unlock()
		execute(task)
		q.mu.Lock()
	}
}

// wait waits up to Linger for a task, q.mu held on entry and on return
// (released while waiting). It reports whether one may have come: false
// when the linger ended with none.
func (q *Queue) wait(idle **time.Timer) bool {
	q.waiting = true
	q.mu.Unlock()
	if *idle == nil {
		*idle = time.NewTimer(Linger)
	} else {
		(*idle).Reset(Linger)
	}
	select {
	case <-q.wake:
		q.mu.Lock()
		return true
	case <-(*idle).C:
	}
	q.mu.Lock()
	if q.waiting {
		q.waiting = false
		return false
	}
	// Woken as the linger ended: take the wake, so that the next wait
	// starts with an empty channel.
	q.mu.Unlock()
	<-q.wake
	q.mu.Lock()
	return true
}

func execute(task func()) {
	defer func() {
		if err := recover(); err != nil {
			buf := make([]byte, 4096)
			n := runtime.Stack(buf, false)
			log.Printf("queue task panic recovered: %v\n%s", err, buf[:n])
		}
	}()
	task()
}

// Size is the number of pending tasks.
func (q *Queue) Size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tasks)
}

// TryClose stops accepting tasks; pending ones still run, and a waiting
// runner ends.
func (q *Queue) TryClose() {
	q.mu.Lock()
	q.closed = true
	q.wakeLocked()
	q.mu.Unlock()
}
