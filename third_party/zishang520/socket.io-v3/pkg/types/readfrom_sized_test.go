package types

import (
	"bytes"
	"strings"
	"testing"
)

// The patched ReadFrom copies a source of known length in one allocation
// of about its size (upstream: 512 bytes, then 1,024).
func TestReadFromSizedSource(t *testing.T) {
	payload := strings.Repeat("x", 300)
	sources := map[string]func() any{
		"StringBuffer":   func() any { return NewStringBufferString(payload) },
		"Buffer":         func() any { return NewBufferString(payload) },
		"bytes.Buffer":   func() any { return bytes.NewBufferString(payload) },
		"bytes.Reader":   func() any { return bytes.NewReader([]byte(payload)) },
		"strings.Reader": func() any { return strings.NewReader(payload) },
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			var b Buffer
			r := src().(interface{ Read([]byte) (int, error) })
			n, err := b.ReadFrom(r)
			if err != nil || n != int64(len(payload)) || b.String() != payload {
				t.Fatalf("ReadFrom = %d, %v; content %q", n, err, b.String())
			}
			if cap(b.buf) >= 512 {
				t.Fatalf("capacity %d for %d bytes", cap(b.buf), len(payload))
			}
			build := testing.AllocsPerRun(100, func() { _ = src() })
			read := testing.AllocsPerRun(100, func() {
				r := src().(interface{ Read([]byte) (int, error) })
				var b Buffer
				_, _ = b.ReadFrom(r)
			})
			if read-build != 1 {
				t.Fatalf("%v allocations per ReadFrom, want 1", read-build)
			}
		})
	}
}
