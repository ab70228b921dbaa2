package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Guard is governance as a step of the core's admission: permissions,
// quotas and audit are decided here once, for every front end. With
// Config.Guard set, the core asks it about every routed request (tool
// calls, listings, desktop, finder, resources, skills, blobs, uploads)
// once its caller and computer are resolved and before the computer sees
// it, and tells it the outcome after. A front end never filters or counts
// on its own.
type Guard interface {
	// Admit decides whether c may go to its computer. A refusal is an
	// *smcp.Error, 403 for a rule and 429 with details.retry_after_ms for
	// a quota; the core answers it as it answers its own refusals (wrapped
	// so that errors.Is(err, ErrRefused)), and the computer never sees the
	// call. Otherwise done, when not nil, is called exactly once with how
	// the call ended.
	//
	// Admit runs on the caller's goroutine. On one node that may be the
	// goroutine that reads a connection's packets (Session.TryGo): it must
	// not wait there. In a cluster (Hub.SetPeers) TryGo leaves calls to
	// GoContext, so that Admit may wait on the network, bounded by ctx.
	// c and what it points to stay as they are until done is called (or
	// Admit refuses): the guard may read them then, and changes none.
	Admit(ctx context.Context, c *Call) (done func(Outcome), err error)
	// Visible reports whether a listing shows what c stands for to c's
	// caller: a tool of a get_tools answer (c is a client:tool_call without
	// arguments), a window of a get_desktop answer, a document of a
	// get_finder answer or a skill of a get_skills answer (c is a
	// client:read_resource of its URI, skill://{name} for a skill); whether
	// the rules would let it be called, without spending any quota.
	Visible(c *Call) bool
}

// Call is a routed request as a Guard sees it.
type Call struct {
	Principal *Principal
	// Front is the front end the caller came through: FrontSocketIO,
	// FrontRPC, FrontMCP or FrontConsole; Protocol the wire within it
	// (Seat.Protocol: "connect", "grpc", "grpcweb"; "" otherwise).
	Front, Protocol string
	Office, Agent   string
	Computer        string
	// Event is the client: event (smcp.EventToolCall, ...).
	Event string
	ReqID string
	// TraceID is Request.TraceID ("" when the front end set none: ctx of
	// Admit then carries the span, if any).
	TraceID string
	// Time is when the core came to admit the call, the start of its
	// Outcome.Duration (zero in a listing's Visible).
	Time time.Time
	// Tool is the tool of a client:tool_call, and the tool whose result
	// minted the blob of a client:get_blob when this node relayed it; nil
	// otherwise.
	Tool *ToolView
	// URI is the resource of the request: read_resource's uri, the window
	// of get_desktop ("window://" for the whole desktop), "dpe://" for the
	// finder, "skill://" for get_skills, "skill://{name}[/{rel_path}]" for
	// get_skill and for the blob of a skill.
	URI string
	// Bundle is the MCP server of a get_resources listing (its bundle id).
	Bundle string
	// Args are a tool call's arguments (the params object) as the agent
	// sent them; nil for other events.
	Args json.RawMessage
	// Payload is the whole request as it will be forwarded.
	Payload json.RawMessage
}

// ToolView is what the core knows of one of a computer's tools, from the
// computer's client:get_tools answer.
type ToolView struct {
	// Name is the tool as its computer names it, without the 0.3+ bundle
	// prefix: the MCP server's name of the tool, or its alias ("echo").
	Name string
	// Exposed is the name the computer lists and is called by: from 0.3
	// "{bundle_id}__{name}", in 0.2 the same as Name.
	Exposed string
	// BundleID is the owning MCP server (0.3+; "" in 0.2).
	BundleID string
	// Tags are the tags of the tool's ToolMeta.
	Tags []string
}

// Outcome is how an admitted call ended.
type Outcome struct {
	// Err is nil for a good answer, else why not: an *smcp.Error (the
	// computer's flat error, or the core's: 408 timeout, 404 computer
	// gone, 429 too many pending, ...), ctx's error when the caller gave
	// up (context.Canceled). A tool call answered with an isError
	// CallToolResult reports the error behind it (see gatewayResultError):
	// a timeout, a computer gone, the computer's a2c_error_code, an
	// agent's cancellation.
	Err      error
	Duration time.Duration
	// BytesIn is the request's size, BytesOut the answer's.
	BytesIn, BytesOut int64
	// Result is the answer as relayed to the caller (nil without one),
	// valid during the call of done only: for a digest, not to be kept.
	Result json.RawMessage
}

// ErrRefused is matched (errors.Is) by a refusal of the Config.Guard. The
// error is also the guard's *smcp.Error, for the wire.
var ErrRefused = errors.New("core: refused by the gateway's governance")

type refusedError struct{ wire *smcp.Error }

func (e refusedError) Error() string   { return e.wire.Error() }
func (e refusedError) Unwrap() []error { return []error{e.wire, ErrRefused} }

// refused wraps a guard's refusal; an error that is not an *smcp.Error is
// the guard's own failure, answered 500 without its text.
func (h *Hub) refused(c *Call, err error) error {
	e, ok := smcp.AsError(err)
	if !ok {
		h.log.Error("guard failed", "event", c.Event, "office", c.Office, "computer", c.Computer, "err", err)
		e = smcp.Errorf(smcp.CodeInternal, "internal error")
	}
	return refusedError{e}
}

// RetryAfter is how long a refusal asks its caller to wait
// (details.retry_after_ms of a 429), and whether it asks at all.
func RetryAfter(err error) (time.Duration, bool) {
	e, ok := smcp.AsError(err)
	if !ok || e.Code != CodeTooManyPending {
		return 0, false
	}
	switch v := e.Details["retry_after_ms"].(type) {
	case int:
		return time.Duration(v) * time.Millisecond, true
	case int64:
		return time.Duration(v) * time.Millisecond, true
	case float64:
		return time.Duration(v * float64(time.Millisecond)), true
	}
	return 0, false
}

// guardFields are the request fields a Call is made of beyond the
// routing fields.
type guardFields struct {
	toolName, uri, mcpServer, name, relPath, blobHandle string
	window                                              *string
	params                                              json.RawMessage
}

// guardFieldsOf are r's: a tool call's as ParseRequest read them, else
// read from its payload.
func guardFieldsOf(r *Request) (guardFields, error) {
	if r.Event != smcp.EventToolCall || r.toolName == nil {
		return readGuardFields(r.Event, r.Payload)
	}
	name, err := smcp.RawString(r.toolName)
	if err != nil {
		return guardFields{}, errors.New("tool_name must be a string")
	}
	return guardFields{toolName: name, params: r.params}, nil
}

// readGuardFields reads them from a payload ParseRequest checked, without
// decoding the rest (a tool's arguments, an upload's chunk).
func readGuardFields(event string, payload json.RawMessage) (guardFields, error) {
	var f guardFields
	if event == smcp.EventGetConfig || event == smcp.EventPutBlob {
		return f, nil // nothing of theirs is judged
	}
	err := smcp.ObjectKeys(payload, func(key []byte, v json.RawMessage) error {
		var dst *string
		switch string(key) {
		case "params":
			f.params = v
			return nil
		case "tool_name":
			dst = &f.toolName
		case "uri":
			dst = &f.uri
		case "mcp_server":
			dst = &f.mcpServer
		case "name":
			dst = &f.name
		case "rel_path":
			dst = &f.relPath
		case "blob_handle":
			dst = &f.blobHandle
		case "window":
			if string(v) == "null" {
				return nil
			}
			f.window = new(string)
			dst = f.window
		default:
			return nil
		}
		if string(v) == "null" {
			return nil
		}
		str, err := smcp.RawString(v)
		if err != nil {
			return fmt.Errorf("%s must be a string", key)
		}
		*dst = str
		return nil
	})
	return f, err
}

// admit asks the guard about r, routed to its computer in officeID. It returns the
// done the call is to be settled with: done itself, or done wrapped to
// report the outcome and to filter a tool listing. ok is false when the
// call needs the computer's tools and this node has not listed them
// (fetch is then false: TryGo declines) or when they could not be listed.
func (s *Session) admit(ctx context.Context, r *Request, officeID string, fetch bool,
	done func(json.RawMessage, error)) (func(json.RawMessage, error), bool, error) {
	h := s.hub
	c := &Call{Principal: s.principal, Front: s.front, Protocol: s.wire, Office: officeID, Agent: s.name,
		Computer: r.Computer, Event: r.Event, ReqID: r.ReqID, TraceID: r.TraceID, Payload: r.Payload, Time: r.Received}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	var gen uint64
	if r.Event == smcp.EventGetTools {
		gen = h.tools.generation(officeID, r.Computer)
	} else {
		f, err := guardFieldsOf(r)
		if err != nil {
			return nil, true, smcp.Errorf(smcp.CodeBadRequest, "%s: %v", r.Event, err)
		}
		switch r.Event {
		case smcp.EventToolCall:
			c.Args = f.params
			t, listed := h.tools.lookup(officeID, r.Computer, f.toolName)
			if !listed {
				if !fetch {
					return nil, false, nil
				}
				tools, err := s.listTools(ctx, officeID, r.Computer)
				if err != nil {
					return nil, true, err
				}
				t = &ToolView{Name: f.toolName, Exposed: f.toolName}
				for _, lt := range tools {
					if lt.view.Exposed == f.toolName {
						t = &lt.view // a copy: tools holds the listing's raw bytes
					}
				}
			}
			c.Tool = t
		case smcp.EventReadResource:
			c.URI = f.uri
		case smcp.EventGetDesktop:
			c.URI = "window://"
			if f.window != nil {
				c.URI = *f.window
			}
		case smcp.EventGetFinder:
			c.URI = "dpe://"
		case smcp.EventGetSkills:
			c.URI = "skill://"
		case smcp.EventGetSkill:
			c.URI = skillURI(f.name, f.relPath)
		case smcp.EventGetResources:
			c.Bundle = f.mcpServer
		case smcp.EventGetBlob:
			if o, ok := h.tools.blobOrigin(officeID, r.Computer, f.blobHandle); ok {
				c.Tool, c.URI = o.tool, o.uri
			}
		}
	}
	report, err := h.cfg.Guard.Admit(ctx, c)
	if err != nil {
		return nil, true, h.refused(c, err)
	}
	start := c.Time // one clock read for the guard's record and the duration
	in := int64(len(r.Payload))
	tool, uri := c.Tool, c.URI
	return func(raw json.RawMessage, err error) {
		if err == nil {
			raw = s.relayed(r, officeID, gen, tool, uri, raw)
		}
		if report != nil {
			cause := err
			if cause == nil {
				cause = gatewayResultError(r, raw)
			}
			report(Outcome{Err: cause, Duration: time.Since(start), BytesIn: in, BytesOut: int64(len(raw)), Result: raw})
		}
		done(raw, err)
	}, true, nil
}

// skillURI names a skill, or a file of it, for the guard.
func skillURI(name, rel string) string {
	if rel == "" || rel == "SKILL.md" {
		return "skill://" + name
	}
	return "skill://" + name + "/" + rel
}

// gatewayResultError is the error behind an isError CallToolResult: the
// gateway's own for a timeout or a computer gone, the computer's
// a2c_error_code (4001 tool not found, ...), context.Canceled for a call
// its agent cancelled; nil for another answer.
func gatewayResultError(r *Request, raw json.RawMessage) error {
	if !r.eventInfo().GatewayResults || len(raw) == 0 {
		return nil
	}
	if !mayBeErrorResult(raw) {
		return nil
	}
	// Scanned, not decoded: a result may carry megabytes of content.
	var isError bool
	var meta json.RawMessage
	err := smcp.ObjectKeys(raw, func(key []byte, v json.RawMessage) error {
		switch string(key) {
		case "isError":
			isError = string(v) == "true"
		case "meta":
			meta = v
		}
		return nil
	})
	if err != nil || !isError || len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	var out error
	_ = smcp.ObjectKeys(meta, func(key []byte, v json.RawMessage) error {
		switch {
		case string(key) == smcp.MetaTimeout && string(v) == "true":
			out = smcp.Errorf(smcp.CodeTimeout, "tool call timed out")
		case string(key) == smcp.MetaCancelled && string(v) == "true":
			out = context.Canceled
		case string(key) == smcp.MetaErrorCode && out == nil:
			if code, err := strconv.Atoi(string(v)); err == nil && code != 0 {
				out = smcp.Errorf(code, "tool call failed")
			}
		}
		return nil
	})
	return out
}

// mayBeErrorResult is false when raw cannot hold "isError": true: no
// true at all (a literal has no other spelling), or no "isError" followed
// by true and no \u escape (the only other way to write the key's
// letters). A substring search settles nearly every answer without walking
// its content; "maybe" is left to the walk.
func mayBeErrorResult(raw []byte) bool {
	if !bytes.Contains(raw, []byte("true")) {
		return false
	}
	if bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	key := []byte(`"isError"`)
	for rest := raw; ; {
		i := bytes.Index(rest, key)
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(key):], " \t\r\n")
		if v, ok := bytes.CutPrefix(rest, []byte(":")); ok && bytes.HasPrefix(bytes.TrimLeft(v, " \t\r\n"), []byte("true")) {
			return true
		}
	}
}

// relayed is what the caller gets of an answer relayed to it: a tool
// listing filtered by the guard (its tools recorded for the calls to come),
// the blob handles of a result recorded with their producer.
func (s *Session) relayed(r *Request, officeID string, gen uint64, tool *ToolView, uri string, raw json.RawMessage) json.RawMessage {
	h := s.hub
	switch r.Event {
	case smcp.EventGetTools:
		tools, err := parseTools(raw)
		if err != nil {
			return raw // the front end reports a malformed answer
		}
		h.tools.store(officeID, r.Computer, gen, tools)
		return s.filterTools(officeID, r.Computer, raw, tools)
	case smcp.EventGetDesktop:
		return s.filterResources(officeID, r.Computer, raw, "desktops", func(item json.RawMessage) string {
			var w string
			if json.Unmarshal(item, &w) != nil {
				return ""
			}
			uri, _, _ := strings.Cut(w, "\n\n") // "<uri>\n\n<text>"
			return uri
		})
	case smcp.EventGetFinder:
		return s.filterResources(officeID, r.Computer, raw, "documents", uriOf)
	case smcp.EventGetResources:
		return s.filterResources(officeID, r.Computer, raw, "resources", uriOf)
	case smcp.EventGetSkills:
		return s.filterResources(officeID, r.Computer, raw, "skills", func(item json.RawMessage) string {
			var sk struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(item, &sk)
			return skillURI(sk.Name, "")
		})
	case smcp.EventToolCall, smcp.EventGetSkill:
		if bytes.Contains(raw, []byte("blob_handle")) {
			h.tools.recordBlobs(officeID, r.Computer, raw, blobOrigin{tool: tool, uri: uri})
		}
	}
	return raw
}

// uriOf is the uri of a listed document or MCP resource.
func uriOf(item json.RawMessage) string {
	var d struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(item, &d)
	return d.URI
}

// listedTool is one tool of a get_tools answer.
type listedTool struct {
	view ToolView
	raw  json.RawMessage
}

func parseTools(raw json.RawMessage) ([]listedTool, error) {
	var ret struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &ret); err != nil {
		return nil, err
	}
	out := make([]listedTool, 0, len(ret.Tools))
	for _, t := range ret.Tools {
		var w struct {
			Name     string         `json:"name"`
			BundleID string         `json:"bundle_id"`
			Meta     map[string]any `json:"meta"`
		}
		if err := json.Unmarshal(t, &w); err != nil {
			return nil, err
		}
		v := ToolView{Name: w.Name, Exposed: w.Name, BundleID: w.BundleID}
		if w.BundleID != "" {
			// Not a split of the opaque name: the prefix is the bundle
			// id the computer states, "__" its separator (§5.1).
			if n, ok := strings.CutPrefix(w.Name, w.BundleID+"__"); ok {
				v.Name = n
			}
		}
		if s, ok := w.Meta[smcp.MetaToolMeta].(string); ok {
			var tm smcpv1.ToolMeta
			if err := json.Unmarshal([]byte(s), &tm); err == nil {
				v.Tags = tm.GetTags()
			}
		}
		out = append(out, listedTool{view: v, raw: t})
	}
	return out, nil
}

// filterTools is a get_tools answer without the tools the caller may not
// call.
func (s *Session) filterTools(officeID, computer string, raw json.RawMessage, tools []listedTool) json.RawMessage {
	keep := make([]json.RawMessage, 0, len(tools))
	for i := range tools {
		c := Call{Principal: s.principal, Front: s.front, Protocol: s.wire, Office: officeID, Agent: s.name,
			Computer: computer, Event: smcp.EventToolCall, Tool: &tools[i].view}
		if s.hub.cfg.Guard.Visible(&c) {
			keep = append(keep, tools[i].raw)
		}
	}
	if len(keep) == len(tools) {
		return raw
	}
	var ret map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ret); err != nil {
		return raw
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return raw
	}
	ret["tools"] = b
	out, err := json.Marshal(ret)
	if err != nil {
		return raw
	}
	return out
}

// filterResources is a desktop, finder or skills answer without the
// windows, documents or skills (the list under key) the caller may not
// read. (A finder's
// total_count still counts them.)
func (s *Session) filterResources(officeID, computer string, raw json.RawMessage, key string, uriOf func(json.RawMessage) string) json.RawMessage {
	var ret map[string]json.RawMessage
	if json.Unmarshal(raw, &ret) != nil {
		return raw
	}
	var items []json.RawMessage
	if json.Unmarshal(ret[key], &items) != nil {
		return raw
	}
	keep := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		c := Call{Principal: s.principal, Front: s.front, Protocol: s.wire, Office: officeID, Agent: s.name,
			Computer: computer, Event: smcp.EventReadResource, URI: uriOf(item)}
		if s.hub.cfg.Guard.Visible(&c) {
			keep = append(keep, item)
		}
	}
	if len(keep) == len(items) {
		return raw
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return raw
	}
	ret[key] = b
	out, err := json.Marshal(ret)
	if err != nil {
		return raw
	}
	return out
}

// listTools asks computer for its tools on the caller's behalf, for the
// guard to know the tool of a call: the answer is recorded (relayed) and
// not shown to anyone.
func (s *Session) listTools(ctx context.Context, officeID, computer string) ([]listedTool, error) {
	reqID := "gw-tools-" + strconv.FormatUint(s.hub.reqSeq.Add(1), 10)
	b, err := json.Marshal(map[string]any{"agent": s.name, "req_id": reqID, "computer": computer})
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeInternal, "list tools: %v", err)
	}
	r, err := ParseRequest(smcp.EventGetTools, b)
	if err != nil {
		return nil, err
	}
	r.unguarded = true
	gen := s.hub.tools.generation(officeID, computer)
	raw, err := s.Route(ctx, r)
	if err != nil {
		return nil, err
	}
	tools, err := parseTools(raw)
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeInternal, "computer %q: malformed tool list: %v", computer, err)
	}
	s.hub.tools.store(officeID, computer, gen, tools)
	return tools, nil
}

// Guards makes one Guard of several (rules, quotas, audit), asked in
// order: a call is admitted when every one admits it, and the guards
// that admitted a call a later one refused are told so (an Outcome whose
// Err is the refusal), so that an audit first in line records refusals.
// A listing shows what every guard shows.
func Guards(gs ...Guard) Guard {
	if len(gs) == 1 {
		return gs[0]
	}
	return guards(gs)
}

type guards []Guard

func (gs guards) Admit(ctx context.Context, c *Call) (func(Outcome), error) {
	var dones []func(Outcome)
	for _, g := range gs {
		done, err := g.Admit(ctx, c)
		if err != nil {
			for _, d := range dones {
				d(Outcome{Err: err, BytesIn: int64(len(c.Payload))})
			}
			return nil, err
		}
		if done != nil {
			dones = append(dones, done)
		}
	}
	switch len(dones) {
	case 0:
		return nil, nil
	case 1:
		return dones[0], nil
	}
	return func(o Outcome) {
		for _, d := range dones {
			d(o)
		}
	}, nil
}

func (gs guards) Visible(c *Call) bool {
	for _, g := range gs {
		if !g.Visible(c) {
			return false
		}
	}
	return true
}
