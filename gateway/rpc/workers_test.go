package rpc

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// Sequential calls reuse one worker; a handler's panic is raised again on
// the caller's goroutine (net/http's contract, http.ErrAbortHandler
// included) and the worker keeps serving.
func TestWorkersReuseAndPanic(t *testing.T) {
	p := newWorkers(32, time.Minute)
	t.Cleanup(func() { p.close(); p.wait() })
	served := 0
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++; w.WriteHeader(http.StatusNoContent) })
	r := httptest.NewRequest(http.MethodPost, "/x", nil)
	// A call right after another may find its worker not yet back waiting
	// and start a second one: with a pause between calls they reuse one
	// (a few, on a loaded machine), not one each.
	for range 20 {
		w := httptest.NewRecorder()
		p.serve(ok, w, r)
		if w.Code != http.StatusNoContent {
			t.Fatalf("status %d", w.Code)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if served != 20 || p.running() > 3 {
		t.Fatalf("served %d on %d workers, want 20 on at most 3", served, p.running())
	}

	abort := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		p.serve(abort, httptest.NewRecorder(), r)
		t.Fatal("serve returned after the handler panicked")
	}()
	// Any other panic comes back with the stack where it happened.
	boom := errors.New("boom")
	func() {
		defer func() {
			v := recover()
			err, _ := v.(error)
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "TestWorkersReuseAndPanic") {
				t.Fatalf("recovered %v, want boom with the handler's stack", v)
			}
		}()
		p.serve(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(boom) }), httptest.NewRecorder(), r)
	}()
	before := p.running()
	time.Sleep(10 * time.Millisecond)
	p.serve(ok, httptest.NewRecorder(), r)
	if served != 21 || p.running() > before {
		t.Fatalf("after panics: served %d on %d workers (%d before), want 21 on no new one", served, p.running(), before)
	}
}

// At most max workers run: a call beyond them runs on its own goroutine
// at once instead of waiting for one. Idle workers end after their idle
// time; after close, calls still run, without workers.
func TestWorkersBoundIdleAndClose(t *testing.T) {
	const idle = 50 * time.Millisecond
	p := newWorkers(2, idle)
	release := make(chan struct{})
	var started sync.WaitGroup
	block := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { started.Done(); <-release })
	r := httptest.NewRequest(http.MethodPost, "/x", nil)
	var calls sync.WaitGroup
	started.Add(2)
	for range 2 {
		calls.Go(func() { p.serve(block, httptest.NewRecorder(), r) })
	}
	started.Wait()
	if n := p.running(); n != 2 {
		t.Fatalf("%d workers for 2 blocked calls", n)
	}
	// A third call while both workers are busy is served, not queued.
	w := httptest.NewRecorder()
	p.serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }), w, r)
	if w.Code != http.StatusAccepted || p.running() != 2 {
		t.Fatalf("third call: status %d with %d workers", w.Code, p.running())
	}
	close(release)
	calls.Wait()
	testwait.Until(t, "idle workers to end", func() bool { return p.running() == 0 })

	p.close()
	p.wait()
	w = httptest.NewRecorder()
	p.serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) }), w, r)
	if w.Code != http.StatusAccepted || p.running() != 0 {
		t.Fatalf("after close: status %d with %d workers", w.Code, p.running())
	}
}

// The AgentService runs HTTP/2 unary calls on the workers, and HTTP/1.1
// calls on their connection's goroutine.
func TestHTTP2UnaryCallsRunOnWorkers(t *testing.T) {
	s := New(core.New(core.Config{}), core.AllowAll{}, Options{})
	t.Cleanup(func() {
		if err := s.Drain(context.Background()); err != nil {
			t.Error(err)
		}
	})
	h := s.Handlers()["/"+smcpv1connect.AgentServiceName+"/"]
	body, err := proto.Marshal(&smcpv1.ListRoomRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(major int) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, smcpv1connect.AgentServiceListRoomProcedure, bytes.NewReader(body))
		r.ProtoMajor = major
		r.Header.Set("Content-Type", "application/proto")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := call(1); w.Code != http.StatusOK || s.workers.running() != 0 {
		t.Fatalf("HTTP/1.1: status %d (%s), %d workers", w.Code, w.Body.Bytes(), s.workers.running())
	}
	if w := call(2); w.Code != http.StatusOK || s.workers.running() != 1 {
		t.Fatalf("HTTP/2: status %d (%s), %d workers", w.Code, w.Body.Bytes(), s.workers.running())
	}
}
