// Tests of the local patch (third_party/modelcontextprotocol/PATCHED.md): a
// json.RawMessage result is compacted into one buffer, to the bytes
// upstream's encoder made of it.

package jsonrpc2

import (
	"encoding/json"
	"testing"
)

func TestRawResultMarshaledAsUpstream(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hello"}],"isError":false}`,
		"{ \"a\" : [ 1 ,\n 2 ] ,\"s\":\"x\u2028y <&> \\u003c\" }",
		` "t" `, `[]`, `null`,
	} {
		got, err := marshalToRaw(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		want, err := jsonMarshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%q: got %s, upstream's encoder %s", raw, got, want)
		}
	}
	for _, bad := range []string{`{"a":`, `{"a":1}}`, `x`} {
		if _, err := marshalToRaw(json.RawMessage(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got, err := marshalToRaw(json.RawMessage(nil)); err != nil || string(got) != "null" {
		t.Errorf("nil RawMessage: %s %v, want null", got, err)
	}
}
