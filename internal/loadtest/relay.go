package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The relay floors are the floors of the CallTool and MCP modes with a
// computer leg: the same servers and handlers, but each call goes to the
// office's computer over the floor's Socket.IO (Floor.Call) and its answer
// comes back, as the gateway's calls do. They are written as a developer
// would with these libraries (the payload as a map, the answer converted
// field by field), with no validation, authentication or deadlines. What
// they cost above the in-place floors is the least a relay on these
// libraries pays for its leg to the computer.

// connectRelay is the relay floor of the CallTool modes.
type connectRelay struct {
	smcpv1connect.UnimplementedAgentServiceHandler
	floor *Floor
}

func (r connectRelay) CallTool(ctx context.Context, req *smcpv1.CallToolRequest) (*smcpv1.CallToolResponse, error) {
	payload := map[string]any{
		"agent": "bench", "req_id": req.GetReqId(), "computer": req.GetComputer(),
		"tool_name": req.GetToolName(), "params": req.GetParams().AsMap(), "timeout": req.GetTimeout(),
	}
	args, err := r.floor.Call(ctx, req.GetOfficeId(), req.GetComputer(), smcp.EventToolCall, payload)
	if err != nil {
		return nil, connect.NewError(connect.CodeUnavailable, err)
	}
	res, err := callToolResult(args)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return &smcpv1.CallToolResponse{Result: res, ReqId: req.GetReqId()}, nil
}

// callToolResult reads a computer's client:tool_call answer as decoded by
// the Socket.IO server.
func callToolResult(args []any) (*smcpv1.CallToolResult, error) {
	if len(args) == 0 {
		return nil, errors.New("loadtest: the computer answered nothing")
	}
	m, ok := args[0].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("loadtest: the computer answered %T, not an object", args[0])
	}
	if msg, ok := m["message"].(string); ok && m["code"] != nil {
		return nil, fmt.Errorf("loadtest: the computer answered an error: %s", msg)
	}
	res := &smcpv1.CallToolResult{}
	items, _ := m["content"].([]any)
	for _, it := range items {
		im, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("loadtest: a content item is %T, not an object", it)
		}
		s, err := structpb.NewStruct(im)
		if err != nil {
			return nil, fmt.Errorf("loadtest: content item: %w", err)
		}
		res.Content = append(res.Content, s)
	}
	if isError, ok := m["isError"].(bool); ok {
		res.IsError = &isError
	}
	return res, nil
}

// NewMCPRelay is the relay floor of the MCP modes: NewMCPFloor's handler
// with one go-sdk server per office, whose tool "pc__echo" forwards each
// tools/call to the office's computer "pc" and answers with its result.
func NewMCPRelay(f *Floor, log *slog.Logger) http.Handler {
	var mu sync.Mutex
	var seq atomic.Uint64
	servers := map[string]*mcp.Server{}
	serverOf := func(r *http.Request) *mcp.Server {
		office := r.PathValue("office_id")
		mu.Lock()
		defer mu.Unlock()
		if s := servers[office]; s != nil {
			return s
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "smcp-bench-relay", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "pc__echo", InputSchema: &jsonschema.Schema{Type: "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var params any
				if err := json.Unmarshal(req.Params.Arguments, &params); err != nil {
					return nil, fmt.Errorf("loadtest: arguments: %w", err)
				}
				payload := map[string]any{"agent": "bench", "req_id": strconv.FormatUint(seq.Add(1), 10), "computer": "pc",
					"tool_name": "echo", "params": params, "timeout": int(CallTimeout.Seconds())}
				args, err := f.Call(ctx, office, "pc", smcp.EventToolCall, payload)
				if err != nil {
					return nil, err
				}
				if len(args) == 0 {
					return nil, errors.New("loadtest: the computer answered nothing")
				}
				b, err := json.Marshal(args[0])
				if err != nil {
					return nil, err
				}
				var res mcp.CallToolResult
				if err := json.Unmarshal(b, &res); err != nil {
					return nil, fmt.Errorf("loadtest: the computer's answer: %w", err)
				}
				return &res, nil
			})
		servers[office] = s
		return s
	}
	return mcp.NewStreamableHTTPHandler(serverOf, &mcp.StreamableHTTPOptions{
		Logger: log, SessionTimeout: mcpfront.DefaultSessionTimeout, MaxRequestBodyBytes: mcpfront.DefaultMaxRequestBytes, JSONResponse: true,
	})
}
