package interop

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
)

const invalidUTF8 = "\xff\xc3"

// TestInvalidUTF8LeavesNodePeersConnected is issue 22's case: invalid UTF-8
// from an agent over Socket.IO, Connect and MCP is refused (400) and never
// relayed to the office's Node computer, and a computer's invalid answer
// fails the Node agent's call and is never relayed to it; the Node computer
// and agent (socket.io-client over WebSocket, which fails the connection on
// a text frame that is not UTF-8) stay connected throughout and answer and
// call afterwards.
func TestInvalidUTF8LeavesNodePeersConnected(t *testing.T) {
	dir := nodetest.Require(t, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Stop() }()

	// go-pc, in the Node agent's office, answers bad-answer and get_config
	// with invalid UTF-8.
	pc := dialRawSIO(t, g.URL, func(frame []byte) string {
		switch {
		case bytes.Contains(frame, []byte(`"bad-answer"`)):
			return `{"content":[{"type":"text","text":"` + invalidUTF8 + `"}],"isError":false}`
		case bytes.HasPrefix(frame, []byte(`["client:get_config"`)):
			return `{"servers":{"` + invalidUTF8 + `":{}},"inputs":[]}`
		}
		return `{"content":[{"type":"text","text":"go-pc"}],"isError":false}`
	})
	pc.join(t, "computer", "go-pc", "utf8-agent")

	node := exec.CommandContext(ctx, "node", "utf8.mjs")
	node.Dir = dir
	node.WaitDelay = 5 * time.Second
	node.Env = append(os.Environ(), "SMCP_URL="+g.URL, "SMCP_OFFICE=utf8", "SMCP_AGENT_OFFICE=utf8-agent")
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	node.Stderr = &stderr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = node.Wait()
		t.Fatalf("node: %q\n%s", lines.Text(), stderr.Bytes())
	}

	// Socket.IO: a raw agent (a library client would not send the bytes).
	ag := dialRawSIO(t, g.URL, nil)
	ag.join(t, "agent", "raw-agent", "utf8")
	call := func(params string) string {
		return `{"agent":"raw-agent","req_id":"r","computer":"node-pc","tool_name":"echo","params":` + params + `,"timeout":10}`
	}
	if got := ag.emit(t, "client:tool_call", call(`{"s":"`+invalidUTF8+`"}`)); !strings.HasPrefix(got, `[{"code":400,`) || !strings.Contains(got, "invalid UTF-8") {
		t.Errorf("Socket.IO: %q, want a flat 400 naming invalid UTF-8", got)
	}
	if got := ag.emit(t, "client:tool_call", call(`{"s":"é"}`)); !strings.Contains(got, `node-pc:{\"s\":\"é\"}`) {
		t.Errorf("Socket.IO call after the refusal: %s", got)
	}
	if got := ag.emit(t, "server:leave_office", `{"office_id":"utf8"}`); got != "[true,null]" {
		t.Fatalf("leave: %s", got)
	}

	// Connect.
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, g.URL)
	_, err = cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "utf8", Computer: "node-pc", ToolName: "echo", Timeout: 10,
		ParamsJson: []byte(`{"s":"` + invalidUTF8 + `"}`)})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "invalid UTF-8") {
		t.Errorf("Connect: %v, want InvalidArgument naming invalid UTF-8", err)
	}
	res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "utf8", Computer: "node-pc", ToolName: "echo", Timeout: 10,
		ParamsJson: []byte(`{"s":"é"}`)})
	if err != nil || !strings.Contains(string(res.GetResultJson()), `node-pc:{\"s\":\"é\"}`) {
		t.Errorf("Connect call after the refusal: %v %v", res, err)
	}

	// MCP.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "utf8-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/utf8"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"node-pc__echo","arguments":{"s":"` + invalidUTF8 + `"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/mcp/utf8", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(answer), "invalid UTF-8") {
		t.Errorf("MCP: %d %s, want 400 naming invalid UTF-8", resp.StatusCode, answer)
	}
	mres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "node-pc__echo", Arguments: map[string]any{"s": "é"}})
	if err != nil || mres.IsError {
		t.Errorf("MCP call after the refusal: %+v %v", mres, err)
	} else if text, _ := mres.Content[0].(*mcp.TextContent); text == nil || text.Text != `node-pc:{"s":"é"}` {
		t.Errorf("MCP call after the refusal: %+v", mres.Content)
	}
	_ = cs.Close()

	// The Node side checks its agent's bad answers, that neither of its
	// sockets was disconnected, and makes one more call.
	if _, err := io.WriteString(stdin, "done\n"); err != nil {
		t.Errorf("node's stdin: %v", err) // node has exited: Wait says why
	}
	_ = stdin.Close() // else stdin keeps Node's event loop alive
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := node.Wait(); err != nil || strings.Join(rest, "\n") != "ok" {
		t.Fatalf("node: %v %q\n%s", err, rest, stderr.Bytes())
	}
}

// rawSIO is a Socket.IO client written frame by frame over a WebSocket,
// so that it can send bytes a library client would not.
type rawSIO struct {
	conn *ws.Conn
	wmu  sync.Mutex
	mu   sync.Mutex
	id   int
	acks map[string]chan string
	done chan struct{}
}

// dialRawSIO connects to namespace /smcp; answer, when set, answers every
// event that carries an ack id with its JSON (given the event's array).
func dialRawSIO(t *testing.T, base string, answer func(frame []byte) string) *rawSIO {
	t.Helper()
	c, _, err := ws.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/socket.io/?EIO=4&transport=websocket", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawSIO{conn: c, acks: map[string]chan string{}, done: make(chan struct{})}
	t.Cleanup(func() { _ = c.Close(); <-r.done })
	if _, open, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(open, []byte("0{")) {
		t.Fatalf("Engine.IO open: %q %v", open, err)
	}
	r.write("40/smcp,")
	if _, msg, err := c.ReadMessage(); err != nil || !bytes.HasPrefix(msg, []byte("40/smcp,")) {
		t.Fatalf("namespace connect: %q %v", msg, err)
	}
	go func() {
		defer close(r.done)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			switch {
			case string(msg) == "2":
				r.write("3")
			case bytes.HasPrefix(msg, []byte("43/smcp,")):
				id, body := splitID(msg[len("43/smcp,"):])
				r.mu.Lock()
				ch := r.acks[id]
				delete(r.acks, id)
				r.mu.Unlock()
				if ch != nil {
					ch <- string(body)
				}
			case bytes.HasPrefix(msg, []byte("42/smcp,")) && answer != nil:
				if id, body := splitID(msg[len("42/smcp,"):]); id != "" {
					r.write("43/smcp," + id + "[" + answer(body) + "]")
				}
			}
		}
	}()
	return r
}

func splitID(b []byte) (string, []byte) {
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return string(b[:i]), b[i:]
}

func (r *rawSIO) write(s string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.conn.WriteMessage(ws.TextMessage, []byte(s))
}

// emit sends event with one raw JSON argument and returns the ack's array.
func (r *rawSIO) emit(t *testing.T, event, arg string) string {
	t.Helper()
	r.mu.Lock()
	r.id++
	id := fmt.Sprint(r.id)
	ch := make(chan string, 1)
	r.acks[id] = ch
	r.mu.Unlock()
	r.write(fmt.Sprintf("42/smcp,%s[%q,%s]", id, event, arg))
	select {
	case got := <-ch:
		return got
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: no ack", event)
		return ""
	}
}

func (r *rawSIO) join(t *testing.T, role, name, office string) {
	t.Helper()
	if got := r.emit(t, "server:join_office", fmt.Sprintf(`{"role":%q,"name":%q,"office_id":%q}`, role, name, office)); got != "[true,null]" {
		t.Fatalf("join %s: %s", name, got)
	}
}
