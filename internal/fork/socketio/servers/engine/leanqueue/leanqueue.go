// Package leanqueue is a patched-in replacement for socket.io/v3's
// pkg/queue (see ../../PATCHED.md): tasks of one queue run one at a time, in
// order, never blocking Enqueue. Unlike pkg/queue it holds no goroutine and
// no 1024-slot backing array while idle: a goroutine runs only while tasks
// are pending. Upstream's queue cost every connection two parked goroutines
// and ~23 KiB of heap (two queues per WebSocket connection).
package leanqueue

import (
	"log"
	"runtime"
	"sync"
)

// Queue runs tasks sequentially.
type Queue struct {
	mu      sync.Mutex
	tasks   []func()
	running bool
	closed  bool
}

// New makes an empty queue.
func New() *Queue { return &Queue{} }

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
		q.mu.Unlock()
		return
	}
	q.running = true
	q.mu.Unlock()
	go q.run()
}

func (q *Queue) run() {
	for {
		q.mu.Lock()
		if len(q.tasks) == 0 {
			q.running = false
			q.tasks = nil // release the backing array while idle
			q.mu.Unlock()
			return
		}
		task := q.tasks[0]
		q.tasks[0] = nil
		q.tasks = q.tasks[1:]
		q.mu.Unlock()
		execute(task)
	}
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

// TryClose stops accepting tasks; pending ones still run.
func (q *Queue) TryClose() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}
