package smcp

import (
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

func TestErrorFromAnswer(t *testing.T) {
	tests := []struct {
		raw  string
		code int // 0: not an error
	}{
		{`{"code":404,"message":"tool not found"}`, 404},
		{`{"code":403,"message":"x","details":{"k":"v"}}`, 403},
		{`{"error":{"code":500,"message":"wrapped"}}`, 500},
		{`{"content":[],"isError":true}`, 0},
		{`{"code":"404","message":"x"}`, 0},
		{`{"code":1.5,"message":"x"}`, 0},
		{`{"code":404}`, 0},
		{`[1]`, 0},
		{`not json`, 0},
	}
	for _, tc := range tests {
		e, ok := ErrorFromAnswer([]byte(tc.raw))
		if ok != (tc.code != 0) || (ok && e.Code != tc.code) {
			t.Errorf("%s: got %v %v", tc.raw, e, ok)
		}
	}
}

func TestDecodeAnswer(t *testing.T) {
	var ret smcpv1.GetToolsRet
	if err := DecodeAnswer([]byte(`{"tools":[],"req_id":"r"}`), &ret); err != nil || ret.GetReqId() != "r" {
		t.Fatalf("%v %v", &ret, err)
	}
	err := DecodeAnswer([]byte(`{"code":404,"message":"nope"}`), &ret)
	if e, ok := AsError(err); !ok || e.Code != 404 {
		t.Fatalf("%v", err)
	}
	err = DecodeAnswer([]byte(`{"tools":"x"}`), &ret)
	if e, ok := AsError(err); !ok || e.Code != CodeInternal {
		t.Fatalf("%v", err)
	}
}
