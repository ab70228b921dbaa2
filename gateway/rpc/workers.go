package rpc

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

// workers runs HTTP/2 unary calls on long-lived goroutines instead of the
// goroutine net/http starts for every HTTP/2 stream. That goroutine starts
// with a small stack and grows it (a copy of every frame) once per call as
// connect-go reads the request: measured as ~9 % of the gateway's CPU per
// h2c CallTool (runtime.newstack under connect's bufferPool.Get), more than
// a hand-off costs. A worker's stack is already grown. grpc-go offers the
// same for the same reason (grpc.NumStreamWorkers). HTTP/1.1 needs none of
// this: net/http serves a connection's requests on one goroutine.
//
// A call takes an idle worker, or starts one while fewer than max run;
// otherwise it runs where it is, as without workers. A worker idle for
// idle ends (a burst leaves no goroutines behind); all end at close.
// The calls they run are counted by the Server's drain like any other.
type workers struct {
	jobs chan *job // unbuffered: a send succeeds only to an idle worker
	quit chan struct{}
	max  int
	idle time.Duration

	// free recycles jobs: a call hands one to a worker without allocating.
	free sync.Pool

	mu     sync.Mutex
	n      int
	closed bool
	wg     sync.WaitGroup
}

type job struct {
	h    http.Handler
	w    http.ResponseWriter
	r    *http.Request
	done chan any // the handler's panic value, or nil
}

func newWorkers(max int, idle time.Duration) *workers {
	p := &workers{jobs: make(chan *job), quit: make(chan struct{}), max: max, idle: idle}
	p.free.New = func() any { return &job{done: make(chan any, 1)} }
	return p
}

// serve runs h for (w, r) on a worker and returns when it has returned. A
// panic of h is raised again here, on the request's own goroutine, where
// net/http expects it: http.ErrAbortHandler as it is, any other value as a
// *handlerPanic carrying it and the worker's stack.
func (p *workers) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	j := p.free.Get().(*job)
	j.h, j.w, j.r = h, w, r
	select {
	case p.jobs <- j:
	default:
		if !p.start(j) {
			j.h, j.w, j.r = nil, nil, nil
			p.free.Put(j)
			h.ServeHTTP(w, r)
			return
		}
	}
	v := <-j.done
	j.h, j.w, j.r = nil, nil, nil
	p.free.Put(j)
	if v != nil {
		panic(v)
	}
}

// start starts a worker with j as its first job, unless max are running or
// the pool is closed.
func (p *workers) start(j *job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.n >= p.max {
		return false
	}
	p.n++
	p.wg.Add(1)
	go p.work(j)
	return true
}

func (p *workers) work(j *job) {
	defer p.wg.Done()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		j.done <- j.run()
		idle.Reset(p.idle)
		select {
		case j = <-p.jobs:
		case <-idle.C:
			p.mu.Lock()
			p.n--
			p.mu.Unlock()
			return
		case <-p.quit:
			return
		}
	}
}

func (j *job) run() (panicked any) {
	defer func() {
		switch v := recover(); v {
		case nil, http.ErrAbortHandler:
			panicked = v
		default:
			// Raised again on the stream's goroutine, whose stack is not
			// where it happened: net/http's log gets this one too.
			panicked = &handlerPanic{value: v, stack: debug.Stack()}
		}
	}()
	j.h.ServeHTTP(j.w, j.r)
	return nil
}

// handlerPanic is a handler's panic raised again by serve, with the stack
// of the worker where it happened.
type handlerPanic struct {
	value any
	stack []byte
}

func (p *handlerPanic) Error() string {
	return fmt.Sprintf("%v\n\nhandler goroutine (rpc worker):\n%s", p.value, p.stack)
}

func (p *handlerPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// close stops idle workers at once and busy ones after their call; later
// calls run on their own goroutines. wait waits for every worker to end.
func (p *workers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.quit)
	}
}

func (p *workers) wait() { p.wg.Wait() }

// running is how many workers there are.
func (p *workers) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}
