package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func TestToConnect(t *testing.T) {
	cases := []struct {
		err      error
		code     connect.Code
		smcpCode int
	}{
		{smcp.Errorf(smcp.CodeBadRequest, "x"), connect.CodeInvalidArgument, 400},
		{smcp.Errorf(smcp.CodeUnauthenticated, "x"), connect.CodeUnauthenticated, 401},
		{smcp.Errorf(smcp.CodeForbidden, "x"), connect.CodePermissionDenied, 403},
		{smcp.Errorf(smcp.CodeNotFound, "x"), connect.CodeNotFound, 404},
		{smcp.Errorf(smcp.CodeTimeout, "x"), connect.CodeDeadlineExceeded, 408},
		{smcp.Errorf(smcp.CodeInternal, "x"), connect.CodeInternal, 500},
		{smcp.Errorf(smcp.CodeNotInOffice, "x"), connect.CodeFailedPrecondition, 4103},
		{smcp.Errorf(smcp.CodeDocumentNotFound, "x"), connect.CodeNotFound, 4201},
		{smcp.Errorf(smcp.CodePageOutOfRange, "x"), connect.CodeOutOfRange, 4202},
		{smcp.Errorf(smcp.CodeElementNotFound, "x"), connect.CodeNotFound, 4203},
		{smcp.Errorf(smcp.CodeInvalidDPEURI, "x"), connect.CodeInvalidArgument, 4204},
		{smcp.Errorf(core.CodeTooManyPending, "x"), connect.CodeResourceExhausted, 429},
		{smcp.Errorf(503, "x"), connect.CodeUnavailable, 503}, // a required audit that cannot write
		{smcp.Errorf(599, "x"), connect.CodeInternal, 599},
		{smcp.Errorf(4999, "x"), connect.CodeUnknown, 4999},
		{fmt.Errorf("wrapped: %w", smcp.Errorf(smcp.CodeForbidden, "x")), connect.CodePermissionDenied, 403},
		{fmt.Errorf("db password=hunter2"), connect.CodeInternal, 500},
		// 0.3/0.4 codes, and their reasons (PROTOCOL-0.4.md §6).
		{smcp.Errorf(smcp.CodeMCPServerNotFound, "x"), connect.CodeNotFound, 4014},
		{smcp.Errorf(smcp.CodeMCPCapabilityNotSupported, "x"), connect.CodeUnimplemented, 4015},
		{smcp.Errorf(smcp.CodeInvalidSkillName, "x"), connect.CodeInvalidArgument, 4016},
		{withReason(smcp.CodeSkillResourceNotAccessible, "traversal"), connect.CodeInvalidArgument, 4017},
		{withReason(smcp.CodeSkillResourceNotAccessible, "not_found"), connect.CodeNotFound, 4017},
		{withReason(smcp.CodeSkillResourceNotAccessible, "too_large"), connect.CodeResourceExhausted, 4017},
		{withReason(smcp.CodeSkillResourceNotAccessible, "new_reason"), connect.CodeFailedPrecondition, 4017},
		{smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "x"), connect.CodeFailedPrecondition, 4017},
		{withReason(smcp.CodeBlobNotAccessible, "invalid_handle"), connect.CodeInvalidArgument, 4018},
		{withReason(smcp.CodeBlobNotAccessible, "gone"), connect.CodeNotFound, 4018},
		{withReason(smcp.CodeBlobNotAccessible, "range"), connect.CodeOutOfRange, 4018},
		{withReason(smcp.CodeBlobNotAccessible, "forbidden"), connect.CodePermissionDenied, 4018},
		{withReason(smcp.CodeBlobWriteFailed, "integrity"), connect.CodeDataLoss, 4019},
		{withReason(smcp.CodeBlobWriteFailed, "busy"), connect.CodeResourceExhausted, 4019},
		{withReason(smcp.CodeBlobWriteFailed, "io_error"), connect.CodeInternal, 4019},
		{withReason(smcp.CodeBlobWriteFailed, "invalid_upload"), connect.CodeAborted, 4019},
		{smcp.Errorf(smcp.CodeBlobWriteFailed, "x"), connect.CodeAborted, 4019},
		// A reason of another code does not apply.
		{withReason(smcp.CodeMCPServerNotFound, "integrity"), connect.CodeNotFound, 4014},
	}
	for _, c := range cases {
		t.Run(c.err.Error(), func(t *testing.T) {
			err := toConnect(c.err)
			if got := connect.CodeOf(err); got != c.code {
				t.Fatalf("code %v, want %v", got, c.code)
			}
			e, ok := SMCPError(err)
			if !ok || e.Code != c.smcpCode {
				t.Fatalf("detail %v %v, want code %d", e, ok, c.smcpCode)
			}
			if _, isSMCP := smcp.AsError(c.err); !isSMCP && e.Message != "internal error" {
				t.Fatalf("internal error text leaked: %q", e.Message)
			}
		})
	}
	if toConnect(context.Canceled) != context.Canceled || toConnect(nil) != nil {
		t.Fatal("context errors and nil must pass through")
	}
}

// requestConn is a computer connection that never answers and reports each
// request it receives.
type requestConn struct{ requested chan string }

func (requestConn) Notify(core.Notification) {}
func (c requestConn) Request(event string, _ json.RawMessage, _ func(json.RawMessage, error)) func() {
	c.requested <- event
	return nil
}

func TestToConnectComputerGone(t *testing.T) {
	// The core's error for a computer that left before answering maps to
	// Unavailable with the SMCP 404.
	hub := core.New(core.Config{})
	p := &core.Principal{ID: "t"}
	conn := requestConn{requested: make(chan string, 1)}
	comp, err := hub.Attach("c1", p, conn, core.Protocol{Version: smcp.V02})
	if err != nil {
		t.Fatal(err)
	}
	if err := comp.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o"}); err != nil {
		t.Fatal(err)
	}
	agent, err := hub.ActAsAgent(p, "o", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := agent.GetTools(t.Context(), &smcpv1.GetToolsReq{Agent: "a", ReqId: "r", Computer: "pc"})
		errc <- err
	}()
	<-conn.requested
	comp.Close()
	err = toConnect(<-errc)
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("code %v", connect.CodeOf(err))
	}
	if e, ok := SMCPError(err); !ok || e.Code != smcp.CodeNotFound {
		t.Fatalf("detail %v", e)
	}
}

func TestWatchResponseEveryEvent(t *testing.T) {
	name := "x"
	cases := []struct {
		event   string
		payload proto.Message
	}{
		{smcp.NotifyEnterOffice, &smcpv1.EnterOfficeNotification{OfficeId: "o", Computer: &name}},
		{smcp.NotifyLeaveOffice, &smcpv1.LeaveOfficeNotification{OfficeId: "o", Agent: &name}},
		{smcp.NotifyUpdateConfig, &smcpv1.UpdateComputerConfigReq{Computer: name}},
		{smcp.NotifyUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: name}},
		{smcp.NotifyUpdateDesktop, &smcpv1.UpdateComputerConfigReq{Computer: name}},
		{smcp.NotifyUpdateFinder, &smcpv1.UpdateComputerConfigReq{Computer: name}},
		{smcp.NotifyToolCallCancel, &smcpv1.AgentCallData{Agent: name, ReqId: "r"}},
	}
	for _, c := range cases {
		wire, err := smcp.ToWire(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		res, err := watchResponse(core.Notification{Event: c.event, OfficeID: "o", Payload: c.payload, Wire: wire})
		if err != nil {
			t.Fatalf("%s: %v", c.event, err)
		}
		// In wire JSON the payload sits under the event's own name.
		b, err := smcp.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if string(m["event"]) != `"`+c.event+`"` {
			t.Fatalf("%s: event %s", c.event, m["event"])
		}
		var got, want any
		_ = json.Unmarshal(m[strings.TrimPrefix(c.event, "notify:")], &got)
		_ = json.Unmarshal(wire, &want)
		if !reflect.DeepEqual(got, want) || got == nil {
			t.Fatalf("%s: %s, want payload %s", c.event, b, wire)
		}
	}
	if _, err := watchResponse(core.Notification{Event: smcp.NotifyEnterOffice, Payload: &smcpv1.UpdateComputerConfigReq{}}); err == nil {
		t.Fatal("a payload that does not match its event was accepted")
	}
	// Every notify event of the protocol table has its oneof case.
	for _, e := range smcp.Events(smcp.Notify) {
		if _, err := watchResponse(core.Notification{Event: e.Name, Payload: e.NewRequest()}); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
}

func withReason(code int, reason string) *smcp.Error {
	return smcp.Errorf(code, "x").WithDetails(map[string]any{"reason": reason})
}

// TestStreamsKeepOffWorkers: the streaming procedures are found from the
// service's descriptor, so a new one never holds a worker.
func TestStreamsKeepOffWorkers(t *testing.T) {
	want := map[string]bool{
		"/smcp.v1.AgentService/WatchOffice": true,
		"/smcp.v1.AgentService/ReadBlob":    true,
		"/smcp.v1.AgentService/PutBlob":     true,
	}
	if !reflect.DeepEqual(streams, want) {
		t.Fatalf("streams %v, want %v", streams, want)
	}
}

// TestClientStreamsBoundBySilence: the procedures whose request streams
// (their body bounded by its silence, not its length) are found from the
// service's descriptor too: PutBlob only.
func TestClientStreamsBoundBySilence(t *testing.T) {
	want := map[string]bool{"/smcp.v1.AgentService/PutBlob": true}
	if !reflect.DeepEqual(clientStreams, want) {
		t.Fatalf("client streams %v, want %v", clientStreams, want)
	}
}

// TestCutStreamReadsFail: once a stream is cut for its credential, its body
// reads fail though data is at hand: on HTTP/1.1 a read that returns data
// pushes an upload's deadline on (the gateway's boundBodyReads), which
// would undo the cut's deadline until the stream fell silent.
func TestCutStreamReadsFail(t *testing.T) {
	cut := &streamCut{rc: http.NewResponseController(httptest.NewRecorder())}
	body := &cutBody{ReadCloser: io.NopCloser(strings.NewReader("buffered bytes")), cut: cut}
	buf := make([]byte, 4)
	if _, err := body.Read(buf); err != nil {
		t.Fatalf("read before the cut: %v", err)
	}
	cut.now()
	if _, err := body.Read(buf); !errors.Is(err, errStreamCut) {
		t.Fatalf("read after the cut: %v, want %v", err, errStreamCut)
	}
}

// resultField writes the result's tag and length in front of its encoding,
// in the room left for them: on either side of each length where the
// varint grows a byte, the field holds exactly field 1 with the encoding
// smcp.AppendCallToolResultWire writes, and nothing else.
func TestResultFieldHead(t *testing.T) {
	for _, size := range []int{0, 90, 100, 110, 120, 16_300, 16_350, 16_400, 2_097_100, 2_097_200} {
		raw := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", size) + `"}],"isError":false}`)
		want, err := smcp.AppendCallToolResultWire(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		field, ok := resultField(raw)
		if !ok {
			t.Fatalf("size %d: resultField refused an answer the writer takes", size)
		}
		num, typ, n := protowire.ConsumeTag(field)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			t.Fatalf("size %d: tag %d %d (%d)", size, num, typ, n)
		}
		v, m := protowire.ConsumeBytes(field[n:])
		if m < 0 || n+m != len(field) || string(v) != string(want) {
			t.Fatalf("size %d (encoding %d bytes): field of %d bytes does not hold exactly the encoding", size, len(want), len(field))
		}
		var res smcpv1.CallToolResult
		if err := proto.Unmarshal(v, &res); err != nil || len(res.GetContent()) != 1 {
			t.Fatalf("size %d: %v", size, err)
		}
	}
	if _, ok := resultField([]byte(`{"content":[null]}`)); ok {
		t.Error("resultField took an answer the writer leaves to protojson")
	}
}
