package urisyntax

import (
	"net/url"
	"strings"
	"testing"
)

func TestWriteEscaped(t *testing.T) {
	for in, want := range map[string]string{
		"abc-._~XYZ09": "abc-._~XYZ09",
		"a/b?c#d%e":    "a%2Fb%3Fc%23d%25e",
		"x y":          "x%20y",
		"k=v&w;p:q@r+": "k=v&w;p:q@r+",
		"年":            "%E5%B9%B4",
	} {
		var b strings.Builder
		WriteEscaped(&b, in, SegmentSafe)
		if b.String() != want {
			t.Errorf("WriteEscaped(%q) = %q, want %q", in, b.String(), want)
		}
		if back, err := url.PathUnescape(b.String()); err != nil || back != in {
			t.Errorf("PathUnescape(%q) = %q, %v", b.String(), back, err)
		}
	}
}

func TestHasScheme(t *testing.T) {
	for raw, want := range map[string]bool{"dpe://x": true, "DPE://": true, "dpe:/x": false, "dp": false, "dpex://": false} {
		if HasScheme(raw, "dpe") != want {
			t.Errorf("HasScheme(%q) = %v", raw, !want)
		}
	}
}

func TestDecodeSegment(t *testing.T) {
	tests := []struct{ in, want, problem string }{
		{"plain-ascii", "plain-ascii", ""},
		{"", "", ""},
		{"a%2Fb", "a/b", ""},
		{"年报", "年报", ""},
		{"年%20报", "年 报", ""},
		{"a+b", "a+b", ""},
		{"%zz", "", "has malformed percent-encoding"},
		{"a%2", "", "has malformed percent-encoding"},
		{"\xff", "", "is not valid UTF-8"},
		{"%FF", "", "is not valid UTF-8"},
		{"ok%C3%A9", "oké", ""},
	}
	for _, tc := range tests {
		got, problem := DecodeSegment(tc.in)
		if got != tc.want || problem != tc.problem {
			t.Errorf("DecodeSegment(%q) = %q, %q; want %q, %q", tc.in, got, problem, tc.want, tc.problem)
		}
	}
}
