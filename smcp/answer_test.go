package smcp

import (
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

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
