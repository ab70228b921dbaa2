package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// admitServer serves the RPC front end of a hub whose office "office-a" has
// the computer "pc" (echoConn), over HTTP/1.1 and h2c, with three keys:
// "k-a" (agent, office-a), "k-b" (agent, office-b only) and "k-alice"
// (agent "alice", any office).
func admitServer(t *testing.T) (*Server, string) {
	t.Helper()
	hub := core.New(core.Config{})
	pc, err := hub.Attach("pc-sid", &core.Principal{ID: "computer"},
		echoConn{answer: json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"isError":false}`)}, core.Protocol{Version: smcp.V02})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "office-a"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	ring, err := core.NewKeyRing(
		core.Key{Key: "k-a", ID: "a", Roles: []string{smcp.RoleAgent}, Offices: []string{"office-a"}},
		core.Key{Key: "k-b", ID: "b", Roles: []string{smcp.RoleAgent}, Offices: []string{"office-b"}},
		core.Key{Key: "k-alice", ID: "alice", Roles: []string{smcp.RoleAgent}, Name: "alice"},
	)
	if err != nil {
		t.Fatal(err)
	}
	s := New(hub, ring, Options{})
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
	return s, srv.URL
}

// rawBody is a request message already encoded: what a caller may send that
// no generated client would.
type rawBody []byte

// rawClientCodec sends rawBody as is and decodes answers as connect does.
type rawClientCodec struct {
	name   string
	binary bool
}

func (c rawClientCodec) Name() string                  { return c.name }
func (c rawClientCodec) Marshal(m any) ([]byte, error) { return []byte(*m.(*rawBody)), nil }

func (c rawClientCodec) Unmarshal(b []byte, m any) error {
	if c.binary {
		return proto.Unmarshal(b, m.(proto.Message))
	}
	return protojson.Unmarshal(b, m.(proto.Message))
}

type wire struct {
	name    string
	opts    []connect.ClientOption
	h2c     bool
	binary  bool
	codecNm string
}

var wires = []wire{
	{name: "connect+proto", binary: true, codecNm: "proto"},
	{name: "connect+json", codecNm: "json"},
	{name: "grpc+proto", opts: []connect.ClientOption{connect.WithGRPC()}, h2c: true, binary: true, codecNm: "proto"},
	{name: "grpc+json", opts: []connect.ClientOption{connect.WithGRPC()}, h2c: true, codecNm: "json"},
	{name: "grpc-web+proto", opts: []connect.ClientOption{connect.WithGRPCWeb()}, binary: true, codecNm: "proto"},
}

func (w wire) client(t *testing.T, base, procedure string) *connect.Client[rawBody, smcpv1.CallToolResponse] {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols)}
	if w.h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	opts := append([]connect.ClientOption{connect.WithCodec(rawClientCodec{name: w.codecNm, binary: w.binary})}, w.opts...)
	return connect.NewClient[rawBody, smcpv1.CallToolResponse](&http.Client{Transport: tr}, base+procedure, opts...)
}

func call(ctx context.Context, c *connect.Client[rawBody, smcpv1.CallToolResponse], key string, body []byte) error {
	b := rawBody(body)
	req := connect.NewRequest(&b)
	req.Header().Set("x-api-key", key)
	_, err := c.CallUnary(ctx, req)
	return err
}

// deepList is a Value nested depth lists deep: [[[...]]].
func deepList(depth int) *structpb.Value {
	v := structpb.NewListValue(&structpb.ListValue{})
	for range depth - 1 {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	return v
}

// callToolBodies are CallTool requests for office that no decoder may
// accept: params nested 9,000 deep (what decoding without a bound turned
// into ~16 MB each), and params that are not a Struct at all.
func callToolBodies(t *testing.T, office string, binary bool) map[string][]byte {
	t.Helper()
	if binary {
		deep, err := proto.MarshalOptions{}.Marshal(&smcpv1.CallToolRequest{OfficeId: office, Computer: "pc", ToolName: "echo",
			Params: &structpb.Struct{Fields: map[string]*structpb.Value{"a": deepList(9000)}}})
		if err != nil {
			t.Fatal(err)
		}
		head, err := proto.Marshal(&smcpv1.CallToolRequest{OfficeId: office, Computer: "pc"})
		if err != nil {
			t.Fatal(err)
		}
		// Field 4 (params), length 3: an invalid tag inside.
		return map[string][]byte{"deep": deep, "garbage": append(head, 0x22, 0x03, 0xff, 0xff, 0xff)}
	}
	deep := `{"office_id":"` + office + `","computer":"pc","tool_name":"echo","params":{"a":` +
		strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}}`
	return map[string][]byte{"deep": []byte(deep), "garbage": []byte(`{"office_id":"` + office + `","params":{"a": nope`)}
}

// A caller whose key may not act in the office its request names is
// refused 403 (PermissionDenied) on Connect, gRPC and gRPC-Web, in both
// encodings, without its request being decoded: bodies no decoder accepts
// get 403, and the decode counter stays at zero. The same bodies from a key
// of that office are decoded, and refused as malformed (InvalidArgument):
// the depth bound refuses the 9,000-deep Struct.
func TestRefusedBeforeDecoding(t *testing.T) {
	s, base := admitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, w := range wires {
		c := w.client(t, base, smcpv1connect.AgentServiceCallToolProcedure)
		for name, body := range callToolBodies(t, "office-a", w.binary) {
			before := s.decodes.Load()
			err := call(ctx, c, "k-b", body)
			if connect.CodeOf(err) != connect.CodePermissionDenied {
				t.Errorf("%s %s, key of another office: %v, want permission_denied", w.name, name, err)
			}
			if n := s.decodes.Load() - before; n != 0 {
				t.Errorf("%s %s: %d decodes for a refused caller", w.name, name, n)
			}
			err = call(ctx, c, "k-a", body)
			if connect.CodeOf(err) != connect.CodeInvalidArgument {
				t.Errorf("%s %s, key of the office: %v, want invalid_argument", w.name, name, err)
			}
			if n := s.decodes.Load() - before; n != 1 {
				t.Errorf("%s %s: %d decodes for an admitted caller, want 1", w.name, name, n)
			}
		}
	}
}

// The office is read before decoding but the request is then decoded in
// full: a well-formed call from the office's key is served, on every wire,
// and params nested within MaxDecodeDepth pass.
func TestAdmittedCallServed(t *testing.T) {
	_, base := admitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := &smcpv1.CallToolRequest{OfficeId: "office-a", Computer: "pc", ToolName: "echo",
		Params: &structpb.Struct{Fields: map[string]*structpb.Value{"a": deepList(MaxDecodeDepth/2 - 4)}}}
	for _, w := range wires {
		var body []byte
		var err error
		if w.binary {
			body, err = proto.Marshal(req)
		} else {
			body, err = protojson.Marshal(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		c := w.client(t, base, smcpv1connect.AgentServiceCallToolProcedure)
		b := rawBody(body)
		r := connect.NewRequest(&b)
		r.Header().Set("x-api-key", "k-a")
		res, err := c.CallUnary(ctx, r)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		if got := string(res.Msg.GetResultJson()); !strings.Contains(got, `"ok"`) {
			t.Fatalf("%s: result %s", w.name, got)
		}
	}
}

// Every method of the service is served through admit: none is left to a
// 404 by the hand-built routing (a method added to the proto must be added
// there), and each that names an office refuses a key of another office
// before decoding a body that is not even valid JSON.
func TestEveryMethodAdmitted(t *testing.T) {
	s, base := admitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	methods := smcpv1.File_smcp_v1_service_proto.Services().ByName("AgentService").Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		procedure := procedureOf(m)
		hasOffice := m.Input().Fields().ByName("office_id") != nil
		body, ct := []byte(`{"office_id":"office-a","x":`+strings.Repeat("[", 500)), "application/json"
		stream := m.IsStreamingServer() || m.IsStreamingClient()
		if stream {
			// A Connect stream takes the message in an envelope.
			body = append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(body))), body...)
			ct = "application/connect+json"
		}
		before := s.decodes.Load()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+procedure, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ct)
		req.Header.Set("x-api-key", "k-b")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if stream && len(text) > 5 {
			text = text[5:] // the end-of-stream message: {"error":{...}}
		}
		var got struct {
			Code  string `json:"code"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(text, &got); err != nil {
			t.Errorf("%s: %s %q: not a Connect answer (not routed?)", procedure, resp.Status, text)
			continue
		}
		code := got.Code + got.Error.Code
		switch {
		case hasOffice && code != "permission_denied":
			t.Errorf("%s: %s %q, want permission_denied", procedure, resp.Status, text)
		case hasOffice && s.decodes.Load() != before:
			t.Errorf("%s: decoded for a refused caller", procedure)
		case !hasOffice && code != "invalid_argument":
			t.Errorf("%s (names no office): %s %q, want invalid_argument", procedure, resp.Status, text)
		}
	}
}

// A key without a fixed name may not act as a name fixed to another key
// (x-smcp-agent: alice), on any call: the core's one rule, applied here
// before decoding.
func TestReservedAgentName(t *testing.T) {
	_, base := admitServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cl := connect.NewClient[smcpv1.CancelToolCallRequest, smcpv1.CancelToolCallResponse](&http.Client{Transport: tr},
		base+smcpv1connect.AgentServiceCancelToolCallProcedure)
	callAs := func(key, agent, reqID string) error {
		req := connect.NewRequest(&smcpv1.CancelToolCallRequest{OfficeId: "office-a", ReqId: reqID})
		req.Header().Set("x-api-key", key)
		if agent != "" {
			req.Header().Set(AgentHeader, agent)
		}
		_, err := cl.CallUnary(ctx, req)
		return err
	}
	err := callAs("k-a", "alice", "r1")
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a free key acting as alice: %v, want permission_denied", err)
	}
	if e, ok := SMCPError(err); !ok || !strings.Contains(e.Message, "belongs to another key") {
		t.Fatalf("refusal reason: %v", err)
	}
	if err := callAs("k-a", "bob", "r1"); err != nil {
		t.Fatalf("a free key acting as bob: %v", err)
	}
	if err := callAs("k-alice", "", "r1"); err != nil {
		t.Fatalf("alice's own key: %v", err)
	}
}
