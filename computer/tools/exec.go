package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Confirmation policies, used when a tool is not auto_apply and nobody can
// be asked at a terminal.
const (
	ConfirmAuto = "auto" // run the call
	ConfirmDeny = "deny" // refuse it (isError result)
)

// Caller runs a tool on an MCP server (servers.Manager).
type Caller interface {
	CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// Asker asks a person whether a call may run. ok false refuses it.
type Asker interface {
	ConfirmToolCall(ctx context.Context, c Call, e *Entry) (ok bool, err error)
}

// Call is one client:tool_call.
type Call struct {
	Agent, ReqID string
	Name         string
	Params       map[string]any
	Timeout      time.Duration
}

// ExecOptions configure an Executor.
type ExecOptions struct {
	Caller Caller
	// Catalog returns the current catalog.
	Catalog func() *Catalog
	// Asker, when set, is asked about every call that is not auto_apply.
	Asker Asker
	// Policy decides when no Asker is set: ConfirmAuto or ConfirmDeny.
	Policy string
	// DefaultTimeout applies when a call has none (default 60s).
	DefaultTimeout time.Duration
	// HistorySize bounds the call history (default 64).
	HistorySize int
	Logger      *slog.Logger
	// Unlisted, when set, is asked about a bundled name the catalog does
	// not have: a server that cannot connect until it is signed in has no
	// tools listed, and a call meant for it is answered 4006/4007 (with
	// its hint) rather than "tool not found". It returns the server and
	// its bundle id, or af nil.
	Unlisted func(name string) (server, bundleID string, af AuthFailure)
}

// Executor runs tool calls.
type Executor struct {
	opts ExecOptions

	mu       sync.Mutex
	inflight map[callKey]context.CancelCauseFunc
	history  []string
}

type callKey struct{ agent, reqID string }

// errAgentCancelled is the cause of a call cancelled by notify:tool_call_cancel.
var errAgentCancelled = errors.New("cancelled by the agent")

// NewExecutor makes an Executor.
func NewExecutor(opts ExecOptions) *Executor {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = 60 * time.Second
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = 64
	}
	if opts.Policy == "" {
		opts.Policy = ConfirmDeny
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Executor{opts: opts, inflight: map[callKey]context.CancelCauseFunc{}}
}

// History returns the servers of recent calls, oldest first.
func (x *Executor) History() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.history...)
}

func (x *Executor) record(server string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.history = append(x.history, server)
	if over := len(x.history) - x.opts.HistorySize; over > 0 {
		x.history = append(x.history[:0:0], x.history[over:]...)
	}
}

// Cancel cancels the in-flight call (agent, reqID). Unknown calls are
// ignored; it reports whether one was cancelled.
func (x *Executor) Cancel(agent, reqID string) bool {
	x.mu.Lock()
	cancel, ok := x.inflight[callKey{agent, reqID}]
	x.mu.Unlock()
	if ok {
		cancel(errAgentCancelled)
	}
	return ok
}

// Execute runs a call and returns the CallToolResult in its wire form.
// Failures are isError results, never Go errors.
func (x *Executor) Execute(ctx context.Context, c Call) map[string]any {
	log := x.opts.Logger.With("agent", c.Agent, "req_id", c.ReqID, "tool", c.Name)
	cat := x.opts.Catalog()
	e, err := cat.Lookup(c.Name)
	if err != nil {
		if cat.Bundled() {
			if x.opts.Unlisted != nil {
				if server, bundleID, af := x.opts.Unlisted(c.Name); af != nil {
					return authResult(&Entry{Name: c.Name, Server: server, BundleID: bundleID}, af, map[string]any{}, log)
				}
			}
			// Not in the exposed-name mapping (PROTOCOL-0.4.md §5.3, §6).
			return errorResult(err.Error(), map[string]any{smcp.MetaCode: smcp.CodeToolNotFound})
		}
		return errorResult(err.Error(), map[string]any{smcp.MetaErrorCode: smcp.CodeNotFound})
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = x.opts.DefaultTimeout
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	key := callKey{c.Agent, c.ReqID}
	if c.ReqID != "" {
		x.mu.Lock()
		if _, dup := x.inflight[key]; dup {
			x.mu.Unlock()
			return errorResult(fmt.Sprintf("a call with req_id %q is already running", c.ReqID), map[string]any{smcp.MetaErrorCode: smcp.CodeBadRequest})
		}
		x.inflight[key] = cancel
		x.mu.Unlock()
		defer func() {
			x.mu.Lock()
			delete(x.inflight, key)
			x.mu.Unlock()
		}()
	}
	meta := map[string]any{}
	if e.Meta != nil {
		meta[smcp.MetaToolMeta] = e.MetaJSON()
	}
	cancelled := func() map[string]any {
		meta[smcp.MetaCancelled] = true
		meta[smcp.MetaCancelReason] = smcp.CancelReasonAgent
		log.Info("tool call cancelled by the agent")
		return errorResult("Tool call cancelled by the agent", meta)
	}

	timedOut := func() map[string]any {
		log.Warn("tool call timed out", "timeout", timeout)
		meta[smcp.MetaTimeout] = true
		return errorResult("Tool call timeout", meta)
	}
	// The timeout covers the confirmation too: an unanswered question must
	// not outlive the call the agent is waiting for.
	cctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()

	if !e.Meta.GetAutoApply() {
		if x.opts.Asker != nil {
			ok, err := x.opts.Asker.ConfirmToolCall(cctx, c, e)
			switch {
			case errors.Is(context.Cause(ctx), errAgentCancelled):
				return cancelled()
			case cctx.Err() != nil && ctx.Err() == nil:
				return timedOut()
			case err != nil:
				return errorResult("tool call not confirmed: "+err.Error(), meta)
			case !ok:
				log.Info("tool call refused at the terminal")
				return errorResult(fmt.Sprintf("tool call refused by the user of this computer (tool %q is not auto_apply)", c.Name), meta)
			}
		} else if x.opts.Policy != ConfirmAuto {
			log.Info("tool call refused by policy", "policy", x.opts.Policy)
			return errorResult(fmt.Sprintf("tool call refused: tool %q needs confirmation (auto_apply is not set) and this computer runs "+
				"with --confirm=%s and no terminal; set tool_meta.%s.auto_apply: true or run with --confirm=auto", c.Name, x.opts.Policy, e.Tool.Name), meta)
		}
	}

	x.record(e.Server)
	start := time.Now()
	res, err := x.opts.Caller.CallTool(cctx, e.Server, e.Tool.Name, c.Params)
	switch {
	case errors.Is(context.Cause(ctx), errAgentCancelled):
		return cancelled()
	case err != nil && cctx.Err() != nil && ctx.Err() == nil:
		return timedOut()
	case err != nil && e.bundled && errors.As(err, new(AuthFailure)):
		var af AuthFailure
		errors.As(err, &af)
		return authResult(e, af, meta, log)
	case err != nil:
		log.Warn("tool call failed", "server", e.Server, "err", err)
		return errorResult(fmt.Sprintf("tool %q on MCP server %q failed: %v", c.Name, e.Server, err), meta)
	}
	log.Debug("tool call done", "server", e.Server, "elapsed", time.Since(start), "is_error", res.IsError)
	b, err := json.Marshal(res)
	if err != nil {
		return errorResult("cannot encode the tool result: "+err.Error(), meta)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	out["isError"] = res.IsError
	if e.ResultJQ != nil {
		if out, err = applyJQ(cctx, e.ResultJQ, out, e.Server, e.Tool.Name); err != nil {
			log.Warn("result_jq failed", "server", e.Server, "err", err)
			return errorResult(fmt.Sprintf("the result_jq of MCP server %q failed on the result of tool %q: %v", e.Server, e.Tool.Name, err), meta)
		}
		meta[smcp.MetaJQTransformed] = true
	}
	return resultWire(out, meta)
}

// resultWire finishes a CallToolResult (JSON as the MCP server sent it, or
// as result_jq made it) for the wire: MCP's own _meta and the a2c markers
// both go under "meta".
func resultWire(out map[string]any, markers map[string]any) map[string]any {
	meta, _ := out["_meta"].(map[string]any)
	delete(out, "_meta")
	if meta == nil {
		meta = map[string]any{}
	}
	for k, v := range markers {
		meta[k] = v
	}
	if len(meta) > 0 {
		out["meta"] = meta
	}
	if _, ok := out["content"]; !ok || out["content"] == nil {
		out["content"] = []any{}
	}
	return out
}

// AuthFailure is an MCP server refusing a call for authorization, seen
// at its HTTP status (servers.AuthError). AuthHint is safe to show: it
// carries no token, URL or credential.
type AuthFailure interface {
	error
	AuthStatus() int
	AuthHint() string
}

// authResult answers an upstream authorization failure (PROTOCOL-0.4.md
// §7 C8): 4007 for 403 (authorized but refused), 4006 otherwise, with the
// server's bundle id and a hint for the user.
func authResult(e *Entry, af AuthFailure, meta map[string]any, log *slog.Logger) map[string]any {
	code := smcp.CodeToolAuthorizationRequired
	if af.AuthStatus() == http.StatusForbidden {
		code = smcp.CodeToolAuthorizationFailed
	}
	hint := af.AuthHint()
	log.Warn("tool call refused by the MCP server's authorization", "server", e.Server, "bundle_id", e.BundleID, "status", af.AuthStatus(), "code", code)
	meta[smcp.MetaCode] = code
	meta[smcp.MetaMCPServer] = e.BundleID
	meta[smcp.MetaAuthHint] = map[string]any{"message": hint}
	return errorResult(fmt.Sprintf("tool %q: %s", e.Name, hint), meta)
}

func errorResult(text string, meta map[string]any) map[string]any {
	out := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": true,
	}
	if len(meta) > 0 {
		out["meta"] = meta
	}
	return out
}
