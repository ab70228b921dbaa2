package engine

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
)

const (
	testInitialLimit = 1 << 10
	testRaisedLimit  = 64 << 10
)

// limitServer is an engine whose connections start at testInitialLimit and
// are raised to testRaisedLimit by the message "raise", answered "raised"
// once raised (as a Socket.IO server raises it when a namespace CONNECT is
// authenticated, before its CONNECT ack). Every other message's length goes
// to got.
func limitServer(t *testing.T) (base string, got <-chan int) {
	t.Helper()
	opts := config.DefaultServerOptions()
	opts.SetMaxHttpBufferSize(testRaisedLimit)
	opts.SetInitialMaxHttpBufferSize(testInitialLimit)
	srv := NewServer(opts)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	lengths := make(chan int, 16)
	_ = srv.On("connection", func(a ...any) {
		sock := a[0].(Socket)
		_ = sock.On("message", func(a ...any) {
			data, _ := a[0].(types.BufferInterface)
			if data == nil {
				return
			}
			if data.String() == "raise" {
				sock.SetMaxHttpBufferSize(testRaisedLimit)
				sock.Send(strings.NewReader("raised"), nil, nil)
				return
			}
			lengths <- data.Len()
		})
	})
	return hs.URL + "/engine.io/", lengths
}

func dialWS(t *testing.T, url string) *ws.Conn {
	t.Helper()
	c, _, err := ws.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return c
}

// readWS returns the next message that is not a ping (answering pings).
func readWS(t *testing.T, c *ws.Conn) (string, error) {
	t.Helper()
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

// expectTooBig checks that the connection was closed for a frame over its
// limit: a close 1009, or a reset when the server's close overtook the
// rest of the frame the client was still writing.
func expectTooBig(t *testing.T, c *ws.Conn, what string) {
	t.Helper()
	_, err := readWS(t, c)
	var ce *ws.CloseError
	if errors.As(err, &ce) && ce.Code == ws.CloseMessageTooBig {
		return
	}
	if err != nil && !errors.As(err, &ce) && strings.Contains(err.Error(), "reset by peer") {
		return
	}
	t.Fatalf("%s: got %v, want close 1009", what, err)
}

func expectMessage(t *testing.T, got <-chan int, n int) {
	t.Helper()
	select {
	case m := <-got:
		if m != n {
			t.Fatalf("server got a message of %d bytes, sent %d", m, n)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the server never got the %d-byte message", n)
	}
}

func expectNoMessage(t *testing.T, got <-chan int) {
	t.Helper()
	select {
	case m := <-got:
		t.Fatalf("server handed on a message of %d bytes over its limit", m)
	default:
	}
}

// A WebSocket frame above a connection's initial limit closes it (1009)
// before its payload is read; once the socket raises its limit, messages up
// to the raised one pass and larger ones still close the connection.
func TestInitialLimitWebSocket(t *testing.T) {
	base, got := limitServer(t)

	c := dialWS(t, base+"?EIO=4&transport=websocket")
	open, err := readWS(t, c)
	if err != nil || !strings.HasPrefix(open, "0") {
		t.Fatalf("OPEN: %q, %v", open, err)
	}
	var hs struct {
		MaxPayload int64 `json:"maxPayload"`
	}
	if err := json.Unmarshal([]byte(open[1:]), &hs); err != nil || hs.MaxPayload != testRaisedLimit {
		// The client is told the limit it has once accepted.
		t.Fatalf("OPEN advertises maxPayload %d (%v), want %d", hs.MaxPayload, err, testRaisedLimit)
	}
	// A write error is the server's close arriving first.
	_ = c.WriteMessage(ws.TextMessage, []byte("4"+strings.Repeat("x", 4<<10)))
	expectTooBig(t, c, "a 4 KiB frame before the raise")
	expectNoMessage(t, got)

	c = dialWS(t, base+"?EIO=4&transport=websocket")
	if _, err := readWS(t, c); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteMessage(ws.TextMessage, []byte("4raise")); err != nil {
		t.Fatal(err)
	}
	if m, err := readWS(t, c); err != nil || m != "4raised" {
		t.Fatalf("raise: %q, %v", m, err)
	}
	n := 32 << 10
	if err := c.WriteMessage(ws.TextMessage, []byte("4"+strings.Repeat("x", n))); err != nil {
		t.Fatal(err)
	}
	expectMessage(t, got, n)
	_ = c.WriteMessage(ws.TextMessage, []byte("4"+strings.Repeat("x", testRaisedLimit)))
	expectTooBig(t, c, "a frame above the raised limit")
	expectNoMessage(t, got)
}

func pollingHandshake(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "?EIO=4&transport=polling")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var hs struct {
		Sid string `json:"sid"`
	}
	if !strings.HasPrefix(string(body), "0") || json.Unmarshal(body[1:], &hs) != nil || hs.Sid == "" {
		t.Fatalf("polling handshake: %s", body)
	}
	return hs.Sid
}

// post sends body to the session; chunked hides its length, as a client
// streaming its body does.
func post(t *testing.T, base, sid, body string, chunked bool) int {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if chunked {
		r = io.MultiReader(r) // not a type net/http knows the length of
	}
	resp, err := http.Post(base+"?EIO=4&transport=polling&sid="+sid, "text/plain;charset=UTF-8", r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// A polling body above the session's limit is refused with 413 whether or
// not it states its length (upstream handed on the first limit bytes of a
// chunked body as if they were all of it); the limit is the initial one
// until the socket raises it.
func TestInitialLimitPolling(t *testing.T) {
	base, got := limitServer(t)
	sid := pollingHandshake(t, base)
	big := "4" + strings.Repeat("x", 4<<10)
	for _, chunked := range []bool{false, true} {
		if code := post(t, base, sid, big, chunked); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("4 KiB body before the raise (chunked %v): %d, want 413", chunked, code)
		}
	}
	expectNoMessage(t, got)

	sid = pollingHandshake(t, base)
	if code := post(t, base, sid, "4raise", false); code != http.StatusOK {
		t.Fatalf("raise: %d", code)
	}
	for _, chunked := range []bool{false, true} {
		if code := post(t, base, sid, big, chunked); code != http.StatusOK {
			t.Fatalf("4 KiB body after the raise (chunked %v): %d", chunked, code)
		}
		expectMessage(t, got, 4<<10)
	}
	over := "4" + strings.Repeat("x", testRaisedLimit)
	if code := post(t, base, sid, over, true); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body above the raised limit: %d, want 413", code)
	}
	expectNoMessage(t, got)
}

// A WebSocket upgrading a raised polling session keeps the raised limit.
func TestRaisedLimitSurvivesUpgrade(t *testing.T) {
	base, got := limitServer(t)
	sid := pollingHandshake(t, base)
	if code := post(t, base, sid, "4raise", false); code != http.StatusOK {
		t.Fatalf("raise: %d", code)
	}
	c := dialWS(t, base+"?EIO=4&transport=websocket&sid="+sid)
	if err := c.WriteMessage(ws.TextMessage, []byte("2probe")); err != nil {
		t.Fatal(err)
	}
	if m, err := readWS(t, c); err != nil || m != "3probe" {
		t.Fatalf("probe: %q, %v", m, err)
	}
	if err := c.WriteMessage(ws.TextMessage, []byte("5")); err != nil {
		t.Fatal(err)
	}
	n := 32 << 10
	if err := c.WriteMessage(ws.TextMessage, []byte("4"+strings.Repeat("x", n))); err != nil {
		t.Fatal(err)
	}
	expectMessage(t, got, n)
}
