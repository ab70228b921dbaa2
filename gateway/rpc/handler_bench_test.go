package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// echoConn is a computer's session that answers every request at once with a
// fixed tool result, in the caller's goroutine: what is left of a call is the
// gateway's own work (handler, core routing, encodings), no transport.
type echoConn struct{ answer json.RawMessage }

func (echoConn) Notify(core.Notification) {}

func (c echoConn) Request(_ string, _ json.RawMessage, done func(json.RawMessage, error)) func() {
	done(c.answer, nil)
	return nil
}

// benchHandler is the AgentService handler of a hub whose office "bench" has
// the computer "pc" answering with echoConn.
func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	hub := core.New(core.Config{})
	sess, err := hub.Attach("pc-sid", &core.Principal{ID: "computer"},
		echoConn{answer: json.RawMessage(`{"content":[{"type":"text","text":"{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"}],"isError":false}`)}, core.Protocol{Version: smcp.V02})
	if err != nil {
		b.Fatal(err)
	}
	if err := sess.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "bench"}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sess.Close)
	s := New(hub, core.AllowAll{}, Options{})
	b.Cleanup(func() {
		if err := s.Drain(context.Background()); err != nil {
			b.Error(err)
		}
	})
	h := s.Handlers()["/"+smcpv1connect.AgentServiceName+"/"]
	if h == nil {
		b.Fatal("no AgentService handler")
	}
	return h
}

// BenchmarkHandlerCallTool measures the gateway's work for one CallTool, in
// process: the AgentService handler (authentication, connect-go decoding and
// encoding, the core's routing, the JSON <-> Struct conversions) with a
// computer answering at once. Its allocations per call are the figure to
// keep down; BenchmarkCallTool adds the network and a Socket.IO computer.
//
//	go test -run '^$' -bench HandlerCallTool -benchmem ./gateway/rpc/
func BenchmarkHandlerCallTool(b *testing.B) {
	h := benchHandler(b)
	// The floor (as internal/loadtest's): connect-go's generated handler
	// with the gateway's options, answering in place. What the gateway
	// allocates above it is its own (with the computer leg in core).
	_, floor := smcpv1connect.NewAgentServiceHandler(floorService{},
		connect.WithCompressMinBytes(compressMinBytes), connect.WithReadMaxBytes(DefaultMaxRequestBytes))
	params, err := structpb.NewStruct(map[string]any{"text": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
	if err != nil {
		b.Fatal(err)
	}
	structReq := &smcpv1.CallToolRequest{OfficeId: "bench", Computer: "pc", ToolName: "echo", Params: params, Timeout: 30, ReqId: "r-1"}
	jsonReq := &smcpv1.CallToolRequest{OfficeId: "bench", Computer: "pc", ToolName: "echo", Timeout: 30, ReqId: "r-1",
		ParamsJson: []byte(`{"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`)}
	for _, c := range []struct {
		name  string
		req   *smcpv1.CallToolRequest
		grpc  bool
		floor bool
	}{
		{"connect/params", structReq, false, false},
		{"connect/params_json", jsonReq, false, false},
		{"grpc/params", structReq, true, false},
		{"floor/connect/params", structReq, false, true},
		{"floor/grpc/params", structReq, true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			body, err := proto.Marshal(c.req)
			if err != nil {
				b.Fatal(err)
			}
			ctype := "application/proto"
			if c.grpc {
				ctype = "application/grpc"
				frame := make([]byte, 5, 5+len(body))
				binary.BigEndian.PutUint32(frame[1:], uint32(len(body)))
				body = append(frame, body...)
			}
			ctx := context.Background()
			call := func() *httptest.ResponseRecorder {
				// Built by hand, not by httptest.NewRequest (which parses a
				// request with a 4 KiB bufio.Reader): the allocations
				// counted are the handler's.
				r, err := http.NewRequestWithContext(ctx, http.MethodPost, smcpv1connect.AgentServiceCallToolProcedure, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				r.ProtoMajor, r.ProtoMinor, r.Proto = 2, 0, "HTTP/2.0"
				r.Header.Set("Content-Type", ctype)
				if c.grpc {
					r.Header.Set("Te", "trailers")
				}
				r.Header.Set("X-Smcp-Agent", "agent-bench")
				w := httptest.NewRecorder()
				if c.floor {
					floor.ServeHTTP(w, r)
				} else {
					h.ServeHTTP(w, r)
				}
				return w
			}
			// One checked call: the benchmark measures answers, not errors.
			w := call()
			if w.Code != http.StatusOK || (c.grpc && w.Result().Trailer.Get("Grpc-Status") != "0") {
				b.Fatalf("status %d, trailers %v: %s", w.Code, w.Result().Trailer, w.Body.Bytes())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}

// floorService answers CallTool in place with the echo computer's result
// decoded, as the bench's Connect floor does.
type floorService struct {
	smcpv1connect.UnimplementedAgentServiceHandler
}

var floorResult = func() *smcpv1.CallToolResult {
	text, _ := structpb.NewStruct(map[string]any{"type": "text", "text": `{"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`})
	isError := false
	return &smcpv1.CallToolResult{Content: []*structpb.Struct{text}, IsError: &isError}
}()

func (floorService) CallTool(_ context.Context, req *smcpv1.CallToolRequest) (*smcpv1.CallToolResponse, error) {
	return &smcpv1.CallToolResponse{Result: floorResult, ReqId: req.GetReqId()}, nil
}
