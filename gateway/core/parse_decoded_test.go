package core

import (
	"encoding/json"
	"testing"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestParseDecodedAgreesWithParseRequest holds the fast path to the
// protojson one: same acceptance, same request.
func TestParseDecodedAgreesWithParseRequest(t *testing.T) {
	payloads := []string{
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","params":{"x":1},"timeout":30}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":30,"extra":[1,2]}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","params":null,"timeout":1}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":3600}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":"30"}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":30.0}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":30.5}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":0}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":3601}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":1e12}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":"x"}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":true}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","timeout":null}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo"}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","params":[1],"timeout":30}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"echo","params":"x","timeout":30}`,
		`{"agent":1,"req_id":"1","computer":"pc","tool_name":"echo","timeout":30}`,
		`{"agent":"a","req_id":1,"computer":"pc","tool_name":"echo","timeout":30}`,
		`{"agent":"a","req_id":"1","computer":null,"tool_name":"echo","timeout":30}`,
		`{"agent":"a","req_id":"1","computer":"pc","tool_name":"","timeout":30}`,
		`{"agent":"","req_id":"1","computer":"pc","tool_name":"echo","timeout":30}`,
		`{"req_id":"1","computer":"pc","tool_name":"echo","timeout":30}`,
		`{}`,
	}
	for _, p := range payloads {
		var v map[string]any
		if err := json.Unmarshal([]byte(p), &v); err != nil {
			t.Fatal(err)
		}
		want, wantErr := ParseRequest(smcp.EventToolCall, []byte(p))
		got, gotErr := ParseDecoded(smcp.EventToolCall, v, []byte(p))
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: ParseRequest err %v, ParseDecoded err %v", p, wantErr, gotErr)
			continue
		}
		if gotErr != nil {
			if e, ok := smcp.AsError(gotErr); !ok || e.Code != smcp.CodeBadRequest {
				t.Errorf("%s: error %v is not a 400", p, gotErr)
			}
			continue
		}
		if got.Event != want.Event || got.Agent != want.Agent || got.ReqID != want.ReqID || got.Computer != want.Computer ||
			got.Timeout != want.Timeout || string(got.Payload) != string(want.Payload) {
			t.Errorf("%s: got %+v, want %+v", p, got, want)
		}
	}
}

func BenchmarkParseToolCall(b *testing.B) {
	p := []byte(`{"agent":"agent-1","req_id":"12345","computer":"pc","tool_name":"echo","params":{"text":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},"timeout":30}`)
	var v map[string]any
	_ = json.Unmarshal(p, &v)
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseRequest(smcp.EventToolCall, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseDecoded(smcp.EventToolCall, v, p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
