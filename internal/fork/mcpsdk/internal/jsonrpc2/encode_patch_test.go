// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md): a
// successful response is encoded without reflection over its envelope, to
// the same bytes as upstream's path.

package jsonrpc2

import (
	"bytes"
	"encoding/json"
	"testing"
)

// upstreamEncoding is EncodeMessage as upstream wrote it.
func upstreamEncoding(t *testing.T, msg Message) []byte {
	t.Helper()
	wire := wireCombined{VersionTag: wireVersion}
	msg.marshal(&wire)
	data, err := jsonMarshal(&wire)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestResultEncodingAsUpstream(t *testing.T) {
	var results []json.RawMessage
	for _, v := range []any{
		map[string]any{"content": []any{map[string]any{"type": "text", "text": "<a href=\"x\">&</a> é"}}},
		"plain", []int{1, 2, 3}, map[string]any{},
	} {
		r, err := marshalToRaw(v)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
	}
	// Results not made by NewResponse: white space, a raw U+2028, HTML.
	results = append(results, json.RawMessage("{ \"a\" : [ 1 ,\n 2 ] ,\"s\":\"x\u2028y <&>\" }"), json.RawMessage(` "t" `))
	ids := []ID{Int64ID(0), Int64ID(-7), Int64ID(1 << 60), StringID("abc"), StringID("quote\" <tag> \n ünï")}
	for _, id := range ids {
		for _, res := range results {
			r := &Response{ID: id, Result: res}
			got, err := EncodeMessage(r)
			if err != nil {
				t.Fatal(err)
			}
			if want := upstreamEncoding(t, r); !bytes.Equal(got, want) {
				t.Errorf("id %v result %s:\n got %s\nwant %s", id.value, res, got, want)
			}
			back, err := DecodeMessage(got)
			if err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if b := back.(*Response); b.ID != id {
				t.Errorf("%s decodes to id %v", got, b.ID.value)
			}
		}
	}
}

// A response made by NewResponse is written without compacting its result
// again: the bytes are still upstream's, also for a result whose JSON was
// written with white space and HTML characters (encoding/json compacts it
// when NewResponse marshals it).
func TestNewResponseEncodingAsUpstream(t *testing.T) {
	for _, v := range []any{
		map[string]any{"content": []any{map[string]any{"type": "text", "text": "<a href=\"x\">&</a> é\u2028"}}},
		json.RawMessage("{ \"a\" : [ 1 ,\n 2 ] ,\"s\":\"x\u2028y <&>\" }"), "plain", nil,
	} {
		r, err := NewResponse(StringID("q\"<>"), v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.compact {
			t.Fatalf("%v: NewResponse's result not marked compact", v)
		}
		got, err := EncodeMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := upstreamEncoding(t, r); !bytes.Equal(got, want) {
			t.Errorf("result %v:\n got %s\nwant %s", v, got, want)
		}
	}
}

func TestResultEncodingRefusesWhatUpstreamRefuses(t *testing.T) {
	if _, err := EncodeMessage(&Response{ID: Int64ID(1), Result: json.RawMessage(`{"a":`)}); err == nil {
		t.Error("an invalid result was encoded")
	}
	errResp, _ := NewResponse(Int64ID(3), nil, NewError(-32000, "boom"))
	noID, _ := NewResponse(ID{}, "x", nil)
	for _, r := range []*Response{errResp, noID} {
		got, err := EncodeMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := upstreamEncoding(t, r); !bytes.Equal(got, want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
