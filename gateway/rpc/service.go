package rpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// service implements smcpv1connect.AgentServiceHandler on the hub.
type service struct{ *Server }

var _ smcpv1connect.AgentServiceHandler = (*service)(nil)

// act makes the caller the agent of officeID for one call. The session must
// be closed.
func (s *service) act(ctx context.Context, officeID string) (*core.Session, *caller, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	sess, err := s.hub.TakeSeat(ctx, c.principal, officeID, c.agent, core.Seat{Front: c.front, Protocol: c.protocol})
	if err != nil {
		return nil, nil, toConnect(err)
	}
	return sess, c, nil
}

// newReqID makes a request id for a call that came without one.
func newReqID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return "rpc-" + hex.EncodeToString(b)
}

func (s *service) ListRoom(ctx context.Context, req *smcpv1.ListRoomRequest) (*smcpv1.ListRoomResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	members, err := sess.ListRoomContext(ctx, req.GetOfficeId())
	if err != nil {
		return nil, toConnect(err)
	}
	version, err := s.hub.OfficeVersion(ctx, c.principal, req.GetOfficeId())
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.ListRoomResponse{Sessions: members, OfficeVersion: version}, nil
}

func (s *service) GetTools(ctx context.Context, req *smcpv1.GetToolsRequest) (*smcpv1.GetToolsResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret, err := sess.GetTools(ctx, &smcpv1.GetToolsReq{Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer()})
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetToolsResponse{Tools: ret.GetTools()}, nil
}

func (s *service) GetConfig(ctx context.Context, req *smcpv1.GetConfigRequest) (*smcpv1.GetConfigResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret, err := sess.GetConfig(ctx, &smcpv1.GetComputerConfigReq{Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer()})
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetConfigResponse{Servers: ret.GetServers(), Inputs: ret.GetInputs()}, nil
}

// CallTool routes a tool call. As on Socket.IO, tool failures and the
// gateway's timeout answer are results with is_error set. Unlike Socket.IO, a
// computer that leaves before answering is an Unavailable error (the caller
// may retry elsewhere), and a caller that gives up (cancel or RPC deadline)
// sends notify:tool_call_cancel so the computer stops working for no one.
func (s *service) CallTool(ctx context.Context, req *smcpv1.CallToolRequest) (*smcpv1.CallToolResponse, error) {
	return s.callTool(ctx, req, nil, false)
}

// callTool is CallTool; with hasParams, params is the encoding of the
// request's params Struct, taken out of the request before it was decoded
// (rawRequest.takeField) and written as JSON from those bytes.
func (s *service) callTool(ctx context.Context, req *smcpv1.CallToolRequest, params []byte, hasParams bool) (*smcpv1.CallToolResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	timeout := req.GetTimeout()
	if timeout == 0 {
		timeout = DefaultToolTimeout
	}
	reqID := req.GetReqId()
	if reqID == "" {
		reqID = newReqID()
	}
	call := &smcpv1.ToolCallReq{
		Agent: c.agent, ReqId: reqID, Computer: req.GetComputer(),
		ToolName: req.GetToolName(), Params: req.GetParams(), Timeout: timeout,
	}
	payload, err := s.toolCallPayload(call, req, params, hasParams)
	if err != nil {
		return nil, toConnect(err)
	}
	// payload was written from call, params an object (toolCallPayload).
	r, err := core.NewToolCallRequest(call.Agent, reqID, call.Computer, call.ToolName, timeout, payload)
	if err != nil {
		return nil, toConnect(err)
	}
	r.GoneAsError = true
	raw, err := sess.Route(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			if cerr := sess.CancelToolCall(&smcpv1.AgentCallData{Agent: c.agent, ReqId: reqID}); cerr != nil {
				s.log.Warn("cancel abandoned tool call", "office", req.GetOfficeId(), "req_id", reqID, "err", cerr)
			}
		}
		return nil, toConnect(err)
	}
	if e, ok := smcp.ErrorFromAck(raw); ok {
		return nil, toConnect(e)
	}
	resp := &smcpv1.CallToolResponse{ReqId: reqID, ResultJson: raw}
	if field, ok := resultField(raw); ok {
		// result travels as the bytes its encoding would be, written from
		// the answer at once: the binary codecs send them as they are, the
		// JSON ones decode them first (rawCodec.MarshalAppend).
		resp.ProtoReflect().SetUnknown(field)
		return resp, nil
	}
	res := &smcpv1.CallToolResult{}
	if err := smcp.Unmarshal(raw, res); err != nil {
		// Valid JSON the Struct cannot hold (a lone surrogate escape, say):
		// result_json still carries it.
		res = smcp.ToolErrorResult(smcp.Errorf(smcp.CodeInternal,
			"the computer's answer cannot be represented in result (%v); result_json holds it", err))
	}
	resp.Result = res
	return resp, nil
}

// resultFieldHead is room for CallToolResponse.result's tag and length in
// front of its encoding: one byte of tag, a varint of at most 10.
const resultFieldHead = 1 + binary.MaxVarintLen64

// resultField is CallToolResponse.result (field 1) encoded from the
// computer's JSON answer (smcp.AppendCallToolResultWire), tag and length
// included, in one buffer: the encoding is written after room for the
// head, which is then written right in front of it. ok is false when the
// direct writer leaves the answer to protojson.
func resultField(raw []byte) (field []byte, ok bool) {
	buf, err := smcp.AppendCallToolResultWire(make([]byte, resultFieldHead, resultFieldHead+len(raw)+16), raw)
	if err != nil {
		return nil, false
	}
	n := uint64(len(buf) - resultFieldHead)
	start := resultFieldHead - protowire.SizeTag(1) - protowire.SizeVarint(n)
	protowire.AppendVarint(protowire.AppendTag(buf[start:start], 1, protowire.BytesType), n)
	return buf[start:], true
}

// toolCallPayload encodes the client:tool_call to forward, once: from
// params_json as the caller's bytes, else from the Struct. The request
// limit bounds what is forwarded, as on Socket.IO (the JSON can be larger
// than the protobuf message the body limit checked).
func (s *service) toolCallPayload(call *smcpv1.ToolCallReq, req *smcpv1.CallToolRequest, params []byte, hasParams bool) ([]byte, error) {
	var payload []byte
	var err error
	if hasParams && len(req.GetParamsJson()) == 0 {
		payload, ok, err := smcp.ToolCallPayloadStructWire(call, params)
		if err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "params: %v", err)
		}
		if ok {
			if len(payload) > s.opts.MaxRequestBytes {
				return nil, smcp.Errorf(smcp.CodeBadRequest, "payload of %d bytes exceeds the limit of %d", len(payload), s.opts.MaxRequestBytes)
			}
			return payload, nil
		}
	}
	if hasParams {
		// Bytes the direct writer leaves alone are decoded as the request
		// would have been, one level down.
		st := &structpb.Struct{}
		if err := (proto.UnmarshalOptions{RecursionLimit: MaxDecodeDepth - 1}).Unmarshal(params, st); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "params: %v", err)
		}
		call.Params = st
	}
	if raw := req.GetParamsJson(); len(raw) > 0 {
		if call.Params != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "set params or params_json, not both")
		}
		if len(raw) > s.opts.MaxRequestBytes {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "params_json of %d bytes exceeds the limit of %d", len(raw), s.opts.MaxRequestBytes)
		}
		if err := smcp.CheckJSON(raw); err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "params_json: %v", err)
		}
		if i := bytes.IndexFunc(raw, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' }); raw[i] != '{' {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "params_json must be a JSON object")
		}
		payload, err = smcp.ToolCallPayload(call, raw)
	} else {
		if call.Params == nil {
			call.Params = &structpb.Struct{}
		}
		payload, err = smcp.Marshal(call)
	}
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "params: %v", err)
	}
	if len(payload) > s.opts.MaxRequestBytes {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "payload of %d bytes exceeds the limit of %d", len(payload), s.opts.MaxRequestBytes)
	}
	return payload, nil
}

func (s *service) CancelToolCall(ctx context.Context, req *smcpv1.CancelToolCallRequest) (*smcpv1.CancelToolCallResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	if err := sess.CancelToolCall(&smcpv1.AgentCallData{Agent: c.agent, ReqId: req.GetReqId()}); err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.CancelToolCallResponse{}, nil
}

func (s *service) GetDesktop(ctx context.Context, req *smcpv1.GetDesktopRequest) (*smcpv1.GetDesktopResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret, err := sess.GetDesktop(ctx, &smcpv1.GetDeskTopReq{
		Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(),
		DesktopSize: req.DesktopSize, Window: req.Window,
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetDesktopResponse{Desktops: ret.GetDesktops()}, nil
}

func (s *service) GetFinder(ctx context.Context, req *smcpv1.GetFinderRequest) (*smcpv1.GetFinderResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret, err := sess.GetFinder(ctx, &smcpv1.GetFinderReq{
		Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(),
		Keywords: req.GetKeywords(), FileType: req.FileType, Offset: req.Offset, Limit: req.Limit,
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.GetFinderResponse{Documents: ret.GetDocuments(), TotalCount: ret.GetTotalCount()}, nil
}

func (s *service) ReadResource(ctx context.Context, req *smcpv1.ReadResourceRequest) (*smcpv1.ReadResourceResponse, error) {
	sess, c, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ret, err := sess.ReadResource(ctx, &smcpv1.ReadResourceReq{
		Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(), Uri: req.GetUri(),
	})
	if err != nil {
		return nil, toConnect(err)
	}
	return &smcpv1.ReadResourceResponse{Contents: ret.GetContents()}, nil
}
