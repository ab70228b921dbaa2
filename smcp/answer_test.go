package smcp

import (
	"strings"
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
	// An SDK 0.1.x computer has no client:get_finder handler: python-socketio
	// acks with no arguments (null here), or a catch-all answers a bare value.
	for _, raw := range []string{"null", "", " ", "[]", "true", `"ok"`, "0"} {
		var fin smcpv1.GetFinderRet
		err := DecodeAnswer([]byte(raw), &fin)
		if e, ok := AsError(err); !ok || e.Code != CodeNotSupported || !strings.Contains(e.Message, "not supported by this computer") {
			t.Errorf("answer %q: %v", raw, err)
		}
	}
	var fin smcpv1.GetFinderRet
	if err := DecodeAnswer([]byte(`{"documents":[],"total_count":0,"req_id":"f"}`), &fin); err != nil || fin.GetReqId() != "f" {
		t.Fatalf("finder answer: %v %v", &fin, err)
	}
}
