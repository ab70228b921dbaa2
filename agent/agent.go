// Package agent is the Go agent client of an SMCP gateway over Socket.IO:
// join an office, list it, call the computers in it, and follow its
// notifications.
//
// # The Socket.IO client in your program
//
// The zishang520 Socket.IO client this package dials with is patched (a
// lost first dial attempt, a lost message around the upgrade from polling,
// python-socketio interop, a goroutine and ~32 KiB left per closed client,
// version refusals retried): the patched code is this module's own
// (internal/fork/socketio, see PATCHED.md there), so a program importing
// this package builds with it, and needs no replace directive.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

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
	// Payload is the protocol table's message of the event
	// (smcp.Event(Event).NewRequest): *smcpv1.EnterOfficeNotification,
	// *smcpv1.LeaveOfficeNotification, *smcpv1.UpdateComputerConfigReq or
	// *smcpv1.AgentCallData.
	Payload proto.Message
}

// Client is an agent connected to a gateway.
type Client struct {
	sio     *sioclient.Client
	name    string
	version string

	mu      sync.Mutex
	handler func(Notification)
}

// DefaultVersion is the a2c_version an agent sends unless opts.Version
// says otherwise: the 0.4 profile.
const DefaultVersion = "0.4.0"

// Dial connects as the agent name, speaking opts.Version (default
// DefaultVersion). Join an office before calling computers. A
// gateway refusing the version is a *sioclient.VersionError, returned at
// once (no retry), naming the versions the gateway speaks.
func Dial(ctx context.Context, opts sioclient.Options, name string) (*Client, error) {
	if name == "" {
		return nil, errors.New("agent: name is required")
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	s, err := sioclient.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	a := &Client{sio: s, name: name, version: opts.Version}
	// Every notify: event of the protocol table, decoded into its type.
	for _, e := range smcp.Events(smcp.Notify) {
		s.On(e.Name, func(raw json.RawMessage) { a.notify(e.Name, raw, e.NewRequest()) })
	}
	return a, nil
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

// Version is the a2c_version the agent sent.
func (a *Client) Version() string { return a.version }

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
	ret, err := request[*smcpv1.ListRoomRet](ctx, a, smcp.EventListRoom,
		&smcpv1.ListRoomReq{OfficeId: a.Office()})
	return ret.GetSessions(), err
}

// CallTool calls a tool by the name get_tools listed, sent as is: from 0.3
// it is an opaque exposed name, never split or rebuilt here. Agent is filled in, and so are an empty ReqId and a
// zero Timeout (DefaultToolTimeout). Tool failures, timeouts and a computer
// gone are results with is_error; errors are refusals and protocol errors.
func (a *Client) CallTool(ctx context.Context, req *smcpv1.ToolCallReq) (*smcpv1.CallToolResult, error) {
	if req.GetTimeout() == 0 {
		req = proto.CloneOf(req)
		req.Timeout = DefaultToolTimeout
	}
	return request[*smcpv1.CallToolResult](ctx, a, smcp.EventToolCall, req)
}

// CancelToolCall asks the office's computers to cancel the call reqID.
func (a *Client) CancelToolCall(reqID string) error {
	return a.sio.Emit(smcp.EventToolCallCancel, &smcpv1.AgentCallData{Agent: a.name, ReqId: reqID})
}

// GetTools lists a computer's tools.
func (a *Client) GetTools(ctx context.Context, computer string) (*smcpv1.GetToolsRet, error) {
	return request[*smcpv1.GetToolsRet](ctx, a, smcp.EventGetTools, &smcpv1.GetToolsReq{Computer: computer})
}

// GetConfig returns a computer's configuration (secrets redacted).
func (a *Client) GetConfig(ctx context.Context, computer string) (*smcpv1.GetComputerConfigRet, error) {
	return request[*smcpv1.GetComputerConfigRet](ctx, a, smcp.EventGetConfig, &smcpv1.GetComputerConfigReq{Computer: computer})
}

// GetDesktop returns a computer's desktop. Agent and an empty ReqId are filled in
// (in a copy: req is not changed).
func (a *Client) GetDesktop(ctx context.Context, req *smcpv1.GetDeskTopReq) (*smcpv1.GetDeskTopRet, error) {
	return request[*smcpv1.GetDeskTopRet](ctx, a, smcp.EventGetDesktop, req)
}

// GetFinder returns a page of a computer's documents. Agent and an empty ReqId
// are filled in (in a copy: req is not changed).
func (a *Client) GetFinder(ctx context.Context, req *smcpv1.GetFinderReq) (*smcpv1.GetFinderRet, error) {
	return request[*smcpv1.GetFinderRet](ctx, a, smcp.EventGetFinder, req)
}

// ReadResource reads a window:// or dpe:// resource through a computer.
func (a *Client) ReadResource(ctx context.Context, computer, uri string) (*smcpv1.ReadResourceRet, error) {
	return request[*smcpv1.ReadResourceRet](ctx, a, smcp.EventReadResource, &smcpv1.ReadResourceReq{Computer: computer, Uri: uri})
}

// request sends an event of the protocol table and decodes its answer into
// the table's answer type, which must be T; req must be of the table's
// request type (a mismatch is a programming error of this package, reported
// as an error rather than sent). A copy of req is sent, with the agent's
// name as "agent" and a fresh "req_id" when it has none.
func request[T proto.Message](ctx context.Context, a *Client, event string, req proto.Message) (T, error) {
	var zero T
	e, ok := smcp.Event(event)
	if !ok || e.NewRequest == nil || e.NewAnswer == nil {
		return zero, fmt.Errorf("agent: %s is not a request of the protocol table", event)
	}
	if got, want := req.ProtoReflect().Descriptor().FullName(), e.NewRequest().ProtoReflect().Descriptor().FullName(); got != want {
		return zero, fmt.Errorf("agent: %s takes %s, not %s", event, want, got)
	}
	out, ok := e.NewAnswer().(T)
	if !ok {
		return zero, fmt.Errorf("agent: %s answers %T, not %T", event, e.NewAnswer(), zero)
	}
	req = proto.Clone(req)
	fields := req.ProtoReflect().Descriptor().Fields()
	if f := fields.ByName("agent"); f != nil {
		req.ProtoReflect().Set(f, protoreflect.ValueOfString(a.name))
	}
	if f := fields.ByName("req_id"); f != nil && req.ProtoReflect().Get(f).String() == "" {
		req.ProtoReflect().Set(f, protoreflect.ValueOfString(NewReqID()))
	}
	if err := a.sio.RequestInto(ctx, event, req, out); err != nil {
		return zero, err
	}
	return out, nil
}
