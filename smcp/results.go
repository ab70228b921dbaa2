package smcp

import (
	"encoding/json"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Tool-call answers made by the gateway or the computer instead of the tool
// (PROTOCOL.md §3 rule 7 and §6). Once a call is routed, the agent always
// gets a CallToolResult, never a flat error.

// ToolTimeoutResult answers a tool call the computer did not finish in time.
func ToolTimeoutResult() *smcpv1.CallToolResult {
	return markedResult("Tool call timeout", map[string]*structpb.Value{
		MetaTimeout: structpb.NewBoolValue(true),
	})
}

// ToolCancelledResult answers a tool call cancelled by its agent.
func ToolCancelledResult() *smcpv1.CallToolResult {
	return markedResult("Tool call cancelled", map[string]*structpb.Value{
		MetaCancelled:    structpb.NewBoolValue(true),
		MetaCancelReason: structpb.NewStringValue(CancelReasonAgent),
	})
}

// ToolErrorResult answers a routed tool call that failed with a protocol
// error, e.g. the computer disconnected (code 500) or the tool is unknown
// (404): isError with the code in meta.a2c_error_code.
func ToolErrorResult(e *Error) *smcpv1.CallToolResult {
	return markedResult(e.Message, map[string]*structpb.Value{
		MetaErrorCode: structpb.NewNumberValue(float64(e.Code)),
	})
}

func markedResult(text string, meta map[string]*structpb.Value) *smcpv1.CallToolResult {
	return &smcpv1.CallToolResult{
		Content: []*structpb.Struct{{Fields: map[string]*structpb.Value{
			"type": structpb.NewStringValue("text"),
			"text": structpb.NewStringValue(text),
		}}},
		IsError: new(true),
		Meta:    &structpb.Struct{Fields: meta},
	}
}

// ToolErrorResultJSON is ToolErrorResult in wire JSON.
func ToolErrorResultJSON(e *Error) json.RawMessage {
	b, err := ToWire(ToolErrorResult(e))
	if err != nil {
		// A CallToolResult of a string and a number always encodes.
		panic(err)
	}
	return b
}

// The errors of the calls the gateway settles itself, one text each. For
// events with gateway results (client:tool_call) they are answered as
// GatewayResult, otherwise as flat errors.

// ComputerGoneError: the computer left or disconnected before answering.
func ComputerGoneError(computer string) *Error {
	return Errorf(CodeNotFound, "computer %q left the office before answering", computer)
}

// ComputerTimeoutError: the computer did not answer before the deadline.
func ComputerTimeoutError(event, computer string, deadline time.Duration) *Error {
	return Errorf(CodeTimeout, "%s: computer %q did not answer in %s", event, computer, deadline)
}

// BadAnswerError: the computer's answer cannot be relayed (not JSON, a
// number beyond float64, binary attachments, over the answer limit).
func BadAnswerError(computer, reason string) *Error {
	return Errorf(CodeInternal, "computer %q sent an answer the gateway cannot relay: %s", computer, reason)
}

// timeoutResultJSON is ToolTimeoutResult as PROTOCOL.md §3 rule 7 spells it
// (TestTimeoutResultJSON holds the two together).
var timeoutResultJSON = json.RawMessage(`{"content":[{"type":"text","text":"Tool call timeout"}],"isError":true,"meta":{"a2c_timeout":true}}`)

// GatewayResult is the CallToolResult, in wire JSON, the gateway answers a
// routed tool call with instead of e: a timeout is ToolTimeoutResult
// (PROTOCOL.md §3 rule 7), anything else ToolErrorResult.
func GatewayResult(e *Error) json.RawMessage {
	if e.Code == CodeTimeout {
		return timeoutResultJSON
	}
	return ToolErrorResultJSON(e)
}
