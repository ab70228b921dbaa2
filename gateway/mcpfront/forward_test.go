package mcpfront_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// trio is three gateway nodes of one cluster. Node 1 advertises itself
// through a counting proxy, so the test sees every request another node
// forwards to it (and that none reaches it when none should).
type trio struct {
	n         [3]*gateway.Running
	forwarded atomic.Int64
	// down makes node 1's advertised address drop every new request
	// (node 1 unreachable from the others).
	down atomic.Bool
}

func startTrio(t *testing.T, redis string, grace time.Duration) *trio {
	t.Helper()
	tr := &trio{}
	var owner atomic.Pointer[url.URL]
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			tr.forwarded.Add(1)
			pr.SetURL(owner.Load())
			pr.Out.Host = pr.In.Host // node 1 sees what the forwarding node sent
		},
		FlushInterval: -1,
	}
	counter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tr.down.Load() {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(counter.Close)
	// The default heartbeat TTL (3s), not a short one: nothing here waits
	// for a heartbeat to lapse (a stopped node withdraws its own), and on
	// a real redis-server, whose keys expire in real time, a node of a
	// loaded -race run that misses a 600ms TTL is reaped and its sessions
	// are "not found" through the others until it announces itself again.
	node := func(id, advertise string) *gateway.Running {
		return startGateway(t, gateway.Config{Redis: redis, NodeID: id, AdvertiseURL: advertise, ShutdownGrace: grace})
	}
	tr.n[0] = node("n1", counter.URL)
	u, err := url.Parse(tr.n[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	owner.Store(u)
	// Nodes 2 and 3 advertise their listener's address (the default).
	tr.n[1], tr.n[2] = node("n2", ""), node("n3", "")
	return tr
}

// balancer is what a load balancer without sticky sessions does to an MCP
// client: its initialize reaches node init, each later request the node
// next names (changed by the test as it goes). It records the hosts used.
type balancer struct {
	init string
	next atomic.Pointer[string]
	base http.RoundTripper
	seen atomic.Pointer[[]string]
}

func newBalancer(init, next *gateway.Running) *balancer {
	b := &balancer{init: host(init), base: http.DefaultTransport}
	b.to(next)
	b.seen.Store(&[]string{})
	return b
}

func host(g *gateway.Running) string { return strings.TrimPrefix(g.URL, "http://") }

func (b *balancer) to(g *gateway.Running) { h := host(g); b.next.Store(&h) }

func (b *balancer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = ""
	r.URL.Host = b.init
	if r.Header.Get("Mcp-Session-Id") != "" {
		r.URL.Host = *b.next.Load()
	}
	for {
		old := b.seen.Load()
		seen := append(append([]string{}, *old...), r.Method+" "+r.URL.Host)
		if b.seen.CompareAndSwap(old, &seen) {
			break
		}
	}
	return b.base.RoundTrip(r)
}

// dialCluster connects the go-sdk client to office A with keyA through b,
// in an MCP session (2026-07-28 has none to forward); its standalone GET
// stream is not reconnected.
func dialCluster(t *testing.T, b *balancer, opts *mcp.ClientOptions) *mcp.ClientSession {
	return dialClusterRetries(t, b, opts, -1)
}

func dialClusterRetries(t *testing.T, b *balancer, opts *mcp.ClientOptions, retries int) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpfront-cluster-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: "http://" + b.init + "/mcp/A", MaxRetries: retries,
		HTTPClient: &http.Client{Transport: headers{h: http.Header{"X-Api-Key": {keyA}}, base: b}}}
	cs, err := c.Connect(ctxT(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: sessionVersion})
	if err != nil {
		t.Fatalf("connect through node %s: %v", b.init, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rawPost sends a tools/list of session sid to g with the headers given
// and returns the status.
func rawPost(t *testing.T, g *gateway.Running, sid string, kv ...string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, endpoint(g, "A"),
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Mcp-Session-Id", sid)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST to %s: %v", g.URL, err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

func TestSessionThroughEveryNodeMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	testSessionThroughEveryNode(t, "redis://"+mr.Addr(), mr.Close)
}

func TestSessionThroughEveryNodeRedisServer(t *testing.T) {
	r := systest.RedisProcess(t)
	testSessionThroughEveryNode(t, r.URL, r.Stop)
}

// An MCP session made on node 1 is used through nodes 2 and 3 (a load
// balancer that pins nothing): tools/list, tools/call, resources/read, and
// the GET stream's notifications, each request forwarded to node 1; an
// unauthenticated or foreign request is refused by the node it reaches
// and never forwarded; DELETE through node 3 ends the session on node 1;
// once node 1 is gone its sessions are not found on the others; with
// Redis gone (stopRedis), an owner cannot be looked up: 503.
func testSessionThroughEveryNode(t *testing.T, redis string, stopRedis func()) {
	tr := startTrio(t, redis, 0)
	n1, n2, n3 := tr.n[0], tr.n[1], tr.n[2]
	fx := newFixture(t, "pc1")
	startComputer(t, n3, keyA, "A", "pc1", map[string]string{"fx": fx.url})

	b := newBalancer(n1, n2) // the GET stream opens on node 2
	changed := make(chan struct{}, 8)
	cs := dialCluster(t, b, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	sid := cs.ID()
	if n1.MCP.Sessions() != 1 || n2.MCP.Sessions() != 0 || n3.MCP.Sessions() != 0 {
		t.Fatalf("sessions per node: %d %d %d, want 1 0 0", n1.MCP.Sessions(), n2.MCP.Sessions(), n3.MCP.Sessions())
	}
	step := func(what string, via *gateway.Running, do func()) {
		t.Helper()
		b.to(via)
		before := tr.forwarded.Load()
		do()
		if tr.forwarded.Load() == before {
			t.Errorf("%s through %s reached node 1 without being forwarded", what, via.URL)
		}
	}
	step("tools/list", n2, func() {
		testwait.Within(t, waitFor, "pc1's tools through node 2", func() bool { return toolNames(t, cs)["pc1__echo"] != nil })
	})
	step("tools/call", n3, func() {
		res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "pc1__echo", Arguments: map[string]any{"text": "via n3"}})
		if err != nil || text(t, res) != "pc1: via n3" {
			t.Fatalf("tools/call through node 3: %v %+v", err, res)
		}
	})
	step("resources/read", n2, func() {
		res, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: fx.window})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "status of pc1" {
			t.Fatalf("resources/read through node 2: %v %+v", err, res)
		}
	})
	// A computer joins (on node 2): node 1's session sends
	// tools/list_changed on its GET stream, which the client holds through
	// node 2.
	startComputer(t, n2, keyA, "A", "pc2", map[string]string{"fx": newFixture(t, "pc2").url})
	recv(t, changed, "tools/list_changed on the GET stream held through node 2")
	step("tools/list after the join", n3, func() {
		testwait.Within(t, waitFor, "pc2's tools through node 3", func() bool { return toolNames(t, cs)["pc2__echo"] != nil })
	})
	var gets []string
	for _, s := range *b.seen.Load() {
		if strings.HasPrefix(s, "GET ") {
			gets = append(gets, s)
		}
	}
	if len(gets) == 0 || gets[0] != "GET "+host(n2) {
		t.Errorf("the client's GET stream went to %v, want node 2 (%s)", gets, host(n2))
	}

	// Refused where it arrives, never forwarded: no credentials, a key
	// of another office, a request marked as forwarded already.
	before := tr.forwarded.Load()
	if got := rawPost(t, n2, sid); got != http.StatusUnauthorized {
		t.Errorf("no key through node 2: %d, want 401", got)
	}
	if got := rawPost(t, n2, sid, "x-api-key", "not-a-key"); got != http.StatusUnauthorized {
		t.Errorf("a wrong key through node 2: %d, want 401", got)
	}
	if got := rawPost(t, n3, sid, "x-api-key", keyB); got != http.StatusForbidden {
		t.Errorf("office B's key through node 3: %d, want 403", got)
	}
	if got := rawPost(t, n2, sid, "x-api-key", keyA, mcpfront.ForwardedHeader, "n3"); got != http.StatusNotFound {
		t.Errorf("a request forwarded already, to a node not owning the session: %d, want 404", got)
	}
	if n := tr.forwarded.Load() - before; n != 0 {
		t.Errorf("%d refused requests reached node 1", n)
	}
	// The owner checks the key again: another principal with access to
	// the office does not get the session.
	if got := rawPost(t, n2, sid, "x-api-key", keyAll); got != http.StatusNotFound {
		t.Errorf("another key's request for the session through node 2: %d, want 404", got)
	}
	if got := rawPost(t, n2, sid, "x-api-key", keyA); got != http.StatusOK {
		t.Errorf("the session's own key, raw, through node 2: %d, want 200", got)
	}

	// DELETE through node 3 ends the session on node 1.
	b.to(n3)
	if err := cs.Close(); err != nil {
		t.Errorf("close (DELETE through node 3): %v", err)
	}
	testwait.Within(t, waitFor, "node 1 to end the session", func() bool { return n1.MCP.Sessions() == 0 })
	if got := rawPost(t, n2, sid, "x-api-key", keyA); got != http.StatusNotFound {
		t.Errorf("the deleted session through node 2: %d, want 404", got)
	}

	// A session whose node is alive but cannot be reached (its advertised
	// address is wrong, or it just died and its heartbeat has not lapsed
	// yet) is a 502, not a 404: the session may still exist.
	cs2 := dialCluster(t, newBalancer(n1, n2), nil)
	tr.down.Store(true)
	if got := rawPost(t, n2, cs2.ID(), "x-api-key", keyA); got != http.StatusBadGateway {
		t.Errorf("a session of an unreachable node 1 through node 2: %d, want 502", got)
	}
	// A session whose node stopped is not found anywhere: the client
	// initializes again (on a node that lives).
	if err := n1.Stop(); err != nil {
		t.Fatalf("stop node 1: %v", err)
	}
	for _, g := range []*gateway.Running{n2, n3} {
		if got := rawPost(t, g, cs2.ID(), "x-api-key", keyA); got != http.StatusNotFound {
			t.Errorf("a session of the stopped node 1 through %s: %d, want 404", g.URL, got)
		}
	}
	cs3 := dialCluster(t, newBalancer(n2, n3), nil)
	if toolNames(t, cs3)["pc1__echo"] == nil {
		t.Errorf("a new session on node 2, used through node 3, lacks pc1's tools")
	}
	stopRedis()
	// Node 3 may still know where node 2 is (for a second after it last
	// asked); then it must ask, and cannot.
	testwait.Within(t, waitFor, "503 for a session of node 2 through node 3, Redis down", func() bool {
		return rawPost(t, n3, cs3.ID(), "x-api-key", keyA) == http.StatusServiceUnavailable
	})
}

// lb is a load balancer that pins nothing: an initialize (a POST without
// Mcp-Session-Id) goes to node init, every other request to node rest.
func lb(t *testing.T, init, rest *gateway.Running) *httptest.Server {
	t.Helper()
	parse := func(g *gateway.Running) *url.URL {
		u, err := url.Parse(g.URL)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	to, other := parse(init), parse(rest)
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if pr.In.Header.Get("Mcp-Session-Id") != "" {
				pr.SetURL(other)
				return
			}
			pr.SetURL(to)
		},
		FlushInterval: -1,
	})
	t.Cleanup(srv.Close)
	return srv
}

// The official TypeScript SDK client, through a load balancer that sends
// its initialize to node 1 and everything else to node 2: listing, calls
// on two computers of two other nodes, a cancelled slow call, reads, and
// tools/list_changed on its GET stream.
func TestTypeScriptSDKClientThroughAnotherNode(t *testing.T) {
	dir := nodetest.Require(t, nodeDir)
	tr := startTrio(t, "redis://"+miniredis.RunT(t).Addr(), 0)
	n1, n2, n3 := tr.n[0], tr.n[1], tr.n[2]
	pc1, pc2 := newFixture(t, "pc1"), newFixture(t, "pc2")
	startComputer(t, n2, keyA, "A", "pc1", map[string]string{"fx": pc1.url, "docs": docsServer(t)})
	startComputer(t, n3, keyA, "A", "pc2", map[string]string{"fx": pc2.url})
	front := lb(t, n1, n2)
	runTypeScriptClient(t, dir, front.URL+"/mcp/A", pc2, func() {
		if n1.MCP.Sessions() != 1 || n2.MCP.Sessions() != 0 {
			t.Errorf("sessions on nodes 1 and 2: %d %d, want 1 0", n1.MCP.Sessions(), n2.MCP.Sessions())
		}
		startComputer(t, n3, keyA, "A", "pc3", map[string]string{"fx": newFixture(t, "pc3").url})
	})
	if tr.forwarded.Load() < 8 {
		t.Errorf("%d requests forwarded to node 1, want every request after the initialize", tr.forwarded.Load())
	}
	testwait.Within(t, waitFor, "node 1 to end the session the client terminated", func() bool { return n1.MCP.Sessions() == 0 })
}

// A node that stops ends the streams it proxies, as it ends its own: its
// shutdown does not wait for them (the grace here is far longer than the
// test's bound), and the session lives on at its owner, its stream
// reopened through another node.
func TestStoppingNodeEndsProxiedStreams(t *testing.T) {
	tr := startTrio(t, "redis://"+miniredis.RunT(t).Addr(), time.Hour)
	n1, n2, n3 := tr.n[0], tr.n[1], tr.n[2]
	b := newBalancer(n1, n2)
	cs := dialClusterRetries(t, b, nil, 5)
	testwait.Within(t, waitFor, "the GET stream through node 2", func() bool {
		for _, s := range *b.seen.Load() {
			if s == "GET "+host(n2) {
				return true
			}
		}
		return false
	})
	b.to(n3) // where the client reopens its stream
	stopped := make(chan error, 1)
	go func() { stopped <- n2.Stop() }()
	if err := recv(t, stopped, "node 2 to stop while it proxies a GET stream"); err != nil {
		t.Fatalf("stop node 2: %v", err)
	}
	if n1.MCP.Sessions() != 1 {
		t.Fatalf("node 1 holds %d sessions after node 2 stopped, want 1", n1.MCP.Sessions())
	}
	if _, err := cs.ListTools(ctxT(t), nil); err != nil {
		t.Errorf("the session through node 3 after node 2 stopped: %v", err)
	}
	testwait.Within(t, waitFor, "the GET stream reopened through node 3", func() bool {
		for _, s := range *b.seen.Load() {
			if s == "GET "+host(n3) {
				return true
			}
		}
		return false
	})
}

// A node forwarding a session's requests asks the registry where the owner
// is once, not per request (it was a Redis round trip on every request):
// the owner's URL is kept for a second, and dropped when the owner stops.
func TestForwardLooksUpOwnerOnce(t *testing.T) {
	tr := startTrio(t, "redis://"+miniredis.RunT(t).Addr(), 0)
	n1, n2 := tr.n[0], tr.n[1]
	cs := dialCluster(t, newBalancer(n1, n2), nil)
	const requests = 20
	start := time.Now()
	for range requests {
		if got := rawPost(t, n2, cs.ID(), "x-api-key", keyA); got != http.StatusOK {
			t.Fatalf("the session through node 2: %d, want 200", got)
		}
	}
	// One lookup, and one more per second the requests took (the URL is
	// asked again after a second).
	if n, most := n2.MCP.PeerLookups(), 1+int64(time.Since(start)/time.Second); n > most || n >= requests {
		t.Errorf("%d registry lookups for %d forwarded requests, want at most %d", n, requests, most)
	}
	// Node 1 stops: its address answers no more, and the URL node 2 kept
	// is dropped at the first failure, which the registry then explains.
	tr.down.Store(true)
	if err := n1.Stop(); err != nil {
		t.Fatalf("stop node 1: %v", err)
	}
	if got := rawPost(t, n2, cs.ID(), "x-api-key", keyA); got != http.StatusNotFound {
		t.Errorf("a session of the stopped node 1 through node 2: %d, want 404", got)
	}
}
