package mcpfront

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// JSON-RPC codes of the errors that have no code of their own in JSON-RPC
// or MCP (the implementation-defined server error range).
const (
	codeServerError  = -32000
	codeRequestTimed = -32001
)

// mcpError maps an error of the core or of a computer to a JSON-RPC error
// whose data is the flat SMCP error ({code, message, details}), so that an
// MCP client can tell a 4202 page out of range from a 4201 unknown document.
// read selects MCP's resource-not-found code for the not-found family.
// Context errors pass through: the go-sdk answers them itself.
func mcpError(err error, read bool) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e, ok := smcp.AsError(err)
	if !ok {
		// Never leak an internal error's text to the client.
		e = smcp.Errorf(smcp.CodeInternal, "internal error")
	}
	var code int64
	switch e.Code {
	case smcp.CodeBadRequest, smcp.CodeInvalidDPEURI, smcp.CodePageOutOfRange:
		code = jsonrpc.CodeInvalidParams
	case smcp.CodeNotFound, smcp.CodeDocumentNotFound, smcp.CodeElementNotFound:
		code = jsonrpc.CodeInvalidParams
		if read {
			code = mcp.CodeResourceNotFound
		}
	case smcp.CodeTimeout:
		code = codeRequestTimed
	case smcp.CodeInternal:
		code = jsonrpc.CodeInternalError
	default: // 401, 403, 4103, 429, computer gone
		code = codeServerError
	}
	if errors.Is(err, core.ErrComputerGone) {
		code = codeServerError
	}
	data, _ := json.Marshal(e.Wire())
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: data}
}

// errorStatus answers a request refused for too many calls (a quota, the
// calls in flight) with HTTP 429, and Retry-After (whole seconds, rounded
// up, as Connect's) when the refusal says when to retry; the body is the
// JSON-RPC error, whose data has the exact wait (details.retry_after_ms).
// It is the go-sdk's StreamableHTTPOptions.ErrorStatus (a local patch):
// asked about the error answering a POST of one request.
func errorStatus(e *jsonrpc.Error, h http.Header) int {
	var flat struct {
		Code    int `json:"code"`
		Details struct {
			RetryAfterMS *float64 `json:"retry_after_ms"`
		} `json:"details"`
	}
	if e.Code != codeServerError || json.Unmarshal(e.Data, &flat) != nil || flat.Code != core.CodeTooManyPending {
		return 0
	}
	if ms := flat.Details.RetryAfterMS; ms != nil {
		secs := int64(math.Ceil((time.Duration(*ms) * time.Millisecond).Seconds()))
		h.Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	}
	return http.StatusTooManyRequests
}
