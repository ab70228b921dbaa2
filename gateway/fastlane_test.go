package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// The fast lane gives the same answers as net/http: every request below is
// sent to a gateway with the lane and to one without, and status, content
// type and body must be byte for byte the same; the lane must have served
// the calls it is meant for.
func TestFastLaneAnswersLikeNetHTTP(t *testing.T) {
	keys, err := core.NewKeyRing(core.Key{Key: "k", Roles: []string{"agent"}}, core.Key{Key: "pc-key", Roles: []string{"computer"}})
	if err != nil {
		t.Fatal(err)
	}
	withLane := startGateway(t, gateway.Config{Auth: keys})
	without := startGateway(t, gateway.Config{Auth: keys, NoFastLane: true})
	for _, g := range []*gateway.Running{withLane, without} {
		dialComputerWithKey(t, g.URL, "pc-key", "pc", "office-1")
	}
	params, err := structpb.NewStruct(map[string]any{"text": "hi", "n": 2})
	if err != nil {
		t.Fatal(err)
	}
	callTool := func(computer string) []byte {
		b, err := proto.Marshal(&smcpv1.CallToolRequest{OfficeId: "office-1", Computer: computer, ToolName: "echo", Params: params, ReqId: "r-1"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const jsonCall = `{"office_id":"office-1","computer":"pc","tool_name":"echo","params":{"a":[1,true,null]},"req_id":"r-2"}`
	for _, tc := range []struct {
		name, procedure, contentType, key string
		body                              []byte
		lane                              bool // the lane serves it
		answers                           string
	}{
		{"CallTool", smcpv1connect.AgentServiceCallToolProcedure, "application/proto", "k", callTool("pc"), true, "pc:r-1"},
		{"CallTool JSON", smcpv1connect.AgentServiceCallToolProcedure, "application/json", "k", []byte(jsonCall), true, "pc:r-2"},
		{"unknown computer", smcpv1connect.AgentServiceCallToolProcedure, "application/proto", "k", callTool("nobody"), true, ""},
		{"no API key", smcpv1connect.AgentServiceCallToolProcedure, "application/proto", "", callTool("pc"), true, ""},
		{"wrong API key", smcpv1connect.AgentServiceListRoomProcedure, "application/json", "bad", []byte(`{"office_id":"office-1"}`), true, ""},
		{"malformed proto", smcpv1connect.AgentServiceCallToolProcedure, "application/proto", "k", []byte{0xff, 0xff, 0xff}, true, ""},
		{"malformed JSON", smcpv1connect.AgentServiceCallToolProcedure, "application/json", "k", []byte(`{"office_id":`), true, ""},
		{"wrong field type", smcpv1connect.AgentServiceCallToolProcedure, "application/json", "k", []byte(`{"office_id":5}`), true, ""},
		{"GetDesktop", smcpv1connect.AgentServiceGetDesktopProcedure, "application/json", "k", []byte(`{"office_id":"office-1","computer":"pc"}`), true, "window://pc/main"},
		{"unknown procedure", "/smcp.v1.AgentService/Nope", "application/json", "k", []byte(`{}`), false, ""},
		{"unsupported content type", smcpv1connect.AgentServiceCallToolProcedure, "text/plain", "k", []byte(`{}`), false, ""},
		{"large body", smcpv1connect.AgentServiceCallToolProcedure, "application/json", "k",
			[]byte(`{"office_id":"office-1","computer":"pc","tool_name":"echo","req_id":"r-3","params":{"x":"` + strings.Repeat("y", 100_000) + `"}}`), false, "pc:r-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := withLane.FastLaneCalls()
			status, ctype, body := connectCall(t, withLane.URL+tc.procedure, tc.contentType, tc.key, tc.body)
			wantStatus, wantType, wantBody := connectCall(t, without.URL+tc.procedure, tc.contentType, tc.key, tc.body)
			if status != wantStatus || ctype != wantType || !sameBody(t, ctype, body, wantBody) {
				t.Fatalf("lane: %d %q %q\nnet/http: %d %q %q", status, ctype, body, wantStatus, wantType, wantBody)
			}
			if tc.answers != "" && (status != http.StatusOK || !bytes.Contains(body, []byte(tc.answers))) {
				t.Fatalf("%d %.200q, want an answer with %q", status, body, tc.answers)
			}
			if served := withLane.FastLaneCalls() - before; served != map[bool]uint64{true: 1}[tc.lane] {
				t.Fatalf("the lane served %d calls, want lane=%v", served, tc.lane)
			}
		})
	}
	if without.FastLaneCalls() != 0 {
		t.Fatal("NoFastLane gateway served calls on the lane")
	}
}

// sameBody compares answers; binary ones as messages, since the order of a
// Struct's fields in the encoding follows map iteration.
func sameBody(t *testing.T, contentType string, a, b []byte) bool {
	if contentType != "application/proto" {
		return bytes.Equal(a, b)
	}
	var ma, mb smcpv1.CallToolResponse
	if err := proto.Unmarshal(a, &ma); err != nil {
		t.Fatalf("lane answer: %v", err)
	}
	if err := proto.Unmarshal(b, &mb); err != nil {
		t.Fatalf("net/http answer: %v", err)
	}
	return proto.Equal(&ma, &mb)
}

func connectCall(t *testing.T, url, contentType, key string, body []byte) (int, string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(fmt.Errorf("read answer: %w", err))
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}
