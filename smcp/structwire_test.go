package smcp

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// structWireSeeds are params as JSON: each is made a Struct, encoded, and
// written back as JSON from the encoding.
var structWireSeeds = []string{
	`{}`,
	`{"text":"xxxxxxxx"}`,
	`{"b":1,"a":[1,"x",true,false,null,{"z":{},"y":[]}],"c":{"d":-0.5,"e":1e-7,"f":1e21,"g":123456789012}}`,
	`{"é":"ü\n\"\\\u0001<>&\u2028","":""}`,
}

// structSeed is the Struct of js and its protobuf encoding.
func structSeed(t testing.TB, js string) (*structpb.Struct, []byte) {
	t.Helper()
	s := &structpb.Struct{}
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, wire
}

// JSON written from a Struct's encoding is what Marshal writes for the Struct.
func TestStructWireJSONMatchesMarshal(t *testing.T) {
	for _, js := range structWireSeeds {
		s, wire := structSeed(t, js)
		want, err := appendStruct(nil, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendStructWireJSON([]byte("x"), wire)
		if err != nil {
			t.Errorf("%s: %v", js, err)
			continue
		}
		if string(got) != "x"+string(want) {
			t.Errorf("%s:\ngot  %s\nwant x%s", js, got, want)
		}
	}
}

// Encodings a decoder reads in its own way (a key twice, a value with two
// kinds, unknown fields, invalid UTF-8) are refused and dst left as it was.
func TestStructWireJSONRefuses(t *testing.T) {
	entry := func(key string, value []byte) []byte {
		e := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte(key))
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), value)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
	}
	str := func(s string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), []byte(s))
	}
	boolean := protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1)
	for name, wire := range map[string][]byte{
		"key twice":     append(entry("a", str("1")), entry("a", str("2"))...),
		"two kinds":     entry("a", append(str("1"), boolean...)),
		"no kind":       entry("a", nil),
		"unknown field": protowire.AppendVarint(protowire.AppendTag(entry("a", str("1")), 9, protowire.VarintType), 1),
		"bad UTF-8":     entry("a", str("\xff")),
		"bad key UTF-8": entry("\xff", str("x")),
		"truncated":     entry("a", str("1"))[:5],
	} {
		got, err := AppendStructWireJSON([]byte("x"), wire)
		if err == nil || string(got) != "x" {
			t.Errorf("%s: accepted (%q, %v)", name, got, err)
		}
	}
}

// A tool call written with its params from their encoding is the one
// ToolCallPayload writes around the same params as JSON; params the writer
// refuses are reported, not written; a bad other field is an error.
func TestToolCallPayloadStructWire(t *testing.T) {
	call := &smcpv1.ToolCallReq{Agent: "a\"g", ReqId: "r-1", Computer: "pc", ToolName: "echo", Timeout: 30}
	for _, js := range structWireSeeds {
		_, wire := structSeed(t, js)
		params, err := AppendStructWireJSON(nil, wire)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ToolCallPayload(call, params)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := ToolCallPayloadStructWire(call, wire)
		if err != nil || !ok || string(got) != string(want) {
			t.Errorf("%s:\ngot  %s (%v, %v)\nwant %s", js, got, ok, err, want)
		}
	}
	twice := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("a")))
	if got, ok, err := ToolCallPayloadStructWire(call, append(twice, twice...)); ok || err != nil || got != nil {
		t.Errorf("refused params: %q, %v, %v", got, ok, err)
	}
	bad := &smcpv1.ToolCallReq{Agent: "\xff", ReqId: "r", Computer: "pc", ToolName: "t"}
	if _, _, err := ToolCallPayloadStructWire(bad, nil); err == nil {
		t.Error("an agent name of invalid UTF-8 was written")
	}
}

func FuzzStructWireJSON(f *testing.F) {
	for _, js := range structWireSeeds {
		_, wire := structSeed(f, js)
		f.Add(wire)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		got, err := AppendStructWireJSON(nil, wire)
		if err != nil {
			return
		}
		s := &structpb.Struct{}
		if err := proto.Unmarshal(wire, s); err != nil {
			t.Fatalf("%q: written as %s, but does not decode: %v", wire, got, err)
		}
		want, err := appendStruct(nil, s, 0)
		if err != nil {
			t.Fatalf("%q: written as %s, but Marshal fails: %v", wire, got, err)
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", wire, got, want)
		}
	})
}
