// Tests of the smcp-gateway patch (internal/fork/mcpsdk/PATCHED.md):
// Unmarshal parses its input in place instead of through a streaming Decoder.

package json

import (
	"encoding/json"
	"strings"
	"testing"
)

// A JSON-RPC request as the streamable HTTP server reads it, decoded the way
// jsonrpc2.DecodeMessage does.
const request = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pc__echo","arguments":{"text":"hello"}}}`

type wire struct {
	VersionTag string          `json:"jsonrpc"`
	Method     json.RawMessage `json:"method,omitempty"`
	ID         any             `json:"id,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
}

// Upstream copied every value into a fresh 32 KiB decoder buffer; the patch
// allocates only what the decoded value holds.
func TestUnmarshalAllocatesLittle(t *testing.T) {
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w wire
			if err := Unmarshal([]byte(request), &w); err != nil {
				b.Fatal(err)
			}
		}
	})
	if got := res.AllocedBytesPerOp(); got > 1024 {
		t.Errorf("Unmarshal of a %d-byte request allocates %d bytes, want at most 1024", len(request), got)
	}
}

func TestUnmarshalDecodesInPlace(t *testing.T) {
	data := []byte(request)
	var w wire
	if err := Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	if w.VersionTag != "2.0" || string(w.Method) != `"tools/call"` || w.ID != float64(7) ||
		string(w.Params) != `{"name":"pc__echo","arguments":{"text":"hello"}}` {
		t.Fatalf("decoded %+v", w)
	}
	// Raw values are copies: the caller may reuse its buffer.
	copy(data, strings.Repeat("x", len(data)))
	if string(w.Params) != `{"name":"pc__echo","arguments":{"text":"hello"}}` {
		t.Errorf("params changed with the input buffer: %s", w.Params)
	}
}

// Like encoding/json.Unmarshal, the input is one value and white space:
// upstream's Decoder read the first value and ignored what followed.
func TestUnmarshalTrailingData(t *testing.T) {
	for _, in := range []string{request + " \n\t", " " + request} {
		var w wire
		if err := Unmarshal([]byte(in), &w); err != nil {
			t.Errorf("Unmarshal(%q): %v", in, err)
		}
	}
	for _, in := range []string{request + "}", request + request, `{"a":1} x`, `[] []`} {
		var v any
		if err := Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("Unmarshal(%q) accepted data after the value", in)
		}
	}
	for _, in := range []string{``, ` `, `{"a":`, `{"a":1`} {
		var v any
		if err := Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("Unmarshal(%q) accepted an incomplete value", in)
		}
	}
}
