package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// handshake is what a gateway answered to the start of an Engine.IO session:
// connected (the namespace CONNECT was accepted), or the refusal's status,
// header and body, or the connect_error's data.
type handshake struct {
	connected    bool
	status       int
	code         string // X-A2C-Error-Code
	body         string // the 400's body, or the connect_error's data
	connectError bool
}

func (h handshake) String() string {
	switch {
	case h.connected:
		return "connected"
	case h.connectError:
		return "connect_error " + h.body
	}
	return fmt.Sprintf("%d %s %s", h.status, h.code, h.body)
}

// handshakePolling opens a session by long-polling, as the SDKs must, then
// sends the namespace CONNECT with key in auth.token.
func handshakePolling(t *testing.T, base, query, key string) handshake {
	t.Helper()
	u := base + "/socket.io/?EIO=4&transport=polling" + query
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		return handshake{status: resp.StatusCode, code: resp.Header.Get("X-A2C-Error-Code"), body: string(body)}
	}
	sid := between(string(body), `"sid":"`, `"`)
	if sid == "" {
		t.Fatalf("open packet %q", body)
	}
	u += "&sid=" + sid
	post, err := http.Post(u, "text/plain;charset=UTF-8", strings.NewReader(`40/smcp,{"token":"`+key+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = post.Body.Close()
	resp, err = http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return connectAnswer(t, string(body))
}

// handshakeWebSocket opens a session with a direct WebSocket upgrade (a
// WebSocket-only client).
func handshakeWebSocket(t *testing.T, base, query, key string) handshake {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/socket.io/?EIO=4&transport=websocket" + query
	c, resp, err := ws.DefaultDialer.Dial(u, nil)
	if err != nil {
		if resp == nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return handshake{status: resp.StatusCode, code: resp.Header.Get("X-A2C-Error-Code"), body: string(body)}
	}
	defer func() { _ = c.Close() }()
	if _, open, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(open, []byte("0{")) {
		t.Fatalf("open %q %v", open, err)
	}
	if err := c.WriteMessage(ws.TextMessage, []byte(`40/smcp,{"token":"`+key+`"}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return connectAnswer(t, string(msg))
}

func connectAnswer(t *testing.T, packet string) handshake {
	t.Helper()
	switch {
	case strings.HasPrefix(packet, `40/smcp,{"sid":`):
		return handshake{connected: true}
	case strings.HasPrefix(packet, `44/smcp,`):
		return handshake{connectError: true, body: strings.TrimPrefix(packet, `44/smcp,`)}
	}
	t.Fatalf("answer to CONNECT: %q", packet)
	return handshake{}
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return ""
}

// The handshake matrix of PROTOCOL-0.4.md §2, every row, run against
// gateways serving 0.2, 0.3, 0.4 and 0.5 alone (the rows shifted by their
// MINOR) and all three released ones on one path (the default, which does
// not serve the 0.5 draft: a 0.5 client gets 4008 naming 0.2-0.4), and all
// four, on long-polling and on WebSocket-only. A
// WebSocket-only client of a wrong version gets the very 400 a polling one
// gets, byte for byte, and is never admitted. The v1.0 rows (backward
// compatible minors) need a 1.x profile, which no version has yet: the
// rule is smcp.TestClientVersion's.
func TestHandshakeMatrix(t *testing.T) {
	t.Parallel()
	mismatch := func(server, client, lo, hi string, supported ...string) string {
		return fmt.Sprintf(`{"code":4008,"message":"Protocol version mismatch","server_version":"%s","client_version":"%s","min_supported":"%s","max_supported":"%s","details":{"supported":["%s"]}}`,
			server, client, lo, hi, strings.Join(supported, `","`))
	}
	const (
		missing = `{"code":400,"message":"Missing a2c_version query parameter"}`
		invalid = `{"code":400,"message":"Invalid a2c_version: abc"}`
		ok      = "connected"
	)
	type row struct {
		name, query string
		want        string // "connected" or the 400's body
	}
	single := func(v smcp.Version) []row {
		full, lo, hi := v.Full(), v.String()+".0", v.String()+".999"
		up := fmt.Sprintf("0.%d.0", v.Minor+1)
		down := fmt.Sprintf("0.%d.0", v.Minor-1)
		rows := []row{
			{"exact match", "&a2c_version=" + v.String() + ".0", ok},
			{"PATCH differs", "&a2c_version=" + v.String() + ".1", ok},
			{"MINOR differs", "&a2c_version=" + up, mismatch(full, up, lo, hi, v.String())},
			{"MINOR differs, reverse", "&a2c_version=" + down, mismatch(full, down, lo, hi, v.String())},
			{"MAJOR differs", "&a2c_version=1.0.0", mismatch(full, "1.0.0", lo, hi, v.String())},
			{"invalid", "&a2c_version=abc", invalid},
		}
		if v == smcp.V02 {
			rows = append(rows, row{"missing, 0.2 lenient", "", ok})
		} else {
			rows = append(rows, row{"missing", "", missing}, row{"empty", "&a2c_version=", missing})
		}
		return rows
	}
	all := []row{
		{"0.2", "&a2c_version=0.2.0", ok}, {"0.3", "&a2c_version=0.3.2", ok}, {"0.4", "&a2c_version=0.4.0", ok},
		{"missing: 0.2", "", ok},
		{"0.5", "&a2c_version=0.5.0", mismatch("0.4.0", "0.5.0", "0.2.0", "0.4.999", "0.2", "0.3", "0.4")},
		{"0.1", "&a2c_version=0.1.0", mismatch("0.4.0", "0.1.0", "0.2.0", "0.4.999", "0.2", "0.3", "0.4")},
		{"invalid", "&a2c_version=abc", invalid},
		{"two parts", "&a2c_version=0.4", `{"code":400,"message":"Invalid a2c_version: 0.4"}`},
	}
	for _, c := range []struct {
		name string
		sio  sio.Config
		rows []row
	}{
		{"0.2", sio.Config{Protocols: []smcp.Version{smcp.V02}}, single(smcp.V02)},
		{"0.2 required", sio.Config{Protocols: []smcp.Version{smcp.V02}, RequireVersion: true}, []row{{"missing", "", missing}}},
		{"0.3", sio.Config{Protocols: []smcp.Version{smcp.V03}}, single(smcp.V03)},
		{"0.4", sio.Config{Protocols: []smcp.Version{smcp.V04}}, single(smcp.V04)},
		{"all", sio.Config{}, all},
		{"0.5", sio.Config{Protocols: []smcp.Version{smcp.V05}}, single(smcp.V05)},
		{"all four", sio.Config{Protocols: []smcp.Version{smcp.V02, smcp.V03, smcp.V04, smcp.V05}}, []row{
			{"0.2", "&a2c_version=0.2.0", ok}, {"0.4", "&a2c_version=0.4.0", ok}, {"0.5", "&a2c_version=0.5.0", ok},
			{"0.6", "&a2c_version=0.6.0", mismatch("0.5.0", "0.6.0", "0.2.0", "0.5.999", "0.2", "0.3", "0.4", "0.5")},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := startGateway(t, gateway.Config{SIO: c.sio})
			for _, r := range c.rows {
				poll := handshakePolling(t, g.URL, r.query, "k")
				direct := handshakeWebSocket(t, g.URL, r.query, "k")
				if r.want == ok {
					if !poll.connected || !direct.connected {
						t.Errorf("%s: polling %v, WebSocket %v; want connected", r.name, poll, direct)
					}
					continue
				}
				want4008 := strings.HasPrefix(r.want, `{"code":4008`)
				for _, got := range []struct {
					how string
					h   handshake
				}{{"polling", poll}, {"WebSocket-only", direct}} {
					if got.h.status != 400 || got.h.body != r.want || (got.h.code == "4008") != want4008 {
						t.Errorf("%s over %s: %v\nwant 400 %s", r.name, got.how, got.h, r.want)
					}
				}
			}
		})
	}
}

// The version is checked before authentication (H7): with an authenticator
// that refuses everyone, a wrong version still gets its 400, and a right
// one gets as far as the connect handler's refusal.
func TestVersionCheckedBeforeAuthentication(t *testing.T) {
	ring, err := core.NewKeyRing(core.Key{Key: "the-only-key"})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring})
	for _, dial := range []func(*testing.T, string, string, string) handshake{handshakePolling, handshakeWebSocket} {
		if h := dial(t, g.URL, "&a2c_version=0.5.0", "wrong"); h.status != 400 || h.code != "4008" {
			t.Errorf("0.5.0 with a wrong key: %v", h)
		}
		if h := dial(t, g.URL, "&a2c_version=0.4.0", "wrong"); !h.connectError || !strings.Contains(h.body, `"code":401`) {
			t.Errorf("0.4.0 with a wrong key: %v", h)
		}
		if h := dial(t, g.URL, "&a2c_version=0.4.0", "the-only-key"); !h.connected {
			t.Errorf("0.4.0 with the key: %v", h)
		}
	}
}
