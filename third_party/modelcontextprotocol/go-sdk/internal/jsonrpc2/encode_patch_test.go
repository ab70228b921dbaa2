// Tests of the local patch (third_party/modelcontextprotocol/PATCHED.md): a
// response made by NewResponse is encoded without encoding its result again,
// to the same bytes as upstream's path.

package jsonrpc2

import (
	"bytes"
	"testing"
)

func TestResultEncodedOnceSameBytes(t *testing.T) {
	results := []any{
		map[string]any{"content": []any{map[string]any{"type": "text", "text": "<a href=\"x\">&</a> \u2028 é"}}},
		"plain",
		[]int{1, 2, 3},
		map[string]any{},
	}
	ids := []ID{Int64ID(0), Int64ID(-7), Int64ID(1 << 60), StringID("abc"), StringID("quote\" <tag> \n ünï")}
	for _, id := range ids {
		for _, res := range results {
			fast, err := NewResponse(id, res, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeMessage(fast)
			if err != nil {
				t.Fatal(err)
			}
			// The same response not made by NewResponse takes the generic path.
			want, err := EncodeMessage(&Response{ID: fast.ID, Result: fast.Result})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("id %v result %v:\n got %s\nwant %s", id.value, res, got, want)
			}
			back, err := DecodeMessage(got)
			if err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if r := back.(*Response); r.ID != id || !bytes.Equal(r.Result, fast.Result) {
				t.Errorf("%s decodes to id %v result %s", got, r.ID.value, r.Result)
			}
		}
	}
}

func TestResultEncodedOnceErrorsAndNoIDUnchanged(t *testing.T) {
	errResp, _ := NewResponse(Int64ID(3), nil, NewError(-32000, "boom"))
	noID, _ := NewResponse(ID{}, "x", nil)
	for _, r := range []*Response{errResp, noID} {
		got, err := EncodeMessage(r)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := EncodeMessage(&Response{ID: r.ID, Result: r.Result, Error: r.Error})
		if !bytes.Equal(got, want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
