// Package urisyntax holds the RFC 3986 pieces shared by the dpe:// and
// window:// parsers.
package urisyntax

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// SegmentSafe lists the characters besides ALPHA / DIGIT / "-._~" that stay
// literal in a host or path segment: RFC 3986 sub-delims and ":@". '/', '?',
// '#' and '%' are always encoded.
const SegmentSafe = "!$&'()*+,;=:@"

// HasScheme reports whether raw starts with scheme (case-insensitive, as RFC
// 3986 says) followed by "://".
func HasScheme(raw, scheme string) bool {
	n := len(scheme)
	return len(raw) >= n+3 && strings.EqualFold(raw[:n], scheme) && raw[n:n+3] == "://"
}

// WriteEscaped writes s to b, percent-encoding every byte that is neither
// unreserved nor in safe.
func WriteEscaped(b *strings.Builder, s, safe string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || strings.IndexByte(safe, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
}

// DecodeSegment percent-decodes one host or path segment. It returns a
// non-empty problem when the encoding is malformed or the decoded text is
// not UTF-8 (protobuf strings must be). Segments without '%' (the common
// case) are returned as they are.
func DecodeSegment(s string) (decoded, problem string) {
	// One pass decides the common case: plain ASCII needs no decoding and
	// is valid UTF-8.
	i := 0
	for i < len(s) && s[i] != '%' && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s, ""
	}
	if strings.IndexByte(s[i:], '%') >= 0 {
		var err error
		if s, err = url.PathUnescape(s); err != nil {
			return "", "has malformed percent-encoding"
		}
	}
	if !utf8.ValidString(s) {
		return "", "is not valid UTF-8"
	}
	return s, ""
}
