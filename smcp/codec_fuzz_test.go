package smcp

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
)

// fuzzTypes are the messages with hand-written wire forms, plus two plain ones.
var fuzzTypes = []func() proto.Message{
	func() proto.Message { return &smcpv1.OfficeAck{} },
	func() proto.Message { return &smcpv1.CallToolResult{} },
	func() proto.Message { return &smcpv1.Error{} },
	func() proto.Message { return &smcpv1.MCPServerConfig{} },
	func() proto.Message { return &smcpv1.GetComputerConfigRet{} },
	func() proto.Message { return &smcpv1.GetToolsRet{} },
	func() proto.Message { return &smcpv1.ToolCallReq{} },
	func() proto.Message { return &smcpv1.GetFinderRet{} },
}

// FuzzUnmarshal checks that decoding never panics, that whatever decodes
// also encodes, and that the encoding is a fixed point: decoding and encoding
// it again gives the same bytes (after canonical ordering). ErrorFromAck must
// not panic on the same input either.
func FuzzUnmarshal(f *testing.F) {
	for _, dir := range []string{"golden", "compat"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			for i := range fuzzTypes {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, b []byte) {
		ErrorFromAck(b)
		m := fuzzTypes[int(kind)%len(fuzzTypes)]()
		if Unmarshal(b, m) != nil {
			return
		}
		first, err := Marshal(m)
		if err != nil {
			t.Fatalf("decoded %v but cannot encode it: %v", m, err)
		}
		m2 := m.ProtoReflect().New().Interface()
		if err := Unmarshal(first, m2); err != nil {
			t.Fatalf("cannot decode own encoding %s: %v", first, err)
		}
		second, err := Marshal(m2)
		if err != nil {
			t.Fatal(err)
		}
		if c1, c2 := canonical(t, first), canonical(t, second); !bytes.Equal(c1, c2) {
			t.Fatalf("encoding not stable:\n%s\n%s", c1, c2)
		}
	})
}
