//go:build !race

// Tests of the local patch (third_party/modelcontextprotocol/PATCHED.md);
// the race detector's instrumentation changes what escapes, hence the tag.

package jsonrpc2

import (
	"encoding/json"
	"testing"
)

// One allocation (the buffer) per raw result; upstream's encoder made two.
func TestRawResultMarshalAllocations(t *testing.T) {
	var raw any = json.RawMessage(`{"content":[{"type":"text","text":"hello"}],"isError":false}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = marshalToRaw(raw) }); n > 1 {
		t.Errorf("%v allocations per raw result, want 1", n)
	}
}
