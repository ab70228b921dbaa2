package types

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// The patched ReadFrom copies a source of known length into a buffer of
// about its size (upstream grows to 512 bytes, then 1,024, to see EOF).
// Capacity, not allocation counts: those change under -race.
func TestReadFromSizedSource(t *testing.T) {
	payload := strings.Repeat("x", 300)
	sources := map[string]func() io.Reader{
		"StringBuffer":   func() io.Reader { return NewStringBufferString(payload) },
		"Buffer":         func() io.Reader { return NewBufferString(payload) },
		"bytes.Buffer":   func() io.Reader { return bytes.NewBufferString(payload) },
		"bytes.Reader":   func() io.Reader { return bytes.NewReader([]byte(payload)) },
		"strings.Reader": func() io.Reader { return strings.NewReader(payload) },
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			var b Buffer
			r := src()
			n, err := b.ReadFrom(r)
			if err != nil || n != int64(len(payload)) || b.String() != payload {
				t.Fatalf("ReadFrom = %d, %v; content %q", n, err, b.String())
			}
			if cap(b.buf) >= 2*len(payload) {
				t.Fatalf("capacity %d for %d bytes", cap(b.buf), len(payload))
			}
		})
	}
}
