package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	p := &mcp.CallToolParams{Name: "pc__echo", Arguments: args}
	call := func(ctx context.Context, _ uint64) error {
		res, err := cs.CallTool(ctx, p)
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
// event stream, the answer read whole (it weighs the gateway's side without
// the go-sdk client's own cost on the shared machine).
type mcpRawCaller struct {
	url, key, agent, session string
	hc                       *http.Client
	prefix                   []byte // the request up to its id
	suffix                   []byte // after the id
}

func newMCPRawCaller(ctx context.Context, o Options, hc *http.Client, agentName, officeID string, params json.RawMessage) (*mcpRawCaller, error) {
	c := &mcpRawCaller{url: mcpEndpoint(o.URL, officeID), key: o.APIKey, agent: agentName, hc: hc}
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
	return c, nil
}

func (c *mcpRawCaller) call(ctx context.Context, seq uint64) error {
	body := make([]byte, 0, len(c.prefix)+len(c.suffix)+20)
	body = append(body, c.prefix...)
	body = strconv.AppendUint(body, seq, 10)
	body = append(body, c.suffix...)
	ans, err := c.post(ctx, body)
	if err != nil {
		return err
	}
	// A result with content and not a tool error (the echo's text is the
	// params, which hold neither marker).
	if !bytes.Contains(ans, []byte(`"result":`)) || !bytes.Contains(ans, []byte(`"content":`)) ||
		bytes.Contains(ans, []byte(`"isError":true`)) {
		return fmt.Errorf("loadtest: tools/call answered %.200s", ans)
	}
	return nil
}

// post sends one JSON-RPC message and returns the response body: a JSON
// object, or an event stream whose data carries the answer.
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
