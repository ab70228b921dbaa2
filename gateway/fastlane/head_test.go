package fastlane

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

var testPaths = map[string]string{"/svc/Call": "/svc/Call"}

const okHead = "POST /svc/Call HTTP/1.1\r\nHost: gw\r\nContent-Type: application/proto\r\nContent-Length: 3\r\nX-Api-Key: k\r\n\r\n"

func TestParseHead(t *testing.T) {
	h, ok := parseHead([]byte(okHead), testPaths, 1024)
	if !ok {
		t.Fatal("the plain request was not taken")
	}
	want := http.Header{"Content-Type": {"application/proto"}, "Content-Length": {"3"}, "X-Api-Key": {"k"}}
	if h.path != "/svc/Call" || h.host != "gw" || h.length != 3 || !reflect.DeepEqual(h.header, want) {
		t.Fatalf("parsed %+v", h)
	}
}

// Every request the lane leaves to net/http: parseHead must say no, so that
// net/http's answer (or error) is the one the client gets.
func TestParseHeadLeavesToNetHTTP(t *testing.T) {
	swap := func(old, new string) string { return strings.Replace(okHead, old, new, 1) }
	for _, tc := range []struct{ name, head string }{
		{"GET", swap("POST", "GET")},
		{"other path", swap("/svc/Call", "/svc/Other")},
		{"query", swap("/svc/Call", "/svc/Call?x=1")},
		{"absolute form", swap("/svc/Call", "http://gw/svc/Call")},
		{"HTTP/1.0", swap("HTTP/1.1", "HTTP/1.0")},
		{"bare LF", strings.ReplaceAll(okHead, "\r\n", "\n")},
		{"obs-fold", swap("X-Api-Key: k\r\n", "X-Api-Key: k\r\n  more\r\n")},
		{"space before colon", swap("X-Api-Key:", "X-Api-Key :")},
		{"non-ASCII value", swap("X-Api-Key: k", "X-Api-Key: k\xe9")},
		{"control byte", swap("X-Api-Key: k", "X-Api-Key: k\x01")},
		{"no Host", swap("Host: gw\r\n", "")},
		{"malformed Host", swap("Host: gw", "Host: g w")},
		{"two Hosts", swap("Host: gw\r\n", "Host: gw\r\nHost: other\r\n")},
		{"no Content-Length", swap("Content-Length: 3\r\n", "")},
		{"two Content-Lengths", swap("Content-Length: 3\r\n", "Content-Length: 3\r\nContent-Length: 3\r\n")},
		{"signed Content-Length", swap("Content-Length: 3", "Content-Length: +3")},
		{"huge Content-Length", swap("Content-Length: 3", "Content-Length: 99999999999999999999")},
		{"body over the limit", swap("Content-Length: 3", "Content-Length: 1025")},
		{"chunked", swap("Content-Length: 3\r\n", "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n")},
		{"Expect", swap("X-Api-Key: k\r\n", "Expect: 100-continue\r\n")},
		{"Upgrade", swap("X-Api-Key: k\r\n", "Upgrade: websocket\r\n")},
		{"Connection: close", swap("X-Api-Key: k\r\n", "Connection: close\r\n")},
		{"streaming content type", swap("application/proto", "application/connect+proto")},
		{"gRPC-Web", swap("application/proto", "application/grpc-web+proto")},
		{"no Content-Type", swap("Content-Type: application/proto\r\n", "")},
		{"bytes after the head", okHead + "x"},
		{"h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, ok := parseHead([]byte(tc.head), testPaths, 1024); ok {
				t.Fatalf("taken: %+v", h)
			}
		})
	}
}

// FuzzParseHead checks that every head the lane takes is one net/http reads
// the same way: same target, host, headers and body length, no other
// framing. A disagreement would let a request mean one thing to the lane and
// another to net/http.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte(okHead))
	f.Add([]byte(strings.Replace(okHead, "X-Api-Key: k", "x-api-key:  k \t", 1)))
	f.Add([]byte(strings.Replace(okHead, "application/proto", "Application/JSON; charset=UTF-8", 1)))
	f.Add([]byte(strings.Replace(okHead, "X-Api-Key: k\r\n", "Connection: Keep-Alive\r\nA: 1\r\na: 2\r\n", 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := parseHead(b, testPaths, 1<<20)
		if !ok {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			t.Fatalf("taken by the lane, refused by net/http: %v\n%q", err, b)
		}
		switch {
		case req.Method != http.MethodPost, req.URL.Path != h.path, req.RequestURI != h.path, req.URL.RawQuery != "":
			t.Fatalf("target: net/http %s %q, lane %q", req.Method, req.RequestURI, h.path)
		case req.Host != h.host, !httpguts.ValidHostHeader(req.Host): // the server's own check
			t.Fatalf("host: net/http %q, lane %q", req.Host, h.host)
		case req.ContentLength != int64(h.length) || len(req.TransferEncoding) != 0 || req.Close:
			t.Fatalf("framing: net/http length %d te %v close %v, lane %d", req.ContentLength, req.TransferEncoding, req.Close, h.length)
		case !reflect.DeepEqual(req.Header, h.header):
			t.Fatalf("headers: net/http %v, lane %v", req.Header, h.header)
		}
	})
}

func TestCommonKeysAreCanonical(t *testing.T) {
	for _, k := range commonKeys {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("%q is not canonical (%q)", k, c)
		}
		if got := canonicalKey([]byte(strings.ToLower(k))); got != k {
			t.Errorf("canonicalKey(%q) = %q", strings.ToLower(k), got)
		}
	}
}
