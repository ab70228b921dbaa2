package rpc

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// FuzzOfficeOf holds the first pass (officeOf) to the decoder it runs
// ahead of: whenever a body decodes, the first pass read it without error
// and found the same office_id. Were they to differ, the office checked
// before decoding would not be the one acted in (admit refuses that case,
// but only this target shows it does not happen).
func FuzzOfficeOf(f *testing.F) {
	for _, s := range []string{
		`{"office_id":"office-a","computer":"pc"}`,
		`{"computer":"pc","params":{"a":[[{"office_id":"x"}]]},"office_id":"b"}`,
		`{"office_id":null}`, `{"office_id":"a\u0062"}`, `{"officeId":"a"}`, `{}`, ` {"office_id" : "a" } `,
		`{"office_id":"a","office_id":"b"}`, `[]`, ``,
	} {
		f.Add([]byte(s), false)
	}
	for _, m := range []*smcpv1.CallToolRequest{
		{OfficeId: "office-a", Computer: "pc", ToolName: "t", ParamsJson: []byte(`{}`)},
		{OfficeId: "", Timeout: 5},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, true)
		f.Add(append(b, 0x0a, 0x01, 'z'), true) // office_id again: the last wins
	}
	f.Add(append(nestedGroups(99, 3, 3), 0x0a, 0x01, 'a'), true)
	f.Add(append(nestedGroups(99, 3, 2), 0x0a, 0x01, 'a'), true) // a group left open
	fd := (&smcpv1.CallToolRequest{}).ProtoReflect().Descriptor().Fields().ByName("office_id")
	f.Fuzz(func(t *testing.T, data []byte, binary bool) {
		raw := &rawRequest{data: data, binary: binary, read: true}
		got, scanErr := raw.officeOf(fd)
		msg := &smcpv1.CallToolRequest{}
		if err := raw.decode(msg); err != nil {
			return // refused either way
		}
		if scanErr != nil {
			t.Fatalf("decodes (office_id %q) but the first pass failed: %v", msg.GetOfficeId(), scanErr)
		}
		if got != msg.GetOfficeId() {
			t.Fatalf("first pass read office_id %q, decoding %q", got, msg.GetOfficeId())
		}
	})
}

// The decoders the fuzz target compares against are the bounded ones admit
// uses; make sure the bound itself is what refuses a deep body.
func TestDecodeDepthBound(t *testing.T) {
	deep := []byte(`{"office_id":"a","params":{"a":` + nested(MaxDecodeDepth) + `}}`)
	shallow := []byte(`{"office_id":"a","params":{"a":` + nested(MaxDecodeDepth/2-4) + `}}`)
	if err := (&rawRequest{data: deep, read: true}).decode(&smcpv1.CallToolRequest{}); err == nil {
		t.Fatal("a Struct nested beyond MaxDecodeDepth decoded")
	}
	if err := protojson.Unmarshal(deep, &smcpv1.CallToolRequest{}); err != nil {
		t.Fatalf("protojson without the bound refused it too (%v): the test shows nothing", err)
	}
	if err := (&rawRequest{data: shallow, read: true}).decode(&smcpv1.CallToolRequest{}); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
}

// The first pass is bounded where it skips: JSON nested beyond
// MaxDecodeDepth before office_id is refused (the decoder refuses it too),
// without the token reader's per-level state growing with the body; unknown
// protobuf groups, which the decoder keeps up to 10,000 deep, are skipped
// without recursion and read as the decoder reads them.
func TestFirstPassBounded(t *testing.T) {
	fd := (&smcpv1.CallToolRequest{}).ProtoReflect().Descriptor().Fields().ByName("office_id")
	deep := []byte(`{"x":` + strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + `,"office_id":"a"}`)
	if _, err := (&rawRequest{data: deep, read: true}).officeOf(fd); err == nil {
		t.Error("JSON nested 200,000 deep before office_id read to the end")
	}
	within := []byte(`{"x":` + nested(MaxDecodeDepth/2) + `,"office_id":"a"}`)
	if got, err := (&rawRequest{data: within, read: true}).officeOf(fd); err != nil || got != "a" {
		t.Errorf("JSON within the bound: %q, %v", got, err)
	}
	groups := append(nestedGroups(99, 9000, 9000), 0x0a, 0x01, 'a')
	raw := &rawRequest{data: groups, binary: true, read: true}
	got, err := raw.officeOf(fd)
	msg := &smcpv1.CallToolRequest{}
	if derr := raw.decode(msg); derr != nil || err != nil || got != "a" || msg.GetOfficeId() != "a" {
		t.Errorf("9,000 nested unknown groups: first pass %q, %v; decoder %q, %v", got, err, msg.GetOfficeId(), derr)
	}
	for _, bad := range [][]byte{nestedGroups(99, 3, 2), append(nestedGroups(99, 1, 0), protowire.AppendTag(nil, 98, protowire.EndGroupType)...)} {
		if _, err := (&rawRequest{data: bad, binary: true, read: true}).officeOf(fd); err == nil {
			t.Errorf("unbalanced groups % x read", bad)
		}
	}
}

// nestedGroups opens depth groups of field num and closes closed of them.
func nestedGroups(num protowire.Number, depth, closed int) []byte {
	var b []byte
	for range depth {
		b = protowire.AppendTag(b, num, protowire.StartGroupType)
	}
	for range closed {
		b = protowire.AppendTag(b, num, protowire.EndGroupType)
	}
	return b
}

func nested(depth int) string {
	s := "[]"
	for range depth - 1 {
		s = "[" + s + "]"
	}
	return s
}
