package fastlane

import (
	"bytes"
	"net/http"
	"net/textproto"
	"strconv"

	"golang.org/x/net/http/httpguts"
)

// head is a request head the lane takes: a plain HTTP/1.1 POST of a Connect
// unary call to one of its paths, with a Content-Length body.
type head struct {
	path   string
	host   string
	header http.Header
	length int
}

// parseHead reads a complete request head (up to and including the blank
// line). ok is false for anything the lane leaves to net/http: another
// method, path, version or content type, chunked or absent framing,
// Expect, Upgrade, Connection other than keep-alive, a missing or repeated
// Host, and every byte net/http might read differently (bare LF, obs-fold,
// non-ASCII, control bytes). So net/http answers every unusual request
// itself, errors included, and the two never disagree on where a request
// ends.
func parseHead(b []byte, paths map[string]string, maxBody int) (h head, ok bool) {
	line, rest, found := bytes.Cut(b, crlf)
	if !found {
		return h, false
	}
	target, found := bytes.CutPrefix(line, []byte("POST "))
	if !found {
		return h, false
	}
	target, found = bytes.CutSuffix(target, []byte(" HTTP/1.1"))
	if h.path = paths[string(target)]; !found || h.path == "" {
		return h, false
	}
	// One string holds every value: a head costs one allocation for them.
	text := string(rest)
	values := make([]string, 0, 8)
	h.header = make(http.Header, 8)
	h.length = -1
	hosts, types := 0, 0
	for at := 0; ; {
		n := bytes.Index(rest[at:], crlf)
		if n < 0 {
			return h, false
		}
		line, start := rest[at:at+n], at
		at += n + 2
		if len(line) == 0 {
			if at != len(rest) {
				return h, false
			}
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 || !validName(line[:colon]) {
			return h, false
		}
		i, j := colon+1, len(line)
		for i < j && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		for j > i && (line[j-1] == ' ' || line[j-1] == '\t') {
			j--
		}
		value := line[i:j]
		if !validValue(value) {
			return h, false
		}
		key := canonicalKey(line[:colon])
		v := text[start+i : start+j]
		switch key {
		case "Host":
			if !httpguts.ValidHostHeader(v) {
				return h, false // net/http answers 400
			}
			hosts++
			h.host = v
			continue // net/http keeps Host in Request.Host only
		case "Content-Length":
			if h.length >= 0 {
				return h, false
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxBody || !allDigits(value) {
				return h, false
			}
			h.length = n
		case "Content-Type":
			types++
			if !unaryContentType(value) {
				return h, false
			}
		case "Connection":
			if !bytes.EqualFold(value, []byte("keep-alive")) {
				return h, false
			}
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer", "Te":
			return h, false
		}
		if prev, ok := h.header[key]; ok {
			h.header[key] = append(prev, v)
			continue
		}
		values = append(values, v)
		h.header[key] = values[len(values)-1 : len(values) : len(values)]
	}
	if hosts != 1 || types != 1 || h.length < 0 {
		return h, false
	}
	return h, true
}

// canonicalKey is textproto.CanonicalMIMEHeaderKey of a valid name, without
// an allocation for the names Connect clients send.
func canonicalKey(name []byte) string {
	for _, k := range commonKeys {
		if len(name) == len(k) && bytes.EqualFold(name, []byte(k)) {
			return k
		}
	}
	return textproto.CanonicalMIMEHeaderKey(string(name))
}

// commonKeys are canonical (TestCommonKeysAreCanonical).
var commonKeys = [...]string{
	"Host", "Content-Type", "Content-Length", "Content-Encoding", "Accept-Encoding", "Accept",
	"Connect-Protocol-Version", "Connect-Timeout-Ms", "Connect-Content-Encoding",
	"Connect-Accept-Encoding", "User-Agent", "Authorization", "X-Api-Key", "X-Smcp-Agent",
	"Connection", "Traceparent", "Tracestate",
}

var crlf = []byte("\r\n")

// unaryContentType reports whether v is the content type of a Connect
// unary call (streaming calls and gRPC use other types).
func unaryContentType(v []byte) bool {
	for _, t := range []string{"application/proto", "application/json", "application/json; charset=utf-8"} {
		if bytes.EqualFold(v, []byte(t)) {
			return true
		}
	}
	return false
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// validName reports whether b is an RFC 9110 token.
func validName(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return len(b) > 0
}

// validValue reports whether b holds only visible ASCII, spaces and tabs.
// net/http also takes bytes >= 0x80; such requests go to it.
func validValue(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
