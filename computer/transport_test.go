package computer_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// seen is one request the recorder passed on to the gateway.
type seen struct {
	method, transport, sid, version string
	upgrade                         bool   // a WebSocket handshake
	body                            string // a POST's body
	status                          int
}

// recorder is a reverse proxy in front of a real gateway that logs every
// Engine.IO request, and can refuse WebSocket handshakes as a proxy
// without upgrade support does.
type recorder struct {
	mu    sync.Mutex
	seen  []seen
	noWS  bool
	proxy *httputil.ReverseProxy
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	s := seen{method: req.Method, transport: q.Get("transport"), sid: q.Get("sid"), version: q.Get("a2c_version"),
		upgrade: strings.EqualFold(req.Header.Get("Upgrade"), "websocket")}
	if req.Method == http.MethodPost {
		b, _ := io.ReadAll(req.Body)
		s.body = string(b)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	if r.noWS && s.transport == "websocket" {
		s.status = http.StatusBadRequest
		r.add(s)
		http.Error(w, "no WebSocket here", http.StatusBadRequest)
		return
	}
	r.add(s)
	r.proxy.ServeHTTP(w, req)
}

func (r *recorder) add(s seen) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.seen...)
}

// transportOffice is a gateway behind a recorder, a computer dialled
// through the recorder with its defaults (polling first), and an agent
// dialled to the gateway directly.
func transportOffice(t *testing.T, noWS bool) (*recorder, *computer.Link, *agent.Client) {
	t.Helper()
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	target, err := url.Parse(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{noWS: noWS, proxy: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)

	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, testmcp.New("s", testmcp.Options{}))}},
		func(o *computer.Options) { o.Protocol = computer.Protocol04 })
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: front.URL, Office: "office-1", APIKey: "k", Dial: sioclient.Options{Logger: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: gw.URL, Logger: quietLogger()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "office-1"); err != nil {
		t.Fatal(err)
	}
	return rec, link, ag
}

func echoThrough(t *testing.T, ag *agent.Client) {
	t.Helper()
	tools, err := ag.GetTools(ctxT(t), "pc")
	if err != nil || len(tools.GetTools()) == 0 {
		t.Fatalf("get_tools: %v %v", tools, err)
	}
	name := ""
	for _, tl := range tools.GetTools() {
		if strings.HasSuffix(tl.GetName(), "echo") {
			name = tl.GetName()
		}
	}
	res, err := ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: name, Params: params(t, map[string]any{"text": "hi"}), Timeout: 10})
	if err != nil || res.GetIsError() || text0(res) != "s: hi" {
		t.Fatalf("%s: %v %v", name, res, err)
	}
}

// The computer opens its session as PROTOCOL-0.4.md §2 and socket.io-client
// do: a long-polling GET carrying a2c_version, no role in its auth, then the
// WebSocket upgrade of that session; a tool call then goes through the
// upgraded transport.
func TestComputerPollsFirstThenUpgrades(t *testing.T) {
	rec, link, ag := transportOffice(t, false)
	testwait.Poll(15*time.Second, func() bool { return link.Transport() == sioclient.TransportWebSocket })
	if tr := link.Transport(); tr != sioclient.TransportWebSocket {
		t.Fatalf("transport %q after the join; want the upgrade to websocket", tr)
	}
	echoThrough(t, ag)
	if tr := link.Transport(); tr != sioclient.TransportWebSocket {
		t.Fatalf("transport %q after the call", tr)
	}

	reqs := rec.requests()
	if len(reqs) < 2 {
		t.Fatalf("requests: %+v", reqs)
	}
	first := reqs[0]
	want, _ := computer.A2CVersion(computer.Protocol04)
	if first.method != http.MethodGet || first.transport != "polling" || first.sid != "" || first.upgrade || first.version != want {
		t.Fatalf("first request %+v; want a polling GET without sid, with a2c_version=%s", first, want)
	}
	var sid string
	upgrades := 0
	for i, r := range reqs {
		if r.version != want {
			t.Errorf("request %d (%+v) has a2c_version %q", i, r, r.version)
		}
		if i > 0 {
			if sid == "" {
				sid = r.sid
			}
			if r.sid == "" || r.sid != sid {
				t.Errorf("request %d (%+v) is not of the first session %q", i, r, sid)
			}
		}
		if r.upgrade {
			upgrades++
			if r.transport != "websocket" {
				t.Errorf("upgrade request %+v", r)
			}
		}
		if strings.Contains(r.body, "40/smcp") && strings.Contains(r.body, `"role"`) {
			t.Errorf("the namespace CONNECT carries a role: %q", r.body)
		}
	}
	if upgrades != 1 {
		t.Errorf("%d WebSocket handshakes; want one upgrade: %+v", upgrades, reqs)
	}
}

// Behind a proxy that refuses WebSocket handshakes, the computer stays on
// long-polling and works: it joins and answers a tool call.
func TestComputerOnPollingOnlyGateway(t *testing.T) {
	rec, link, ag := transportOffice(t, true)
	testwait.Poll(15*time.Second, func() bool {
		for _, r := range rec.requests() {
			if r.status == http.StatusBadRequest {
				return true
			}
		}
		return false
	})
	echoThrough(t, ag)
	if tr := link.Transport(); tr != sioclient.TransportPolling {
		t.Fatalf("transport %q; want polling (the proxy refuses WebSocket)", tr)
	}
	refused := 0
	for _, r := range rec.requests() {
		if r.status == http.StatusBadRequest {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the client never tried to upgrade")
	}
}
