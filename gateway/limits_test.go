package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Deeply nested JSON, sent raw on the wire (the Go client will not encode
// it), is refused with a flat error or ends that one connection; it never
// takes the gateway down, and other connections are unaffected.
func TestDeepJSON(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	ctx := ctxT(t)
	dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	nest := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	// Within encoding/json's depth limit: decoded, refused by the core.
	p := dialPolling(t, g.URL)
	p.post(t, `42/smcp,1["client:get_tools",{"agent":"x","req_id":"r","computer":"pc","x":`+nest(500)+`}]`)
	if got := p.get(t); !strings.Contains(got, `43/smcp,1[{"code":4103`) {
		t.Fatalf("depth 500: %.300s", got)
	}
	// Beyond it: the library's decoder drops the packet (that connection
	// then gets no answer; RELIABILITY.md). The gateway and the other
	// connections carry on.
	p = dialPolling(t, g.URL)
	p.post(t, `42/smcp,1["client:get_tools",{"agent":"x","req_id":"r","computer":"pc","x":`+nest(20000)+`}]`)
	p.post(t, "1") // Engine.IO close: no long poll left hanging
	if _, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Timeout: 5}); err != nil {
		t.Fatalf("the gateway did not survive deep JSON: %v", err)
	}
}

// polling is a hand-driven Engine.IO long-polling session, for bytes no
// client library would send.
type polling struct {
	url string
}

// pollingClient bounds each request: a poll the gateway never answers fails
// the test in seconds instead of at the test binary's 10 min timeout.
var pollingClient = &http.Client{Timeout: 10 * time.Second}

func dialPolling(t *testing.T, base string) *polling {
	t.Helper()
	p := &polling{url: base + "/socket.io/?EIO=4&transport=polling"}
	open := p.get(t)
	var hs struct {
		SID string `json:"sid"`
	}
	if !strings.HasPrefix(open, "0") || json.Unmarshal([]byte(open[1:]), &hs) != nil {
		t.Fatalf("handshake: %q", open)
	}
	p.url += "&sid=" + hs.SID
	p.post(t, "40/smcp,{}")
	if got := p.get(t); !strings.HasPrefix(got, "40/smcp,") {
		t.Fatalf("namespace connect: %q", got)
	}
	return p
}

func (p *polling) get(t *testing.T) string {
	t.Helper()
	resp, err := pollingClient.Get(p.url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (p *polling) post(t *testing.T, body string) {
	t.Helper()
	resp, err := pollingClient.Post(p.url, "text/plain;charset=UTF-8", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}

// Beyond its token bucket a connection gets flat 429 acks and the events are
// not handled; one that keeps sending at more than twice the rate is
// disconnected. Other connections are unaffected.
func TestEventRateLimit(t *testing.T) {
	const rate, burst = 5, 5
	g := startGateway(t, gateway.Config{Metrics: true, SIO: sio.Config{EventsPerSecond: rate, EventBurst: burst}})
	ctx := ctxT(t)
	pc := dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	list := map[string]any{"agent": "alice", "req_id": "r", "office_id": "o"}
	limited := 0
	for range burst + 3 { // the join took a token already
		if _, err := a.Conn().Request(ctx, smcp.EventListRoom, list); err != nil {
			wantCode(t, err, sio.CodeRateLimited)
			limited++
		}
	}
	// The bucket refills at 5/s: a slow run may get a token or two back, but
	// never all four events beyond the burst.
	if limited == 0 {
		t.Fatalf("none of %d requests over a burst of %d was refused", burst+3, burst)
	}
	// The computer's own connection has its own bucket.
	if _, err := pc.c.Request(ctx, smcp.EventListRoom, map[string]any{"agent": "pc", "req_id": "r", "office_id": "o"}); err != nil {
		t.Fatal(err)
	}
	// A flood that ignores the 429s ends with a disconnect.
	disconnected := make(chan struct{})
	flood, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, NoReconnect: true, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	go func() {
		for flood.Connected() {
			_ = flood.Emit(smcp.EventListRoom, list)
		}
		close(disconnected)
	}()
	select {
	case <-disconnected:
	case <-ctx.Done():
		t.Fatal("a flooding connection was not disconnected")
	}
	body := scrape(t, g.URL)
	for _, want := range []string{`smcp_refused_total{reason="events_per_second"}`, `smcp_refused_total{reason="abuse_disconnect"} 1`} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %s", want)
		}
	}
}

func TestConnectionsPerAddress(t *testing.T) {
	g := startGateway(t, gateway.Config{SIO: sio.Config{MaxConnsPerAddr: 2}})
	ctx := ctxT(t)
	first := dialAgent(t, g.URL, "a1", "")
	dialAgent(t, g.URL, "a2", "")
	_, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, NoReconnect: true, Logger: testLogger})
	wantCode(t, err, sio.CodeRateLimited)
	// A closed connection frees its slot.
	first.Close()
	testwait.Until(t, "a slot freed", func() bool {
		c, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, NoReconnect: true, Logger: testLogger})
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	return scrapeAs(t, base, "")
}

// scrapeAs reads /metrics with key, which the gateway's port asks of a
// gateway with keys (an operator's).
func scrapeAs(t *testing.T, base, key string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// /healthz is liveness, /readyz readiness: not ready while draining.
// /metrics shows the hub and the calls by event and outcome.
func TestProbesAndMetrics(t *testing.T) {
	g := startGateway(t, gateway.Config{Metrics: true})
	ctx := ctxT(t)
	dialComputer(t, g.URL, "pc", "o")
	a := dialAgent(t, g.URL, "alice", "o")
	if _, err := a.GetTools(ctx, "pc"); err != nil {
		t.Fatal(err)
	}
	_, err := a.GetTools(ctx, "nobody")
	wantCode(t, err, smcp.CodeNotFound)
	body := scrape(t, g.URL)
	for _, want := range []string{
		"smcp_connections 2", "smcp_offices 1", "smcp_agents 1", "smcp_computers 1",
		`smcp_calls_total{event="client:get_tools",front="sio",outcome="ok"} 1`,
		`smcp_calls_total{event="client:get_tools",front="sio",outcome="404"} 1`,
		`smcp_call_duration_seconds_count{event="client:get_tools",front="sio"} 2`,
		`smcp_calls_in_flight{front="sio"} 0`, "go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	probe := func(path string) int {
		resp, err := http.Get(g.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if probe("/healthz") != 200 || probe("/readyz") != 200 {
		t.Fatal("not live and ready while serving")
	}
	// Draining (shutdown begun, a call in flight keeps it there): not ready,
	// still live.
	drained := make(chan error, 1)
	dctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { drained <- g.SIO.Drain(dctx) }()
	testwait.Until(t, "draining", g.SIO.Draining)
	if probe("/readyz") != http.StatusServiceUnavailable || probe("/healthz") != 200 {
		t.Fatal("a draining gateway must be live and not ready")
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}
