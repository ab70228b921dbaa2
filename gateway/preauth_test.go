package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

const preauthKey = "k-preauth-0123456789"

func keyedGateway(t *testing.T, cfg gateway.Config) *gateway.Running {
	t.Helper()
	ring, err := core.NewKeyRing(core.Key{Key: preauthKey, ID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = ring
	return startGateway(t, cfg)
}

func wsURL(base string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/socket.io/?EIO=4&transport=websocket"
}

// flatRefusal reads a refusal's body: a flat {"code","message"} error.
func flatRefusal(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("refusal body %q is not a flat error: %v", b, err)
	}
	return e.Code, e.Message
}

// Socket.IO handshakes, WebSocket and polling, are checked against the
// allowed origins (--cors-origins): a page of another origin is refused with
// a flat 403; the gateway's own origin, listed origins and clients that send
// no Origin (every non-browser client) pass.
func TestSocketIOOriginCheck(t *testing.T) {
	g := startGateway(t, gateway.Config{RPC: rpc.Options{CORSOrigins: []string{"https://app.example.com", "https://*.example.org"}}})
	host := strings.TrimPrefix(g.URL, "http://")
	allowed := []string{"", "http://" + host, "https://app.example.com", "https://team.example.org"}
	refused := []string{"https://evil.example", "http://localhost:1", "null", "https://app.example.com.evil.example"}

	for _, origin := range allowed {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := ws.DefaultDialer.Dial(wsURL(g.URL), h)
		if err != nil {
			t.Fatalf("WebSocket with Origin %q refused: %v (%v)", origin, err, resp)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, open, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(open), "0{") {
			t.Fatalf("WebSocket with Origin %q: open %q %v", origin, open, err)
		}
		_ = c.Close()

		req, _ := http.NewRequest(http.MethodGet, g.URL+"/socket.io/?EIO=4&transport=polling", nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err = pollingClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "0{") {
			t.Fatalf("polling with Origin %q: %d %q", origin, resp.StatusCode, b)
		}
	}

	for _, origin := range refused {
		_, resp, err := ws.DefaultDialer.Dial(wsURL(g.URL), http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("WebSocket with Origin %q: %v, %v; want 403", origin, err, resp)
		}
		code, msg := flatRefusal(t, resp)
		_ = resp.Body.Close()
		if code != 403 || !strings.Contains(msg, origin) || !strings.Contains(msg, "not allowed") {
			t.Fatalf("WebSocket with Origin %q: refusal %d %q", origin, code, msg)
		}

		req, _ := http.NewRequest(http.MethodGet, g.URL+"/socket.io/?EIO=4&transport=polling", nil)
		req.Header.Set("Origin", origin)
		resp, err = pollingClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		code, _ = flatRefusal(t, resp)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || code != 403 {
			t.Fatalf("polling with Origin %q: %d (code %d), want 403", origin, resp.StatusCode, code)
		}
	}

	// "*" lets every origin in.
	open := startGateway(t, gateway.Config{RPC: rpc.Options{CORSOrigins: []string{"*"}}})
	c, _, err := ws.DefaultDialer.Dial(wsURL(open.URL), http.Header{"Origin": {"https://evil.example"}})
	if err != nil {
		t.Fatalf("with \"*\": %v", err)
	}
	_ = c.Close()
}

// rawHandshake opens an Engine.IO WebSocket session and reads its OPEN.
func rawHandshake(t *testing.T, base string) (*ws.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := ws.DefaultDialer.Dial(wsURL(base), nil)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, open, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(open), "0{") {
		t.Fatalf("open: %q %v", open, err)
	}
	return c, resp, nil
}

// readSIO reads the next Engine.IO message that is not a ping, answering
// pings so that the session is not closed for silence.
func readSIO(c *ws.Conn) (string, error) {
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			return "", err
		}
		if string(msg) == "2" {
			_ = c.WriteMessage(ws.TextMessage, []byte("3"))
			continue
		}
		return string(msg), nil
	}
}

// Before its namespace CONNECT is authenticated a Socket.IO connection may
// send only small frames (a larger one closes it, unread), a client address
// holds a bounded number of such sessions (more handshakes get a flat 429),
// and one that does not authenticate in time is closed. Authenticated, the
// same connection sends frames up to the configured limit, and its slot is
// free again.
func TestUnauthenticatedSocketIOSessions(t *testing.T) {
	const limit = 3
	g := keyedGateway(t, gateway.Config{MaxUnauthenticatedPerAddr: limit, AuthTimeout: time.Second})

	// Sessions that never authenticate: the address's limit, then 429.
	waiting := make([]*ws.Conn, 0, limit)
	for range limit {
		c, _, err := rawHandshake(t, g.URL)
		if err != nil {
			t.Fatal(err)
		}
		// The main namespace needs no key, so that socket.io's own
		// timeout for connections without a namespace does not apply.
		_ = c.WriteMessage(ws.TextMessage, []byte("40"))
		waiting = append(waiting, c)
	}
	_, resp, err := ws.DefaultDialer.Dial(wsURL(g.URL), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("handshake beyond the limit: %v %v, want 429", err, resp)
	}
	if code, msg := flatRefusal(t, resp); code != 429 || !strings.Contains(msg, "not authenticated") {
		t.Fatalf("refusal %d %q", code, msg)
	}
	_ = resp.Body.Close()

	// Each is closed at the auth timeout, and the slots come back.
	for i, c := range waiting {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			if _, err := readSIO(c); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("session %d not closed 30 s after its 1 s auth timeout", i)
				}
				break
			}
		}
	}

	// An authenticated session: its frames may now be as large as the
	// message limit, and it is not closed at the auth timeout.
	c, _, err := rawHandshake(t, g.URL)
	if err != nil {
		t.Fatalf("handshake after the slots came back: %v", err)
	}
	_ = c.WriteMessage(ws.TextMessage, []byte(`40/smcp,{"api_key":"`+preauthKey+`"}`))
	if m, err := readSIO(c); err != nil || !strings.HasPrefix(m, "40/smcp,") {
		t.Fatalf("connect: %q %v", m, err)
	}
	time.Sleep(1500 * time.Millisecond) // past the auth timeout: must not matter now
	big := strings.Repeat("y", 256<<10)
	_ = c.WriteMessage(ws.TextMessage, []byte(`42/smcp,1["no:such_event",{"x":"`+big+`"}]`))
	if m, err := readSIO(c); err != nil || !strings.HasPrefix(m, "43/smcp,1") {
		t.Fatalf("a 256 KiB event once authenticated: %q %v", m, err)
	}
	// Authenticated sessions hold no slot: the limit's worth of new
	// handshakes is admitted beside it.
	fresh := make([]*ws.Conn, 0, limit)
	for range limit {
		c, _, err := rawHandshake(t, g.URL)
		if err != nil {
			t.Fatalf("handshake beside an authenticated session: %v", err)
		}
		fresh = append(fresh, c)
	}

	// A frame above the small limit before CONNECT closes the connection,
	// unread.
	c = fresh[0]
	_ = c.WriteMessage(ws.TextMessage, []byte(`40/smcp,{"api_key":"`+strings.Repeat("x", 64<<10)+`"}`))
	if _, err := readSIO(c); err == nil {
		t.Fatal("a 64 KiB frame before authenticating was read")
	} else if ce := (*ws.CloseError)(nil); errors.As(err, &ce) && ce.Code != ws.CloseMessageTooBig {
		t.Fatalf("closed with %v, want 1009", err)
	}
}

// httpExchange sends a request on c and reads the answer's status line;
// "" when the connection was closed without one.
func httpExchange(c net.Conn, br *bufio.Reader, req string) string {
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return ""
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return ""
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.Status
}

const (
	healthz  = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
	keyedRPC = "POST /smcp.v1.AgentService/ListRoom HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nx-api-key: " +
		preauthKey + "\r\nContent-Length: 2\r\n\r\n{}"
)

// HTTP connections that have not carried an authenticated request are
// bounded per client address: beyond the bound they are closed at accept.
// A connection that authenticates (here a Connect call with the key) gives
// its slot back.
func TestUnauthenticatedConnectionsPerAddress(t *testing.T) {
	const limit = 3
	g := keyedGateway(t, gateway.Config{MaxUnauthenticatedPerAddr: limit, AuthTimeout: time.Minute})
	addr := strings.TrimPrefix(g.URL, "http://")
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, bufio.NewReader(c)
	}
	held := make([]net.Conn, limit)
	readers := make([]*bufio.Reader, limit)
	for i := range limit {
		held[i], readers[i] = dial()
		if s := httpExchange(held[i], readers[i], healthz); !strings.HasPrefix(s, "200") {
			t.Fatalf("connection %d: %q", i, s)
		}
	}
	c, br := dial()
	if s := httpExchange(c, br, healthz); s != "" {
		t.Fatalf("connection beyond the limit answered %q, want closed", s)
	}
	// One of them authenticates: its slot is free for a new connection.
	if s := httpExchange(held[0], readers[0], keyedRPC); s == "" {
		t.Fatal("keyed call on a held connection: no answer")
	}
	ok := testwait.Poll(10*time.Second, func() bool {
		c, br := dial()
		return strings.HasPrefix(httpExchange(c, br, healthz), "200")
	})
	if !ok {
		t.Fatal("no connection admitted after one authenticated")
	}
	// The authenticated connection still serves.
	if s := httpExchange(held[0], readers[0], healthz); !strings.HasPrefix(s, "200") {
		t.Fatalf("authenticated connection: %q", s)
	}
}

// A keep-alive connection that has not carried an authenticated request is
// closed after the auth timeout, not the (longer) idle timeout; one that has
// keeps the idle timeout.
func TestUnauthenticatedConnectionsIdleBriefly(t *testing.T) {
	g := keyedGateway(t, gateway.Config{AuthTimeout: time.Second, IdleTimeout: 5 * time.Minute})
	addr := strings.TrimPrefix(g.URL, "http://")
	anon, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = anon.Close() }()
	keyed, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = keyed.Close() }()
	abr, kbr := bufio.NewReader(anon), bufio.NewReader(keyed)
	if s := httpExchange(anon, abr, healthz); !strings.HasPrefix(s, "200") {
		t.Fatalf("healthz: %q", s)
	}
	if s := httpExchange(keyed, kbr, keyedRPC); s == "" {
		t.Fatal("keyed call: no answer")
	}
	// The server closes the anonymous one: a read sees EOF well before the
	// client's own 30 s deadline.
	_ = anon.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := abr.ReadByte(); !errors.Is(err, io.EOF) && !strings.Contains(fmtErr(err), "reset") {
		t.Fatalf("anonymous keep-alive connection: read %v, want closed by the server", err)
	}
	// The keyed one is past the auth timeout too, and still served.
	if s := httpExchange(keyed, kbr, healthz); !strings.HasPrefix(s, "200") {
		t.Fatalf("authenticated keep-alive connection after the auth timeout: %q", s)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A request's headers are read before anyone is authenticated: they are
// bounded to 64 KiB (431), not net/http's 1 MiB.
func TestRequestHeadersBounded(t *testing.T) {
	g := keyedGateway(t, gateway.Config{})
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/healthz", nil)
	req.Header.Set("X-Filler", strings.Repeat("a", 100<<10))
	resp, err := pollingClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d, want 431", resp.StatusCode)
	}
	req.Header.Set("X-Filler", strings.Repeat("a", 16<<10))
	if resp, err = pollingClient.Do(req); err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("16 KiB of headers: %d", resp.StatusCode)
	}
}

// A request's body deadline set while its connection had not authenticated
// yet is brought forward to the auth timeout; once the request authenticates
// the body has its own (longer) time again. Without that, an HTTP/1.1
// upload on a fresh connection failed with an i/o timeout at the auth
// timeout (TestPutBlob under load, 10 s).
func TestAuthenticatedBodyKeepsItsDeadline(t *testing.T) {
	g := keyedGateway(t, gateway.Config{AuthTimeout: time.Second, BodyReadTimeout: time.Minute})
	c, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	head := "POST /smcp.v1.AgentService/ListRoom HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nx-api-key: " +
		preauthKey + "\r\nContent-Length: 3\r\n\r\n{"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past the auth timeout, inside the body's
	if _, err := io.WriteString(c, " }"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a body slower than the auth timeout, after its request authenticated: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	// ListRoom without an office: the body was read whole and judged.
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid_argument") {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}
