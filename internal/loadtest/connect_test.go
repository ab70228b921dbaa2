package loadtest

import (
	"bufio"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

func TestReadResponseHead(t *testing.T) {
	tests := []struct {
		name, in        string
		status, length  int
		closing, failed bool
	}{
		{name: "ok", in: "HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\ncontent-length: 12\r\n\r\n", status: 200, length: 12},
		{name: "error that closes", in: "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nConnection: close\r\n\r\n", status: 404, length: 2, closing: true},
		{name: "no length", in: "HTTP/1.1 200 OK\r\n\r\n", failed: true},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", failed: true},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", failed: true},
		{name: "HTTP/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", failed: true},
		{name: "bad header", in: "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", failed: true},
		{name: "cut short", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, length, closing, err := readResponseHead(bufio.NewReader(strings.NewReader(tt.in)))
			if tt.failed {
				if err == nil {
					t.Fatalf("accepted %q", tt.in)
				}
				return
			}
			if err != nil || status != tt.status || length != tt.length || closing != tt.closing {
				t.Fatalf("got %d %d %v %v, want %d %d %v", status, length, closing, err, tt.status, tt.length, tt.closing)
			}
		})
	}
}

func TestIsToolError(t *testing.T) {
	for _, want := range []bool{true, false} {
		b, err := proto.Marshal(&smcpv1.CallToolResponse{ReqId: "r", Result: &smcpv1.CallToolResult{IsError: new(want)}})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := isToolError(b); err != nil || got != want {
			t.Fatalf("isToolError = %v, %v; want %v", got, err, want)
		}
	}
	if _, err := isToolError([]byte{0xff}); err == nil {
		t.Fatal("accepted a malformed response")
	}
	if _, err := isToolError(nil); err == nil {
		t.Fatal("accepted a response without a result")
	}
}
