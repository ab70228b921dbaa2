package mcpfront_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// listenStream is a subscriptions/listen stream opened by a test: its
// refusal (status and body), or its messages until it ends.
type listenStream struct {
	status int
	body   string
	msgs   chan json.RawMessage
	ended  chan struct{}
	cancel context.CancelFunc
}

// openListen opens a subscriptions/listen stream of c over rt (nil: the
// default transport); the stream is closed at the test's end.
func openListen(t testing.TB, c *rawMCP, rt http.RoundTripper) *listenStream {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	ctx, cancel := context.WithCancel(context.Background())
	ls := &listenStream{msgs: make(chan json.RawMessage, 64), ended: make(chan struct{}), cancel: cancel}
	req := c.request(ctx, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}})
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		cancel()
		t.Fatalf("subscriptions/listen: %v", err)
	}
	ls.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		ls.body = string(b)
		close(ls.ended)
		return ls
	}
	t.Cleanup(func() { cancel(); <-ls.ended })
	go func() {
		defer close(ls.ended)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				select {
				case ls.msgs <- json.RawMessage(data):
				default:
				}
			}
		}
	}()
	// Its acknowledgement: the stream is served (and counted) from here.
	for {
		m := recv(t, ls.msgs, "subscriptions/acknowledged")
		if strings.Contains(string(m), "subscriptions/acknowledged") {
			return ls
		}
	}
}

// close ends the stream from the client's side and waits for its end.
func (ls *listenStream) close() { ls.cancel(); <-ls.ended }

// endError waits for the stream to end and returns the message of the
// JSON-RPC error it ended with ("" when it ended without one).
func (ls *listenStream) endError(t testing.TB) string {
	t.Helper()
	var last string
	note := func(m json.RawMessage) {
		var e struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &e) == nil && e.Error != nil {
			last = e.Error.Message
		}
	}
	deadline := time.After(waitFor)
	for {
		select {
		case m := <-ls.msgs:
			note(m)
		case <-ls.ended:
			// The reader is done: what it read is buffered.
			for {
				select {
				case m := <-ls.msgs:
					note(m)
				default:
					return last
				}
			}
		case <-deadline:
			t.Fatal("the listen stream did not end")
		}
	}
}

// refusal decodes a 429 naming a bound.
func wantRefused(t testing.TB, status int, body, message string) {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if status != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &e) != nil ||
		e.Code != core.CodeTooManyPending || e.Message != message {
		t.Fatalf("beyond the bound: %d %s, want 429 with %q", status, body, message)
	}
}

// goroutinesBackTo waits for the goroutines to be at most before, and shows
// them all when they are not.
func goroutinesBackTo(t testing.TB, before int, what string) {
	t.Helper()
	var n int
	if !testwait.Poll(waitFor, func() bool { n = runtime.NumGoroutine(); return n <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before %s, %d after:\n%s", before, what, n, buf[:runtime.Stack(buf, true)])
	}
}

// Listen streams are bounded per address, per key and gateway-wide: the
// stream beyond a bound is refused with a 429 naming it, and once the
// streams are closed their goroutines are gone.
func TestListenStreamsBounded(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{
		MaxListenStreams: 6, MaxListenStreamsPerAddr: 3, MaxListenStreamsPerKey: 5}})
	a, b := newRaw(t, g, "A", "x-api-key", keyA), newRaw(t, g, "B", "x-api-key", keyB)
	addr2, addr3 := fromAddr(t, "127.0.0.2"), fromAddr(t, "127.0.0.3")
	// The offices' views, which outlive the streams, made before counting.
	openListen(t, a, nil).close()
	openListen(t, b, addr3).close()
	testwait.Within(t, waitFor, "the warm-up streams to end", func() bool { return g.MCP.ListenStreams() == 0 })
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	before := runtime.NumGoroutine()

	var open []*listenStream
	for range 3 {
		open = append(open, openListen(t, a, nil))
	}
	ls := openListen(t, a, nil)
	wantRefused(t, ls.status, ls.body, "too many MCP listen streams from this address (3)")
	for range 2 {
		open = append(open, openListen(t, a, addr2))
	}
	ls = openListen(t, a, addr2)
	wantRefused(t, ls.status, ls.body, "too many MCP listen streams for this key (5)")
	open = append(open, openListen(t, b, addr3))
	ls = openListen(t, b, addr3)
	wantRefused(t, ls.status, ls.body, "too many MCP listen streams (6)")
	if n := g.MCP.ListenStreams(); n != 6 {
		t.Fatalf("%d listen streams open, want 6", n)
	}

	for _, ls := range open {
		ls.close()
	}
	testwait.Within(t, waitFor, "the streams to end", func() bool { return g.MCP.ListenStreams() == 0 })
	for _, rt := range []http.RoundTripper{http.DefaultTransport, addr2, addr3} {
		rt.(*http.Transport).CloseIdleConnections()
	}
	goroutinesBackTo(t, before, "the listen streams")
	// The bounds gave every slot back.
	openListen(t, a, nil).close()
}

// An operator's eviction of the office's seat ends its listen streams, each
// with an error naming the eviction, rather than leaving them to hear the
// office under the next agent.
func TestEvictionEndsListenStreams(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	c := newRaw(t, g, "A", "x-api-key", keyA)
	var streams []*listenStream
	for range 3 {
		streams = append(streams, openListen(t, c, nil))
	}
	held, err := g.Hub.EvictAgent(ctxT(t), &core.Principal{ID: "operator", Operator: true}, "A")
	if err != nil || len(held) == 0 {
		t.Fatalf("evict: %v %v", held, err)
	}
	for i, ls := range streams {
		if msg := ls.endError(t); !strings.Contains(msg, "seat evicted by operator") {
			t.Errorf("stream %d ended with %q, want the eviction", i, msg)
		}
	}
	testwait.Within(t, waitFor, "the evicted streams to be given back", func() bool { return g.MCP.ListenStreams() == 0 })
}

// expiring authenticates every caller as a token of subject "sub" that may
// enter office A and expires ttl after it is presented.
type expiring struct{ ttl time.Duration }

func (e expiring) Authenticate(context.Context, string) (*core.Principal, error) {
	return &core.Principal{ID: "token:sub", Offices: []string{"A"}, Expires: time.Now().Add(e.ttl)}, nil
}

// A listen stream and an MCP session (its GET stream with it) end when
// their token expires: the stream with an error saying so.
func TestExpiredTokenEndsListenStreamsAndSessions(t *testing.T) {
	g := startGateway(t, gateway.Config{Auth: expiring{ttl: 5 * time.Second}})
	ls := openListen(t, newRaw(t, g, "A", "Authorization", "Bearer t"), nil)
	cs := mustDial(t, g, "A", nil, "Authorization", "Bearer t")
	if msg := ls.endError(t); msg != core.ErrCredentialExpired.Message {
		t.Fatalf("the listen stream ended with %q, want %q", msg, core.ErrCredentialExpired.Message)
	}
	testwait.Within(t, waitFor, "the session to end with its token", func() bool { return g.MCP.Sessions() == 0 })
	if _, err := cs.ListTools(ctxT(t), nil); err == nil {
		t.Fatal("a session went on past its token's expiry")
	}
}

// A session whose client presents a newer token with each request (a
// client that refreshes its token) goes on past the first token's expiry,
// and ends with the last one it presented.
func TestRefreshedTokenKeepsTheSession(t *testing.T) {
	const ttl = 2 * time.Second
	g := startGateway(t, gateway.Config{Auth: expiring{ttl: ttl}})
	cs := mustDial(t, g, "A", nil, "Authorization", "Bearer t")
	for past := time.Now().Add(2 * ttl); time.Now().Before(past); time.Sleep(ttl / 8) {
		if _, err := cs.ListTools(ctxT(t), nil); err != nil {
			t.Fatalf("a request with a fresh token: %v", err)
		}
	}
	if n := g.MCP.Sessions(); n != 1 {
		t.Fatalf("%d sessions after the first token's expiry, want the refreshed one", n)
	}
	testwait.Within(t, waitFor, "the session to end with its last token", func() bool { return g.MCP.Sessions() == 0 })
}

// postSession sends body in session sid (a 2025-11-25 session) with keyA.
func postSession(t testing.TB, g *gateway.Running, sid, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, endpoint(g, "A"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyA)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", sessionVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// initialized opens a session as a client that never sends DELETE (the
// MCP Inspector's CLI): initialize, initialized, and nothing after.
func initialized(t testing.TB, g *gateway.Running) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodPost, endpoint(g, "A"), strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, b)
	}
	if status, body := postSession(t, g, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, body)
	}
	return sid
}

const toolsListBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`

// A client that never DELETEs its sessions is not locked out by them at
// its address's bound: its least recently used idle session is closed for
// the new one (its next request gets 404, MCP's word for "initialize
// again"), the others stay.
func TestIdleSessionReclaimedAtTheBound(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessionsPerAddr: 2}})
	first, second := initialized(t, g), initialized(t, g)
	if status, body := postSession(t, g, first, toolsListBody); status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", status, body) // first is now the more recently used
	}
	for range 3 {
		_ = initialized(t, g)
	}
	if n := g.MCP.Sessions(); n != 2 {
		t.Fatalf("%d sessions, want the bound, 2", n)
	}
	for _, sid := range []string{first, second} {
		if status, _ := postSession(t, g, sid, toolsListBody); status != http.StatusNotFound {
			t.Errorf("a reclaimed session answered %d, want 404", status)
		}
	}
}

// One key holds at most MaxSessionsPerKey sessions, from however many
// addresses: busy ones (here, each with its GET stream open) are not
// reclaimed, so the next is a 429 naming the bound; another key is served.
func TestSessionsPerKey(t *testing.T) {
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxSessionsPerKey: 2, MaxSessionsPerAddr: -1}})
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		if _, err := dialVia(t, g, "A", sessionVersion, fromAddr(t, ip), nil, "x-api-key", keyA); err != nil {
			t.Fatal(err)
		}
	}
	wantTooMany(t, g, "too many MCP sessions for this key (2)")
	if _, err := dialVia(t, g, "A", sessionVersion, fromAddr(t, "127.0.0.3"), nil, "x-api-key", keyA); err == nil {
		t.Fatal("a session from a third address beyond the key's bound")
	}
	if _, err := dial(t, g, "B", nil, "x-api-key", keyB); err != nil {
		t.Fatalf("another key's session: %v", err)
	}
}

// Office views are bounded gateway-wide and per key, however many office
// ids a key allowed in every office names: an idle view is reclaimed (least
// recently used), so every request is served while the views stay within
// the bounds, and their goroutines with them; with every view in use (a
// listen stream each) the next is a 429 naming the bound.
func TestOfficeViewsBounded(t *testing.T) {
	const perKey, total = 4, 6
	g := startGateway(t, gateway.Config{MCP: mcpfront.Options{MaxOfficeViews: total, MaxOfficeViewsPerKey: perKey,
		MaxListenStreams: 100, MaxListenStreamsPerAddr: -1, MaxListenStreamsPerKey: -1}})
	list := func(office string) *rpcAnswer {
		return newRaw(t, g, office, "x-api-key", keyAll).call("tools/list", nil)
	}
	if a := list("warm-up"); a.status != http.StatusOK || a.Error != nil {
		t.Fatalf("tools/list: %d %+v", a.status, a.Error)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()
	const offices = 300
	for i := range offices {
		if a := list(fmt.Sprintf("office-%d", i)); a.status != http.StatusOK || a.Error != nil {
			t.Fatalf("tools/list of office %d: %d %+v", i, a.status, a.Error)
		}
		if n := g.MCP.OfficeViews(); n > perKey {
			t.Fatalf("%d office views of one key, bound %d", n, perKey)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	// At most the bound's views are left, one goroutine each (the warm-up's
	// was counted already).
	goroutinesBackTo(t, goroutines+perKey, fmt.Sprintf("%d office views", offices))
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// 300 views held ~3 MiB (~8 MiB before their watch buffers were cut);
	// the bound's few, a small fraction of one.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 1<<20 {
		t.Errorf("the heap grew by %d bytes over %d office ids", grown, offices)
	}

	// Views in use are not reclaimed: a listen stream in each of the key's.
	var streams []*listenStream
	for i := range perKey {
		streams = append(streams, openListen(t, newRaw(t, g, fmt.Sprintf("busy-%d", i), "x-api-key", keyAll), nil))
	}
	ls := openListen(t, newRaw(t, g, "one-more", "x-api-key", keyAll), nil)
	wantRefused(t, ls.status, ls.body, fmt.Sprintf("too many MCP office views for this key (%d)", perKey))
	// Another key's views count against the gateway's bound.
	openListen(t, newRaw(t, g, "A", "x-api-key", keyA), nil)
	openListen(t, newRaw(t, g, "B", "x-api-key", keyB), nil)
	ls = openListen(t, newRaw(t, g, "A", "x-api-key", keyAll), nil) // A's view exists: no new one
	ls.close()
	ls = openListen(t, newRaw(t, g, "A2", "x-api-key", keyAll), nil)
	wantRefused(t, ls.status, ls.body, fmt.Sprintf("too many MCP office views (%d)", total))
	// A stream's end makes its view idle, and so reclaimable.
	streams[0].close()
	testwait.Within(t, waitFor, "the closed stream to end", func() bool { return g.MCP.ListenStreams() == perKey+1 })
	if a := list("one-more"); a.status != http.StatusOK || a.Error != nil {
		t.Fatalf("tools/list once a view is idle: %d %+v", a.status, a.Error)
	}
}
