package types

import "testing"

var sinkBuffer BufferInterface

// A StringBuffer is one allocation with its Buffer (smcp-gateway patch, see
// PATCHED.md): the engine and the gateway make one for every text packet
// sent and received. Upstream: two.
func TestNewStringBufferOneAllocation(t *testing.T) {
	b := []byte("4hello")
	if n := testing.AllocsPerRun(100, func() { sinkBuffer = NewStringBuffer(b) }); n != 1 {
		t.Fatalf("NewStringBuffer: %.1f allocations, want 1", n)
	}
	sb := NewStringBuffer(b)
	if sb.String() != "4hello" || sb.Len() != 6 {
		t.Fatalf("got %q (%d bytes)", sb.String(), sb.Len())
	}
	if c, _ := sb.ReadByte(); c != '4' || sb.String() != "hello" {
		t.Fatalf("after ReadByte: %q", sb.String())
	}
}
