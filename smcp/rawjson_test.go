package smcp

import (
	"errors"
	"strings"
	"testing"
)

// TestInvalidUTF8IsRefused: bytes that are not UTF-8 inside a string (stray
// continuation bytes, truncated sequences, overlong forms, surrogates
// encoded directly, code points beyond U+10FFFF) are refused with their
// offset, by CheckJSON and SplitArray alike; valid multi-byte text, an
// encoded U+FFFD and lone surrogate escapes (ASCII on the wire) are not.
func TestInvalidUTF8IsRefused(t *testing.T) {
	for _, c := range []struct {
		in string
		at int
	}{
		{"{\"a\":\"\xff\xc3\"}", 6},
		{"{\"a\":\"ok \xc3\"}", 9},          // truncated two-byte sequence at the end
		{"{\"a\":\"\xe4\xb8\"}", 6},         // truncated three-byte sequence
		{"{\"\xc0\xaf\":1}", 2},             // overlong '/'
		{"{\"a\":\"\xed\xa0\x80\"}", 6},     // U+D800 encoded directly (CESU/WTF-8)
		{"{\"a\":\"\xf4\x90\x80\x80\"}", 6}, // beyond U+10FFFF
		{"{\"a\":[\"é\",\"x\x80y\"]}", 13},  // stray continuation byte after valid text
	} {
		err := CheckJSON([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset != c.at || !strings.Contains(se.Msg, "invalid UTF-8") {
			t.Errorf("CheckJSON(%q) = %v, want invalid UTF-8 at byte %d", c.in, err, c.at)
		}
		if _, err := SplitArray([]byte("[" + c.in + "]")); err == nil {
			t.Errorf("SplitArray accepted %q", c.in)
		}
	}
	for _, in := range []string{
		`{"a":"合计 Größe 🙂"}`, "{\"a\":\"\xef\xbf\xbd\"}", `{"a":"\ud800"}`, `{"a":"\udfff\ud800x"}`,
	} {
		if err := CheckJSON([]byte(in)); err != nil {
			t.Errorf("CheckJSON(%q): %v", in, err)
		}
	}
	if err := CheckJSON([]byte("{\"a\":\"\xff\"}")); err == nil || !strings.Contains(err.Error(), "byte 0xff") {
		t.Errorf("the error names the byte: %v", err)
	}
}
