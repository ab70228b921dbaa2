package smcp

import (
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// resultWireCases are tool answers: those the direct encoder must take
// (fast true) and those it must leave to Unmarshal.
var resultWireCases = []struct {
	json string
	fast bool
}{
	{`{"content":[{"type":"text","text":"{\"text\":\"xxxx\"}"}],"isError":false}`, true},
	{`{"content":[],"isError":true}`, true},
	{`{}`, true},
	{` { "content" : [ { "type" : "text" , "text" : "a\u00e9\ud83d\ude00\n\"" } ] } `, true},
	{`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png","annotations":{"audience":["user",null,true,false,1.5e3,-0,12345678901234567890]}}]}`, true},
	{`{"structuredContent":{"a":[1,{"b":{}}],"c":"d"},"isError":false}`, true},
	{`{"structuredContent":"text"}`, true},
	{`{"structuredContent":[1,2,3]}`, true},
	{`{"meta":{"a2c_timeout":true}}`, true},
	{`{"_meta":{"a2c_timeout":true}}`, true},
	{`{"_meta":{"x":1},"meta":{"y":2}}`, true},
	{`{"meta":{"y":2},"_meta":{"x":1}}`, true},
	{`{"content":[{"k\u0041":"v","kA2":"w"}],"unknownKey":{"deep":[1,2]}}`, true},
	{`{"content":[{"é":"ü","ok":"\t"}]}`, true},
	// Left to Unmarshal (protojson's rules, or its errors).
	{`{"content":[{"a":1,"a":2}]}`, false},
	{`{"content":[{"k\u0041":1,"kA":2}]}`, false},
	{`{"content":[null]}`, false},
	{`{"structuredContent":null}`, false},
	{`{"isError":"yes"}`, false},
	{`{"content":[],"content":[]}`, false},
	{`{"content":[{"a":"\ud800"}]}`, false},
	{"{\"content\":[{\"a\":\"\xff\"}]}", false},
	{`{"content":[{"a":1e999}]}`, false},
	{`{"is_error":true}`, false},
	{`{"content":[]} x`, false},
	{`[]`, false},
}

// The bytes written from the JSON decode to the message Unmarshal reads
// from it, and whatever the encoder refuses is left untouched in dst.
func TestCallToolResultWireMatchesUnmarshal(t *testing.T) {
	for _, c := range resultWireCases {
		prefix := []byte("prefix")
		wire, err := AppendCallToolResultWire(prefix, []byte(c.json))
		if (err == nil) != c.fast {
			t.Errorf("%s: error %v, want fast path %v", c.json, err, c.fast)
		}
		if string(wire[:len(prefix)]) != "prefix" || (err != nil && len(wire) != len(prefix)) {
			t.Errorf("%s: dst prefix not kept: %q", c.json, wire)
		}
		if err != nil {
			continue
		}
		want := &smcpv1.CallToolResult{}
		if err := Unmarshal([]byte(c.json), want); err != nil {
			t.Errorf("%s: the encoder took what Unmarshal refuses: %v", c.json, err)
			continue
		}
		got := &smcpv1.CallToolResult{}
		if err := proto.Unmarshal(wire[len(prefix):], got); err != nil {
			t.Errorf("%s: written bytes do not decode: %v", c.json, err)
			continue
		}
		if !proto.Equal(want, got) {
			t.Errorf("%s: decoded result differs from Unmarshal's:\nwant %v\ngot  %v", c.json, prototext.Format(want), prototext.Format(got))
		}
	}
}

func FuzzCallToolResultWire(f *testing.F) {
	for _, c := range resultWireCases {
		f.Add([]byte(c.json))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		wire, err := AppendCallToolResultWire(nil, b)
		if err != nil {
			return
		}
		want := &smcpv1.CallToolResult{}
		if err := Unmarshal(b, want); err != nil {
			t.Fatalf("%q: the encoder took what Unmarshal refuses: %v", b, err)
		}
		got := &smcpv1.CallToolResult{}
		if err := proto.Unmarshal(wire, got); err != nil {
			t.Fatalf("%q: written bytes do not decode: %v", b, err)
		}
		if !proto.Equal(want, got) {
			t.Fatalf("%q: want %v, got %v", b, prototext.Format(want), prototext.Format(got))
		}
	})
}

// A text content holding JSON (what most tools answer) is escaped all
// through; its value is unescaped once into the writer's scratch, sized
// from the string, and copied into the output: one allocation for the
// answer, where growing a new buffer for each such string took four more.
func TestCallToolResultWireEscapedTextAllocs(t *testing.T) {
	answer := []byte(`{"content":[{"type":"text","text":"{\"text\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\",\"n\":\"\u00e9\"}"}],"isError":false}`)
	dst := make([]byte, 0, 1024)
	want, err := AppendCallToolResultWire(nil, answer)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		got, err := AppendCallToolResultWire(dst[:0], answer)
		if err != nil || string(got) != string(want) {
			t.Fatalf("AppendCallToolResultWire: %q, %v; want %q", got, err, want)
		}
	})
	if allocs > 1 {
		t.Errorf("%v allocations per answer, want at most 1", allocs)
	}
}
