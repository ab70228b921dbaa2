// Package agent is the Go agent client of an SMCP gateway over Socket.IO:
// join an office, list it, call the computers in it, and follow its
// notifications.
//
// # The Socket.IO client in your program
//
// This module builds the zishang520 Socket.IO client from patched copies
// (third_party/zishang520, see PATCHED.md there) through replace directives
// in its go.mod. Go applies replace directives of the main module only: a
// program that imports this package gets the upstream modules
// (clients/engine/v3 and clients/socket/v3 v3.0.1, socket.io/v3 v3.0.2)
// unless its own go.mod repeats the replace directives (with the
// third_party folders copied or vendored next to it). It builds and works
// either way; with upstream, the fixes are missing: a first dial attempt
// can be lost and wait for its timeout, every closed client leaves a
// goroutine and ~32 KiB behind, and a gateway refusing the protocol version
// (4008, close 4900) is retried instead of reported. Long-running programs
// should copy the replace directives; `smcp agent` (cmd/smcp) has them.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// DefaultToolTimeout is the tool call timeout (seconds) used when a request
// leaves it at 0.
const DefaultToolTimeout = 60

// Notification is one notify: event of the office.
type Notification struct {
	// Event is the notify: event name.
	Event string
	// Payload is *smcpv1.EnterOfficeNotification, *smcpv1.LeaveOfficeNotification,
	// *smcpv1.UpdateComputerConfigReq or *smcpv1.AgentCallData.
	Payload proto.Message
}

// Client is an agent connected to a gateway.
type Client struct {
	sio  *sioclient.Client
	name string

	mu      sync.Mutex
	handler func(Notification)
}

// Dial connects as the agent name. Join an office before calling computers.
func Dial(ctx context.Context, opts sioclient.Options, name string) (*Client, error) {
	if name == "" {
		return nil, errors.New("agent: name is required")
	}
	s, err := sioclient.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	a := &Client{sio: s, name: name}
	for event, newPayload := range notifications {
		s.On(event, func(raw json.RawMessage) { a.notify(event, raw, newPayload()) })
	}
	return a, nil
}

var notifications = map[string]func() proto.Message{
	smcp.NotifyEnterOffice:    func() proto.Message { return &smcpv1.EnterOfficeNotification{} },
	smcp.NotifyLeaveOffice:    func() proto.Message { return &smcpv1.LeaveOfficeNotification{} },
	smcp.NotifyUpdateConfig:   func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	smcp.NotifyUpdateToolList: func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	smcp.NotifyUpdateDesktop:  func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	smcp.NotifyUpdateFinder:   func() proto.Message { return &smcpv1.UpdateComputerConfigReq{} },
	smcp.NotifyToolCallCancel: func() proto.Message { return &smcpv1.AgentCallData{} },
}

func (a *Client) notify(event string, raw json.RawMessage, m proto.Message) {
	a.mu.Lock()
	h := a.handler
	a.mu.Unlock()
	if h == nil {
		return
	}
	if err := smcp.Unmarshal(raw, m); err != nil {
		return // a malformed notification carries nothing usable
	}
	h(Notification{Event: event, Payload: m})
}

// OnNotification sets the callback for the office's notifications. It runs
// on the client's delivery goroutine, in arrival order.
func (a *Client) OnNotification(fn func(Notification)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.handler = fn
}

// Name is the agent's name.
func (a *Client) Name() string { return a.name }

// Conn is the underlying Socket.IO client (reconnect hooks, raw events).
func (a *Client) Conn() *sioclient.Client { return a.sio }

// Close disconnects.
func (a *Client) Close() { a.sio.Close() }

// Join enters an office; it is re-joined after a reconnect.
func (a *Client) Join(ctx context.Context, officeID string) error {
	return a.sio.JoinOffice(ctx, smcp.RoleAgent, a.name, officeID)
}

// Leave leaves the current office.
func (a *Client) Leave(ctx context.Context) error {
	return a.sio.LeaveOffice(ctx, a.sio.Joined())
}

// Office is the joined office, "" if none.
func (a *Client) Office() string { return a.sio.Joined() }

// NewReqID returns a fresh request id.
func NewReqID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ListRoom lists the members of the joined office.
func (a *Client) ListRoom(ctx context.Context) ([]*smcpv1.SessionInfo, error) {
	var ret smcpv1.ListRoomRet
	err := a.sio.RequestInto(ctx, smcp.EventListRoom,
		&smcpv1.ListRoomReq{Agent: a.name, ReqId: NewReqID(), OfficeId: a.Office()}, &ret)
	return ret.GetSessions(), err
}

// CallTool calls a tool. Agent is filled in, and so are an empty ReqId and a
// zero Timeout (DefaultToolTimeout). Tool failures, timeouts and a computer
// gone are results with is_error; errors are refusals and protocol errors.
func (a *Client) CallTool(ctx context.Context, req *smcpv1.ToolCallReq) (*smcpv1.CallToolResult, error) {
	req = proto.CloneOf(req)
	req.Agent = a.name
	if req.ReqId == "" {
		req.ReqId = NewReqID()
	}
	if req.Timeout == 0 {
		req.Timeout = DefaultToolTimeout
	}
	var ret smcpv1.CallToolResult
	if err := a.sio.RequestInto(ctx, smcp.EventToolCall, req, &ret); err != nil {
		return nil, err
	}
	return &ret, nil
}

// CancelToolCall asks the office's computers to cancel the call reqID.
func (a *Client) CancelToolCall(reqID string) error {
	return a.sio.Emit(smcp.EventToolCallCancel, &smcpv1.AgentCallData{Agent: a.name, ReqId: reqID})
}

// GetTools lists a computer's tools.
func (a *Client) GetTools(ctx context.Context, computer string) (*smcpv1.GetToolsRet, error) {
	return request(ctx, a, smcp.EventGetTools, &smcpv1.GetToolsReq{Agent: a.name, ReqId: NewReqID(), Computer: computer}, &smcpv1.GetToolsRet{})
}

// GetConfig returns a computer's configuration (secrets redacted).
func (a *Client) GetConfig(ctx context.Context, computer string) (*smcpv1.GetComputerConfigRet, error) {
	return request(ctx, a, smcp.EventGetConfig, &smcpv1.GetComputerConfigReq{Agent: a.name, ReqId: NewReqID(), Computer: computer}, &smcpv1.GetComputerConfigRet{})
}

// GetDesktop returns a computer's desktop. Agent and an empty ReqId are filled in.
func (a *Client) GetDesktop(ctx context.Context, req *smcpv1.GetDeskTopReq) (*smcpv1.GetDeskTopRet, error) {
	req = proto.CloneOf(req)
	req.Agent = a.name
	if req.ReqId == "" {
		req.ReqId = NewReqID()
	}
	return request(ctx, a, smcp.EventGetDesktop, req, &smcpv1.GetDeskTopRet{})
}

// GetFinder returns a page of a computer's documents. Agent and an empty ReqId are filled in.
func (a *Client) GetFinder(ctx context.Context, req *smcpv1.GetFinderReq) (*smcpv1.GetFinderRet, error) {
	req = proto.CloneOf(req)
	req.Agent = a.name
	if req.ReqId == "" {
		req.ReqId = NewReqID()
	}
	return request(ctx, a, smcp.EventGetFinder, req, &smcpv1.GetFinderRet{})
}

// ReadResource reads a window:// or dpe:// resource through a computer.
func (a *Client) ReadResource(ctx context.Context, computer, uri string) (*smcpv1.ReadResourceRet, error) {
	return request(ctx, a, smcp.EventReadResource, &smcpv1.ReadResourceReq{Agent: a.name, ReqId: NewReqID(), Computer: computer, Uri: uri}, &smcpv1.ReadResourceRet{})
}

func request[T proto.Message](ctx context.Context, a *Client, event string, req proto.Message, out T) (T, error) {
	if err := a.sio.RequestInto(ctx, event, req, out); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}
