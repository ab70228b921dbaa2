package mcpfront_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/loadtest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// inPlaceComputer is a computer's session answering every request in the
// caller's goroutine, from answers made once: what is left of a tools/call
// is the front end's, the go-sdk's and the core's work, with no transport.
// A tool call whose arguments say "hold" is not answered: its callback is
// sent to held, for the test to answer when it likes.
// With async, it answers from a goroutine of its own, as a transport does.
type inPlaceComputer struct {
	answers map[string]json.RawMessage
	held    chan func(json.RawMessage, error)
	async   bool
}

func (inPlaceComputer) Notify(core.Notification) {}

func (c inPlaceComputer) Request(event string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	if event == smcp.EventToolCall && bytes.Contains(payload, []byte(`"hold"`)) {
		c.held <- done
		return nil
	}
	a, ok := c.answers[event]
	var err error
	if !ok {
		err = smcp.Errorf(smcp.CodeNotFound, "no %s here", event)
	}
	if c.async {
		go done(a, err)
	} else {
		done(a, err)
	}
	return nil
}

// inPlaceFront is the MCP front end of a hub whose office "A" has the
// computer "pc" answering in place (async: from goroutines), with one echo
// tool, and the channel of its held calls.
func inPlaceFront(t testing.TB, async bool) (http.Handler, <-chan func(json.RawMessage, error)) {
	t.Helper()
	hub := core.New(core.Config{})
	c := inPlaceComputer{async: async, held: make(chan func(json.RawMessage, error), 1), answers: map[string]json.RawMessage{
		smcp.EventToolCall:   json.RawMessage(`{"content":[{"type":"text","text":"hello"}],"isError":false}`),
		smcp.EventGetTools:   json.RawMessage(`{"tools":[{"name":"echo","description":"echo","params_schema":{"type":"object","properties":{"text":{"type":"string"}}},"return_schema":null,"meta":{}}]}`),
		smcp.EventGetDesktop: json.RawMessage(`{"desktops":[]}`),
		smcp.EventGetFinder:  json.RawMessage(`{"documents":[],"total_count":0}`),
	}}
	sess, err := hub.Attach("pc-sid", &core.Principal{ID: "computer"}, c, core.Protocol{Version: smcp.V02})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "A"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	ring, err := core.NewKeyRing(core.Key{Key: keyAll, ID: "all"})
	if err != nil {
		t.Fatal(err)
	}
	s := mcpfront.New(hub, ring, mcpfront.Options{EventsPerSecond: -1, Logger: quiet})
	t.Cleanup(s.Close)
	mux := http.NewServeMux()
	s.Mount(mux)
	return mux, c.held
}

// inPlaceSession is an MCP client reduced to POSTs served in the test's
// goroutine (no network) on one initialized session.
type inPlaceSession struct {
	h  http.Handler
	id string
}

func newInPlaceSession(t testing.TB, h http.Handler) *inPlaceSession {
	t.Helper()
	c := &inPlaceSession{h: h}
	c.post(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"allocs","version":"1"}}}`)
	if c.id == "" {
		t.Fatal("no Mcp-Session-Id")
	}
	c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *inPlaceSession) post(t testing.TB, body string) []byte {
	w := c.do(http.MethodPost, body)
	if w.Code >= 300 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		c.id = id
	}
	return w.Body.Bytes()
}

// do serves one request of the session, whatever its answer.
func (c *inPlaceSession) do(method, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(context.Background(), method, "/mcp/A", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyAll)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	return w
}

// callAllocs is the allocations of the whole process per tools/call of c,
// each checked to answer with "hello" (the floor echoes the arguments).
func callAllocs(t *testing.T, c *inPlaceSession) float64 {
	t.Helper()
	bodies := make([]string, 0, 4000)
	for i := range cap(bodies) {
		bodies = append(bodies, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+1)+`,"method":"tools/call","params":{"name":"pc__echo","arguments":{"text":"hello"}}}`)
	}
	call := func(body string) {
		if answer := c.post(t, body); !bytes.Contains(answer, []byte(`hello`)) {
			t.Fatalf("answer %s", answer)
		}
	}
	for _, b := range bodies[:500] { // warm up: pools, maps at their size
		call(b)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, b := range bodies[500:] {
		call(b)
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(len(bodies)-500)
}

// TestToolCallAllocations holds the allocations of one tools/call through
// the MCP front end, served in place (no network, a computer answering in
// the caller's goroutine), above those of the bench's MCP floor (the
// go-sdk's handler answering in place, internal/loadtest) served the same
// way: what is left is the front end's and the core's own work per call
// (docs/BENCHMARKS.md, issue 27). Allocations are counted, never time.
func TestToolCallAllocations(t *testing.T) {
	floor := callAllocs(t, newInPlaceSession(t, loadtest.NewMCPFloor(quiet)))
	h, _ := inPlaceFront(t, false)
	front := callAllocs(t, newInPlaceSession(t, h))
	t.Logf("allocations per tools/call: front end %.1f, floor %.1f, above the floor %.1f", front, floor, front-floor)
	if front-floor > maxCallAllocsAboveFloor {
		t.Fatalf("%.1f allocations per tools/call above the floor's %.1f, want at most %v", front-floor, floor, maxCallAllocsAboveFloor)
	}
}

// TestAbandonedCallLeavesNoAnswer: a tools/call given up before its
// computer answered (here: its session deleted) leaves nothing behind in
// the reused wait of routed requests (routeRequest), which the next call,
// of any session, would take for its own answer; nor does the computer's
// late answer. Several rounds, as a reused wait is the pool's choice.
func TestAbandonedCallLeavesNoAnswer(t *testing.T) {
	h, held := inPlaceFront(t, true)
	other := newInPlaceSession(t, h)
	for round := range 20 {
		c := newInPlaceSession(t, h)
		answered := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			answered <- c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"pc__echo","arguments":{"text":"hold"}}}`)
		}()
		late := recv(t, held, "the held call at the computer")
		if w := c.do(http.MethodDelete, ""); w.Code >= 300 {
			t.Fatalf("DELETE: status %d: %s", w.Code, w.Body)
		}
		if w := recv(t, answered, "the abandoned call's answer"); bytes.Contains(w.Body.Bytes(), []byte("late")) {
			t.Fatalf("the abandoned call answered %s", w.Body)
		}
		late(json.RawMessage(`{"content":[{"type":"text","text":"late"}],"isError":false}`), nil)
		for i := range 3 {
			body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(100+i) + `,"method":"tools/call","params":{"name":"pc__echo","arguments":{"text":"hello"}}}`
			// Bounded: a wait that holds a stale answer may block its
			// next callback, and so a call, for good.
			go func() { answered <- other.do(http.MethodPost, body) }()
			if w := recv(t, answered, "a later call's answer"); !bytes.Contains(w.Body.Bytes(), []byte(`"text":"hello"`)) {
				t.Fatalf("round %d: call %d answered %d %s", round, i, w.Code, w.Body)
			}
		}
	}
}
