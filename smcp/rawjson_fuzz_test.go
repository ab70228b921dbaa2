package smcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckJSON holds the relay's JSON reader to encoding/json: it accepts
// exactly what json.Unmarshal into any accepts (valid JSON whose numbers
// fit a float64) when it is UTF-8 (json.Unmarshal replaces invalid bytes
// with U+FFFD, the relay refuses them), and SplitArray / ObjectFields agree
// with it.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `[1,"a",{"b":null}]`, `{"a":[1e308,-0,0.5E-3]}`, `"\ud800"`, `1e400`,
		`[NaN]`, `{"a":1}x`, `[1,]`, `{"a" : { } , "b":[ ]}`, strings.Repeat("9", 375), `"\u00e9\/"`,
		` [ 18446744073709551616 ] `, `{"a":"x\u0000"}`, "\"\x01\"", `tru`,
		"\"\xff\xc3\"", "[\"é\",\"\xc3\"]", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"", "{\"\xc0\xaf\":1}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		want := json.Unmarshal(b, &v) == nil && utf8.Valid(b)
		if got := CheckJSON(b) == nil; got != want {
			t.Fatalf("CheckJSON(%q) accepted=%v, encoding/json accepted=%v", b, got, want)
		}
		if elems, err := SplitArray(b); err == nil {
			arr, ok := v.([]any)
			if !want || !ok || len(arr) != len(elems) {
				t.Fatalf("SplitArray(%q) = %d elements, encoding/json %v", b, len(elems), v)
			}
			for _, e := range elems {
				if CheckJSON(e) != nil {
					t.Fatalf("element %q of %q", e, b)
				}
			}
		}
		n := 0
		if err := ObjectFields(b, func(string, json.RawMessage) error { n++; return nil }); err == nil {
			if _, ok := v.(map[string]any); !want || !ok {
				t.Fatalf("ObjectFields accepted %q", b)
			}
		}
	})
}

func TestRenameKey(t *testing.T) {
	for in, want := range map[string]string{
		`{"meta":{"a":1},"content":[]}`:                `{"_meta":{"a":1},"content":[]}`,
		`{ "content" : [{"meta":1}] , "meta" : null }`: `{ "content" : [{"meta":1}] , "_meta" : null }`,
		`{"x":"\"meta\"","meta":2}`:                    `{"x":"\"meta\"","_meta":2}`,
		`{"content":[{"meta":1}]}`:                     ``, // only a nested one
		`{"\u006deta":1}`:                              ``, // written with an escape
		`{}`:                                           ``,
	} {
		got := RenameKey([]byte(in), "meta", "_meta")
		if string(got) != want || (want == "") != (got == nil) {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
	}
}

// plainRun agrees with a byte-at-a-time count, rounded down to whole words,
// for every byte value at every place of a word, among plain bytes.
func TestPlainRun(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }
	for c := range 256 {
		for at := range 24 {
			b := []byte(strings.Repeat("A", 24))
			b[at] = byte(c)
			want := 0
			for want < len(b) && plain(b[want]) {
				want++
			}
			want -= want % 8
			if got := plainRun(b); got != want {
				t.Fatalf("byte %#x at %d: plainRun = %d, want %d", c, at, got, want)
			}
			if got := plainRun(string(b)); got != want {
				t.Fatalf("byte %#x at %d: plainRun(string) = %d, want %d", c, at, got, want)
			}
		}
	}
}
