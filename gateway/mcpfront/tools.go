package mcpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// annotationKey is the SMCPTool meta key holding the MCP tool annotations as
// a JSON string.
const annotationKey = "MCP_TOOL_ANNOTATION"

// wireTool is an SMCPTool as a computer sends it; the schemas stay raw so
// that they reach the MCP client byte for byte.
type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	ParamsSchema json.RawMessage `json:"params_schema"`
	ReturnSchema json.RawMessage `json:"return_schema"`
	Meta         map[string]any  `json:"meta"`
	// Title and Icons are not SMCPTool fields of profiles 0.2-0.4; a
	// computer that sends them (an MCP tool's own, 2025-06-18 and later)
	// has them carried over.
	Title string          `json:"title"`
	Icons json.RawMessage `json:"icons"`
}

// syncTools lists a computer's tools and makes the session's server hold
// exactly them; the go-sdk tells the client (tools/list_changed) when
// anything changed. In an office of one computer (0.5) the tools are named
// as the computer lists them (BareToolName): a rebind keeps their names.
func (x *session) syncTools(ctx context.Context, computer string) {
	raw, err := x.syncRequest(ctx, smcp.EventGetTools, map[string]any{"computer": computer})
	if err != nil {
		x.listFailed("list tools", computer, err)
		return
	}
	bare, err := x.oneComputer(ctx)
	if err != nil {
		x.listFailed("list tools", computer, err)
		return
	}
	var ret struct {
		Tools []wireTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &ret); err != nil {
		x.log.Warn("list tools: malformed answer", "computer", computer, "err", err)
		return
	}
	next := map[string]*mcp.Tool{}
	tools := map[string]string{} // MCP name -> the computer's name of the tool
	for _, wt := range ret.Tools {
		t, err := toMCPTool(computer, wt)
		if err != nil {
			x.log.Warn("tool not offered", "computer", computer, "tool", wt.Name, "err", err)
			continue
		}
		if bare {
			t.Name = BareToolName(wt.Name)
		}
		next[t.Name] = t
		tools[t.Name] = wt.Name
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.viewLocked(computer)
	if c == nil {
		return
	}
	var gone []string
	for name := range c.tools {
		if next[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		x.server.RemoveTools(gone...)
		for _, name := range gone {
			delete(c.tools, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(next)) {
		t := next[name]
		b, _ := json.Marshal(t)
		if old, ok := c.tools[name]; ok && bytes.Equal(old, b) {
			continue
		}
		tool := tools[name]
		if err := addTool(x.server, t, x.callTool(computer, tool)); err != nil {
			x.log.Warn("tool not offered", "computer", computer, "tool", tool, "err", err)
			continue
		}
		c.tools[name] = b
	}
}

// oneComputer reports whether the session's office speaks a profile of one
// computer per office (0.5), read from the registry.
func (x *session) oneComputer(ctx context.Context) (bool, error) {
	v, err := x.front.hub.OfficeVersion(ctx, x.principal, x.office)
	if err != nil {
		return false, err
	}
	p, ok := smcp.LookupProfile(v)
	return ok && p.SeatPerRole(), nil
}

// addTool adds t, turning the go-sdk's panics on a tool it cannot serve into
// an error: a computer's malformed tool must not take the gateway down.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("refused by the MCP server: %v", r)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// toMCPTool converts an SMCPTool: name prefixed with the computer,
// description, input and output schemas, annotations from the
// MCP_TOOL_ANNOTATION meta key, the other meta keys as _meta.
func toMCPTool(computer string, wt wireTool) (*mcp.Tool, error) {
	if wt.Name == "" {
		return nil, fmt.Errorf("tool without a name")
	}
	t := &mcp.Tool{Name: ToolName(computer, wt.Name), Description: wt.Description}
	in, err := objectSchema(wt.ParamsSchema)
	if err != nil {
		return nil, fmt.Errorf("params_schema: %w", err)
	}
	t.InputSchema = in
	if out := bytes.TrimSpace(wt.ReturnSchema); len(out) > 0 && !bytes.Equal(out, []byte("null")) {
		// MCP requires an object-typed output schema; another one is not
		// carried, since clients would then refuse every result.
		if s, err := objectSchema(out); err == nil && hasObjectType(out) {
			t.OutputSchema = s
		}
	}
	meta := mcp.Meta{"a2c_computer": computer, "a2c_tool": wt.Name}
	for k, v := range wt.Meta {
		if k == annotationKey {
			s, ok := v.(string)
			var a mcp.ToolAnnotations
			if ok && json.Unmarshal([]byte(s), &a) == nil {
				t.Annotations = &a
				t.Title = a.Title
			}
			continue
		}
		meta[k] = v
	}
	t.Meta = meta
	if wt.Title != "" {
		t.Title = wt.Title // the tool's own title before its annotations'
	}
	if !isNull(wt.Icons) {
		// Icons a client could not read are left out, not the tool.
		var icons []mcp.Icon
		if json.Unmarshal(wt.Icons, &icons) == nil {
			t.Icons = icons
		}
	}
	return t, nil
}

func hasObjectType(schema []byte) bool {
	var m struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &m) == nil && m.Type == "object"
}

// objectSchema returns a JSON Schema object for an MCP inputSchema: a
// missing schema accepts any object, a schema without "type" gets
// "type":"object", another type is refused.
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	typ, ok := m["type"]
	if !ok {
		m["type"] = json.RawMessage(`"object"`)
		b, err := json.Marshal(m)
		return b, err
	}
	if !bytes.Equal(bytes.TrimSpace(typ), []byte(`"object"`)) {
		return nil, fmt.Errorf("type is %s, not \"object\"", typ)
	}
	return raw, nil
}

// callTool is the handler of one computer's tool: a client:tool_call whose
// timeout is the call's own deadline (DefaultToolTimeout without one). When
// the MCP client cancels the call (or goes away), the computer is told with
// server:tool_call_cancel and cancels its own MCP call.
func (x *session) callTool(computer, tool string) mcp.ToolHandler {
	// The arguments are spliced in as the go-sdk read them (valid JSON);
	// the core's check refuses anything but an object.
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := bytes.TrimSpace(req.Params.Arguments)
		if len(args) == 0 || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		timeout := x.front.opts.DefaultToolTimeout
		if dl, ok := ctx.Deadline(); ok {
			timeout = time.Until(dl)
		}
		secs := min(max(int64(math.Ceil(timeout.Seconds())), smcp.MinToolCallTimeout), smcp.MaxToolCallTimeout)
		st, err := x.seat(ctx)
		if err != nil {
			return nil, mcpError(err, false)
		}
		reqID := x.front.newReqID()
		r, err := toolCallRequest(st.agent, reqID, computer, tool, int32(secs), args)
		if err != nil {
			return nil, mcpError(err, false)
		}
		// The call also ends with its session (x.ctx), and is then
		// cancelled at its computer (see the DELETE in Server.ServeHTTP).
		raw, err := x.routeRequest(ctx, st, r)
		if err != nil {
			if cerr := x.ended(ctx); cerr != nil {
				if cerr := st.lease.CancelToolCall(&smcpv1.AgentCallData{Agent: st.agent, ReqId: reqID}); cerr != nil {
					x.log.Warn("cancel abandoned tool call", "computer", computer, "req_id", reqID, "err", cerr)
				}
				return nil, cerr
			}
			if errors.Is(err, core.ErrRefused) && !tooMany(err) {
				return refusedResult(err), nil
			}
			// A quota's refusal is the request's, not the tool's: an
			// error the POST answers with 429 (errorStatus).
			return nil, mcpError(err, false)
		}
		if bytes.Contains(raw, []byte("a2c_blob_handle")) {
			// Each read of a blob ends with ctx or the session, as the
			// call did (routeRequest): no context of its own to end with
			// both.
			if raw, err = x.fillBlobs(ctx, computer, raw); err != nil {
				if cerr := x.ended(ctx); cerr != nil {
					return nil, cerr
				}
				return nil, mcpError(err, false)
			}
		}
		return toolResult(raw)
	}
}

// tooMany reports a refusal for too many calls (429: a quota).
func tooMany(err error) bool {
	e, ok := smcp.AsError(err)
	return ok && e.Code == core.CodeTooManyPending
}

// refusedResult answers a tools/call the gateway's governance refused (a
// rule; a required audit that cannot write) as MCP answers a tool that
// failed: an error result the model can read, whose _meta carries the SMCP
// code (403, 503) and details.
func refusedResult(err error) *mcp.CallToolResult {
	e, _ := smcp.AsError(err)
	meta := mcp.Meta{smcp.MetaErrorCode: e.Code}
	if len(e.Details) > 0 {
		meta["a2c_error_details"] = e.Details
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: e.Message}}, Meta: meta}
}

// toolCallRequest is the client:tool_call of an MCP tools/call: the payload
// the computer gets, and its request made from the fields the payload is
// written from (core.NewToolCallRequest). args is JSON the go-sdk has
// read; arguments that are not an object take core.ParseRequest, for its
// refusal.
func toolCallRequest(agent, reqID, computer, tool string, secs int32, args json.RawMessage) (*core.Request, error) {
	payload, err := smcp.ToolCallPayload(&smcpv1.ToolCallReq{Agent: agent, ReqId: reqID, Computer: computer,
		ToolName: tool, Timeout: secs}, args)
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
	}
	if args[0] != '{' {
		return core.ParseRequest(smcp.EventToolCall, payload)
	}
	return core.NewToolCallRequest(agent, reqID, computer, tool, secs, payload)
}

// toolResult makes the MCP answer of a tools/call from the CallToolResult the
// computer (or the gateway, for a timeout or a computer gone) sent. An answer
// already in MCP's shape is relayed as it is (mcp.RawCallToolResult; the
// go-sdk only compacts its white space): annotations, unknown members and
// member order reach the client unchanged, and nothing is decoded and
// encoded again, which was the front end's largest own cost per call. SMCP
// spells the result's metadata "meta", MCP "_meta": an answer with "meta"
// alone has that one key renamed in place; one with both, or without
// "content", is decoded and made anew (fullToolResult). A malformed answer
// is an error of that call.
func toolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var (
		content, meta, smcpMeta json.RawMessage
		hasMeta, isError        bool
	)
	err := smcp.ObjectFields(raw, func(key string, v json.RawMessage) error {
		switch key {
		case "content":
			content = v
		case "isError":
			switch string(v) {
			case "true":
				isError = true
			case "false", "null":
			default:
				return fmt.Errorf("isError is %.20s, not a boolean", v)
			}
		case "_meta", "meta":
			if !isNull(v) && v[0] != '{' {
				// A copy of key: the key itself stays in the caller's
				// frame (no allocation per field).
				return fmt.Errorf("%s is %.20s, not an object", strings.Clone(key), v)
			}
			if key == "_meta" {
				meta, hasMeta = v, true
			} else {
				smcpMeta = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, malformedResult(err)
	}
	if isNull(content) || (smcpMeta != nil && hasMeta) {
		return fullToolResult(raw, meta, smcpMeta)
	}
	// Split into an array of the frame's: an answer has a few items.
	var buf [8]json.RawMessage
	items, err := smcp.AppendArray(buf[:0], content)
	if err != nil {
		return nil, malformedResult(fmt.Errorf("content: %w", err))
	}
	for i, c := range items {
		if err := checkContent(c); err != nil {
			return nil, malformedResult(fmt.Errorf("content %d: %w", i, err))
		}
	}
	if smcpMeta != nil {
		renamed := smcp.RenameKey(raw, "meta", "_meta")
		if renamed == nil {
			return fullToolResult(raw, meta, smcpMeta)
		}
		raw = renamed
	}
	return mcp.RawCallToolResult(raw, isError), nil
}

// checkContent refuses a content item that is not an object of a kind MCP
// knows, which a client would refuse as a malformed answer.
func checkContent(c json.RawMessage) error {
	var typ string
	err := smcp.ObjectFields(c, func(key string, v json.RawMessage) error {
		if key != "type" {
			return nil
		}
		if len(v) == 0 || v[0] != '"' {
			return fmt.Errorf("type is %.20s, not a string", v)
		}
		var err error
		typ, err = smcp.RawString(v)
		return err
	})
	if err != nil {
		return err
	}
	switch typ {
	case "text", "image", "audio", "resource_link", "resource": // MCP's kinds
		return nil
	}
	return fmt.Errorf("unknown content type %q", typ)
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

func malformedResult(err error) error {
	return mcpError(smcp.Errorf(smcp.CodeInternal, "malformed tool result: %v", err), false)
}

// fullToolResult decodes a result that cannot be relayed as it is with the
// go-sdk's own decoder, and takes its metadata from "_meta", or from SMCP's
// "meta" when "_meta" is empty.
func fullToolResult(raw, meta, smcpMeta json.RawMessage) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, malformedResult(err)
	}
	res.Meta = nil
	for _, m := range []json.RawMessage{meta, smcpMeta} {
		if res.Meta == nil && !isNull(m) && string(m) != "{}" {
			if err := json.Unmarshal(m, &res.Meta); err != nil {
				return nil, malformedResult(err)
			}
		}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return &res, nil
}
