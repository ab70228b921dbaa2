package sioclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/sioclient"

	"github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// logRecorder keeps the records at info level and above.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (h *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *logRecorder) WithGroup(string) slog.Handler                { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.Key + "=" + a.Value.String(); return true })
	h.mu.Lock()
	h.lines = append(h.lines, line)
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) find(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func (h *logRecorder) waitFor(t *testing.T, prefix string) string {
	t.Helper()
	var l string
	if testwait.Poll(testwait.Timeout, func() bool { l = h.find(prefix); return l != "" }) {
		return l
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Fatalf("no log line %q among %q", prefix, h.lines)
	return ""
}

// serve runs h on a loopback listener until the test ends.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// A gateway refusing the protocol version at the handshake (HTTP 400,
// X-A2C-Error-Code 4008) stops Dial at once with a clear error; it used to
// retry until the caller gave up.
func TestDialVersionRefused(t *testing.T) {
	var attempts sync.Map
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Store(time.Now(), true)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-A2C-Error-Code", "4008")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"code":4008,"message":"incompatible protocol version","server_version":"0.3.0","client_version":%q}`, r.URL.Query().Get("a2c_version"))
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := sioclient.Dial(ctx, sioclient.Options{URL: url})
	e, ok := smcp.AsError(err)
	if !ok || e.Code != smcp.CodeVersionMismatch || !strings.Contains(err.Error(), "0.3.0") {
		t.Fatalf("Dial: %v; want a 4008 error naming the gateway's version", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("refusal took %v: it was retried", took)
	}
	n := 0
	attempts.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d handshakes; a version refusal is not retried", n)
	}
}

// A gateway closing a live connection with WebSocket code 4900 (version
// refused) ends the client for good: Done, Err says why, an error is logged,
// and nothing reconnects.
func TestClose4900StopsClient(t *testing.T) {
	var handshakes sync.Map
	upgrader := websocket.Upgrader{}
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handshakes.Store(time.Now(), true)
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		// Engine.IO OPEN, then the namespace CONNECT answer, then 4900.
		_ = conn.WriteMessage(websocket.TextMessage, []byte(`0{"sid":"e1","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}`))
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if strings.HasPrefix(string(msg), "40/smcp") {
				break
			}
		}
		_ = conn.WriteMessage(websocket.TextMessage, []byte(`40/smcp,{"sid":"s1"}`))
		time.Sleep(100 * time.Millisecond)
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(4900, "incompatible protocol version"))
		_, _, _ = conn.ReadMessage()
	}))
	logs := &logRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// WebSocket only: the close code is the WebSocket's (this server
	// speaks nothing else).
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: url, Logger: slog.New(logs), ReconnectDelay: 50 * time.Millisecond, Transports: sioclient.TransportsWebSocketOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client lives on after a 4900 close")
	}
	if e, ok := smcp.AsError(c.Err()); !ok || e.Code != smcp.CodeVersionMismatch {
		t.Fatalf("Err = %v; want a 4008 error", c.Err())
	}
	logs.waitFor(t, "ERROR disconnected for good")
	time.Sleep(500 * time.Millisecond) // ten reconnect delays
	n := 0
	handshakes.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d handshakes: the client reconnected after 4900", n)
	}
}

// Failures are loud at the default level: a gateway that cannot be reached
// is a warning with the reason at each attempt, a lost gateway a warning,
// and the reconnect an info line.
func TestFailuresAreLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	logs := &logRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dialed := make(chan *sioclient.Client, 1)
	go func() {
		c, err := sioclient.Dial(ctx, sioclient.Options{URL: "http://" + addr, Logger: slog.New(logs), ReconnectDelay: 50 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		dialed <- c
	}()
	line := logs.waitFor(t, "WARN cannot reach the gateway, retrying")
	if !strings.Contains(line, "connection refused") {
		t.Errorf("the warning does not say why: %s", line)
	}
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := <-dialed
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	logs.waitFor(t, "INFO connected to the gateway")
	_ = gw.Stop()
	logs.waitFor(t, "WARN disconnected from the gateway, reconnecting")
	gw, err = gateway.Start(gateway.Config{Auth: core.AllowAll{}}, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()
	logs.waitFor(t, "INFO reconnected to the gateway")
	if errors.Is(c.Err(), sioclient.ErrClosed) {
		t.Error("the client is over")
	}
}

// The refusal is a *VersionError carrying what the gateway says it
// supports (PROTOCOL-0.4.md §2, P5), and the client sends the version it
// is given.
func TestVersionErrorNamesSupported(t *testing.T) {
	var sent sync.Map
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Store(r.URL.Query().Get("a2c_version"), true)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"code":4008,"message":"Protocol version mismatch","server_version":"0.4.0","client_version":"0.5.0",`+
			`"min_supported":"0.2.0","max_supported":"0.4.999","details":{"supported":["0.2","0.4"]}}`)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := sioclient.Dial(ctx, sioclient.Options{URL: url, Version: "0.5.0"})
	var ve *sioclient.VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("Dial: %v; want a *VersionError", err)
	}
	if _, ok := sent.Load("0.5.0"); !ok {
		t.Error("a2c_version 0.5.0 was not sent")
	}
	if got := strings.Join(ve.Protocols(), ","); got != "0.2,0.4" || ve.ServerVersion != "0.4.0" || ve.ClientVersion != "0.5.0" {
		t.Errorf("VersionError %+v, protocols %q", ve, got)
	}
	if !strings.Contains(err.Error(), "0.2, 0.4") {
		t.Errorf("message %q does not name the supported versions", err)
	}
	// Without details.supported, the range gives them.
	ve = &sioclient.VersionError{MinSupported: "0.2.0", MaxSupported: "0.4.999"}
	if got := strings.Join(ve.Protocols(), ","); got != "0.2,0.3,0.4" {
		t.Errorf("range protocols %q", got)
	}
	if got := (&sioclient.VersionError{ServerVersion: "0.2.0"}).Protocols(); len(got) != 1 || got[0] != "0.2" {
		t.Errorf("server_version protocols %q", got)
	}
}

// CheckVersion reads a real gateway's refusal without a session, and
// answers nil for a version it serves, for a gateway without any opinion
// and for one that cannot be reached.
func TestCheckVersion(t *testing.T) {
	g, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, SIO: sio.Config{Protocols: []smcp.Version{smcp.V02, smcp.V03}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = sioclient.CheckVersion(ctx, sioclient.Options{URL: g.URL, Version: "0.4.0"})
	var refused *sioclient.VersionError
	if !errors.As(err, &refused) || strings.Join(refused.Protocols(), ",") != "0.2,0.3" || refused.ClientVersion != "0.4.0" {
		t.Fatalf("0.4 at a 0.2/0.3 gateway: %v", err)
	}
	for _, v := range []string{"0.3.2", "0.2.0", ""} {
		if err := sioclient.CheckVersion(ctx, sioclient.Options{URL: g.URL, Version: v}); err != nil {
			t.Errorf("version %q: %v", v, err)
		}
	}
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusBadRequest) }))
	if err := sioclient.CheckVersion(ctx, sioclient.Options{URL: other, Version: "0.4.0"}); err != nil {
		t.Errorf("a plain 400: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := sioclient.CheckVersion(ctx, sioclient.Options{URL: "http://" + addr, Version: "0.4.0"}); err != nil {
		t.Errorf("unreachable: %v", err)
	}
}

// A key refused when the client reconnects (the gateway restarted with
// other keys) is an error line with the gateway's refusal, and the client
// keeps trying, paced by the backoff: once the gateway takes the key again
// it reconnects and re-joins its office. It used to stay unconnected for
// good and say nothing.
func TestReconnectRefusedKeyIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func(key string) *gateway.Running {
		t.Helper()
		ring, err := core.NewKeyRing(core.Key{ID: "k", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.Start(gateway.Config{Auth: ring}, addr)
		if err != nil {
			t.Fatal(err)
		}
		return gw
	}
	const key = "reconnect-key-0123456789"
	gw := start(key)
	logs := &logRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: "http://" + addr, APIKey: key, Logger: slog.New(logs), ReconnectDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	_ = gw.Stop()
	logs.waitFor(t, "WARN disconnected from the gateway, reconnecting")

	gw = start("another-key-0123456789")
	line := logs.waitFor(t, "ERROR the gateway refused the connection, retrying")
	if !strings.Contains(line, "401") || strings.Contains(line, key) {
		t.Errorf("the error line does not carry the gateway's refusal (or carries the key): %s", line)
	}
	// Retried, each refusal logged: the backoff paces them, nothing gives up.
	testwait.Until(t, "a second refused attempt", func() bool {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		n := 0
		for _, l := range logs.lines {
			if strings.HasPrefix(l, "ERROR the gateway refused the connection, retrying") {
				n++
			}
		}
		return n >= 2
	})
	select {
	case <-c.Done():
		t.Fatalf("the client gave up: %v", c.Err())
	default:
	}
	_ = gw.Stop()
	gw = start(key)
	defer func() { _ = gw.Stop() }()
	logs.waitFor(t, "INFO re-joined after reconnect")
	if !c.Connected() {
		t.Error("not connected after the key was accepted again")
	}
}

// tcpProxy forwards loopback connections to a target; paused, it closes
// the connections it accepts at once, and cut closes those it carries: a
// link that drops and stays down until the test says.
type tcpProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	paused bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			paused := p.paused
			p.mu.Unlock()
			if paused {
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(up, c); up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *tcpProxy) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
}

func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A re-join the office refuses after a reconnect (while the client was
// away, a 0.3 agent took the office; the client speaks 0.4) is a warning
// with the gateway's reason and is tried again, paced, until the office
// takes it. It used to be tried once: the client stayed connected outside
// its office, serving nobody.
func TestRefusedRejoinIsRetried(t *testing.T) {
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, SIO: sio.Config{Protocols: []smcp.Version{smcp.V03, smcp.V04}}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()
	proxy := startProxy(t, strings.TrimPrefix(gw.URL, "http://"))
	logs := &logRecorder{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// WebSocket only: the session then lives and dies with the TCP
	// connection the proxy cuts (a polling session outlives it until the
	// gateway's ping timeout).
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: proxy.URL(), Version: smcp.V04.Full(), Logger: slog.New(logs), ReconnectDelay: 50 * time.Millisecond,
		Transports: sioclient.TransportsWebSocketOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	proxy.setPaused(true)
	proxy.cut()
	logs.waitFor(t, "WARN disconnected from the gateway, reconnecting")

	// The office is the 0.3 agent's once the gateway saw the computer go.
	ag, err := sioclient.Dial(ctx, sioclient.Options{URL: gw.URL, Version: smcp.V03.Full()})
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	testwait.Until(t, "the 0.3 agent in the office", func() bool { return ag.JoinOffice(ctx, smcp.RoleAgent, "bot", "o") == nil })

	proxy.setPaused(false)
	line := logs.waitFor(t, "WARN re-join after reconnect refused, retrying")
	if !strings.Contains(line, "office o speaks 0.3") {
		t.Errorf("the warning does not carry the gateway's reason: %s", line)
	}
	if err := ag.LeaveOffice(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, "INFO re-joined after reconnect")
}
