package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// mcpProtocol is the MCP version the lean caller speaks.
const mcpProtocol = "2025-11-25"

// mcpEndpoint is an office's MCP endpoint on the gateway at base.
func mcpEndpoint(base, officeID string) string {
	return strings.TrimSuffix(base, "/") + "/mcp/" + officeID
}

// mcpHeaders adds the key and the agent name to every request of the
// go-sdk client.
type mcpHeaders struct {
	next       http.RoundTripper
	key, agent string
}

func (h mcpHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.key != "" {
		r.Header.Set("X-Api-Key", h.key)
	}
	r.Header.Set("X-Smcp-Agent", h.agent)
	return h.next.RoundTrip(r)
}

// stockMCPCaller is one MCP session of the office opened by the go-sdk
// client over streamable HTTP; every worker of the office calls
// tools/call "pc__echo" on it.
func stockMCPCaller(ctx context.Context, o Options, hc *http.Client, agentName, officeID string, params json.RawMessage) (caller, func(), error) {
	var args map[string]any
	if err := json.Unmarshal(params, &args); err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "smcp-bench", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:   mcpEndpoint(o.URL, officeID),
		HTTPClient: &http.Client{Transport: mcpHeaders{next: hc.Transport, key: o.APIKey, agent: agentName}},
		// The bench needs no server-to-client stream; it would only add a
		// long GET per session.
		DisableStandaloneSSE: true,
	}
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("loadtest: MCP session of %s: %w", officeID, err)
	}
	call := func(ctx context.Context, _ uint64) error {
		// Params per call: the go-sdk writes the request's _meta into them.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pc__echo", Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 1 {
			return errors.New("loadtest: the echo tool answered with an error")
		}
		return nil
	}
	return call, func() { _ = cs.Close() }, nil
}

// mcpRawCaller is an MCP client reduced to what a tools/call needs on an
// initialized session: one POST of a JSON-RPC request accepting JSON or an
// event stream, the answer read whole. The session is opened with net/http
// (initialize, notifications/initialized); the calls are written and parsed
// in place on HTTP/1.1 keep-alive connections of its own, one per call in
// flight, like connectCaller and the Socket.IO load client: net/http's
// client costs about as much CPU per call as the gateway's Socket.IO path,
// and on the shared machine that CPU is taken from the server measured.
type mcpRawCaller struct {
	url, key, agent, session string
	hc                       *http.Client
	prefix                   []byte // the request up to its id
	suffix                   []byte // after the id
	head                     []byte // request line and headers, up to Content-Length's value
	pool                     *connPool
}

func newMCPRawCaller(ctx context.Context, o Options, hc *http.Client, agentName, officeID string, params json.RawMessage) (*mcpRawCaller, error) {
	c := &mcpRawCaller{url: mcpEndpoint(o.URL, officeID), key: o.APIKey, agent: agentName, hc: hc}
	u, err := url.Parse(c.url)
	if err != nil {
		return nil, fmt.Errorf("loadtest: gateway URL: %w", err)
	}
	if c.pool, err = newConnPool(u, o.InFlight); err != nil {
		return nil, err
	}
	c.prefix = []byte(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"pc__echo","arguments":` + string(params) + `},"id":`)
	c.suffix = []byte(`}`)
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + mcpProtocol +
		`","capabilities":{},"clientInfo":{"name":"smcp-bench-raw","version":"1"}}}`
	if _, err := c.post(ctx, []byte(init)); err != nil {
		return nil, fmt.Errorf("loadtest: MCP initialize of %s: %w", officeID, err)
	}
	if c.session == "" {
		return nil, fmt.Errorf("loadtest: MCP initialize of %s: no Mcp-Session-Id", officeID)
	}
	if _, err := c.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return nil, fmt.Errorf("loadtest: MCP initialized of %s: %w", officeID, err)
	}
	head := "POST " + u.RequestURI() + " HTTP/1.1\r\n" +
		"Host: " + u.Host + "\r\n" +
		"Content-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\n" +
		"Mcp-Protocol-Version: " + mcpProtocol + "\r\n" +
		"Mcp-Session-Id: " + c.session + "\r\n" +
		"X-Smcp-Agent: " + agentName + "\r\n"
	if o.APIKey != "" {
		head += "X-Api-Key: " + o.APIKey + "\r\n"
	}
	c.head = []byte(head + "Content-Length: ")
	return c, nil
}

func (c *mcpRawCaller) call(ctx context.Context, seq uint64) error {
	hc, err := c.pool.get(ctx)
	if err != nil {
		return err
	}
	ans, reuse, err := c.roundTrip(ctx, hc, seq)
	// A result with content and not a tool error (the echo's text is the
	// params, which hold neither marker). Checked before hc, whose buffer
	// ans is, goes back to the pool.
	if err == nil && (!bytes.Contains(ans, []byte(`"result":`)) || !bytes.Contains(ans, []byte(`"content":`)) ||
		bytes.Contains(ans, []byte(`"isError":true`))) {
		err = fmt.Errorf("loadtest: tools/call answered %.200s", ans)
	}
	if reuse {
		c.pool.put(hc)
	} else {
		_ = hc.Close()
	}
	return err
}

// roundTrip posts tools/call number seq on hc and returns the answer's body
// (valid until hc's next use); reuse says whether hc can carry another.
func (c *mcpRawCaller) roundTrip(ctx context.Context, hc *httpConn, seq uint64) (answer []byte, reuse bool, err error) {
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := hc.SetDeadline(deadline); err != nil {
		return nil, false, err
	}
	hc.body = append(hc.body[:0], c.prefix...)
	hc.body = strconv.AppendUint(hc.body, seq, 10)
	hc.body = append(hc.body, c.suffix...)
	hc.req = append(append(hc.req[:0], c.head...), strconv.Itoa(len(hc.body))...)
	hc.req = append(append(hc.req, "\r\n\r\n"...), hc.body...)
	if _, err := hc.Write(hc.req); err != nil {
		return nil, false, fmt.Errorf("loadtest: write request: %w", err)
	}
	status, n, chunked, closing, err := readMCPResponseHead(hc.br)
	if err != nil {
		return nil, false, fmt.Errorf("loadtest: read response: %w", err)
	}
	if chunked {
		// An answer larger than net/http buffers before it sends the head.
		hc.body, err = io.ReadAll(httputil.NewChunkedReader(hc.br))
	} else {
		hc.body = slices.Grow(hc.body[:0], n)[:n]
		_, err = io.ReadFull(hc.br, hc.body)
	}
	if err != nil {
		return nil, false, fmt.Errorf("loadtest: read response body: %w", err)
	}
	if status != http.StatusOK {
		return nil, !closing, fmt.Errorf("loadtest: tools/call: HTTP %d: %.200s", status, hc.body)
	}
	return hc.body, !closing, nil
}

// readMCPResponseHead reads an HTTP/1.1 response head: its status, its body
// length or whether the body is chunked, and whether the server closes the
// connection after it.
func readMCPResponseHead(br *bufio.Reader) (status, length int, chunked, closing bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, false, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, 0, false, false, fmt.Errorf("bad status line %q", line)
	}
	length = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, 0, false, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, 0, false, false, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 || length > 64<<20 {
				return 0, 0, false, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return 0, 0, false, false, fmt.Errorf("unexpected Transfer-Encoding %q", value)
			}
			chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	if length < 0 && !chunked {
		return 0, 0, false, false, errors.New("response without Content-Length")
	}
	return status, length, chunked, closing, nil
}

// close closes the idle connections, and those calls in flight return, then
// ends the MCP session as a client should (DELETE), so that the gateway's
// figures after the run are not those of sessions left to time out.
func (c *mcpRawCaller) close() {
	c.pool.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Protocol-Version", mcpProtocol)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("X-Smcp-Agent", c.agent)
	if c.key != "" {
		req.Header.Set("X-Api-Key", c.key)
	}
	if resp, err := c.hc.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

// post sends one JSON-RPC message with net/http (the session's opening) and
// returns the response body: a JSON object, or an event stream whose data
// carries the answer.
func (c *mcpRawCaller) post(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcpProtocol)
	req.Header.Set("X-Smcp-Agent", c.agent)
	if c.key != "" {
		req.Header.Set("X-Api-Key", c.key)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, b)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	return b, nil
}

// mcpHTTPClient carries an MCP run's requests: keep-alive HTTP/1.1, one
// connection per call in flight.
func mcpHTTPClient(o Options) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Offices * o.InFlight, MaxIdleConns: o.Offices*o.InFlight + 16, DisableCompression: true}}
}
