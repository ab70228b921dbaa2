package rpc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// recordConn is a computer that keeps the params of the last request and
// answers with a fixed answer.
type recordConn struct {
	answer json.RawMessage
	mu     sync.Mutex
	params json.RawMessage
}

func (*recordConn) Notify(core.Notification) {}

func (c *recordConn) Request(_ string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(payload, &req)
	c.mu.Lock()
	c.params = req.Params
	c.mu.Unlock()
	done(c.answer, nil)
	return nil
}

func (c *recordConn) lastParams() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.params)
}

// The params a typed CallTool forwards are written from the request's bytes
// and the result from the computer's answer, without Structs in between:
// on every wire and encoding the computer gets the params JSON the Struct
// encodes to (keys sorted), and the caller a result equal to the answer
// decoded; an encoding the direct writer leaves alone (a key twice, the
// last one winning) is decoded as before.
func TestCallToolBytesPassThrough(t *testing.T) {
	answer := `{"content":[{"type":"text","text":"a\u00e9\n","annotations":{"priority":0.5,"audience":["user"]}}],` +
		`"isError":false,"structuredContent":{"n":[1,2.5,null,true]},"_meta":{"a2c_tool_meta":{"x":"y"}}}`
	pc := &recordConn{answer: json.RawMessage(answer)}
	hub := core.New(core.Config{})
	sess, err := hub.Attach("pc-sid", &core.Principal{ID: "computer"}, pc, core.Protocol{Version: smcp.V02})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "office-a"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	s := New(hub, core.AllowAll{}, Options{})
	mux := http.NewServeMux()
	s.Mount(mux)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		if err := s.Drain(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	want := &smcpv1.CallToolResult{}
	if err := smcp.Unmarshal([]byte(answer), want); err != nil {
		t.Fatal(err)
	}
	params, err := structpb.NewStruct(map[string]any{"b": 1, "a": []any{true, nil, "x\n"}, "c": map[string]any{"d": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	const wantParams = `{"a":[true,null,"x\n"],"b":1,"c":{"d":0.5}}`
	req := &smcpv1.CallToolRequest{OfficeId: "office-a", Computer: "pc", ToolName: "echo", Params: params, ReqId: "r-1"}
	binReq, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonReq, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	// params as a Struct whose key "a" comes twice: decoding keeps the last.
	entry := func(key, val string) []byte {
		v := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte(val))
		e := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(key))
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), v)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
	}
	head, err := proto.Marshal(&smcpv1.CallToolRequest{OfficeId: "office-a", Computer: "pc", ToolName: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	twice := protowire.AppendBytes(protowire.AppendTag(head, 4, protowire.BytesType), append(entry("a", "1"), entry("a", "2")...))

	for _, w := range wires {
		c := w.client(t, srv.URL, smcpv1connect.AgentServiceCallToolProcedure)
		bodies := map[string][]byte{"params": jsonReq}
		wantFor := map[string]string{"params": wantParams, "key twice": `{"a":"2"}`}
		if w.binary {
			bodies = map[string][]byte{"params": binReq, "key twice": twice}
		}
		for name, body := range bodies {
			b := rawBody(body)
			r := connect.NewRequest(&b)
			r.Header().Set("X-Smcp-Agent", "agent-1")
			res, err := c.CallUnary(ctx, r)
			if err != nil {
				t.Fatalf("%s %s: %v", w.name, name, err)
			}
			if got := pc.lastParams(); got != wantFor[name] {
				t.Errorf("%s %s: computer got params %s, want %s", w.name, name, got, wantFor[name])
			}
			if !proto.Equal(res.Msg.GetResult(), want) {
				t.Errorf("%s %s: result %v, want %v", w.name, name, res.Msg.GetResult(), want)
			}
			if string(res.Msg.GetResultJson()) != answer {
				t.Errorf("%s %s: result_json %s", w.name, name, res.Msg.GetResultJson())
			}
		}
	}
}
