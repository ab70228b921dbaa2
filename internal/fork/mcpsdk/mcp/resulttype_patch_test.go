// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md): a
// result made by middleware has the resultType of protocol 2026-07-28.

package mcp

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestMiddlewareResultHasResultType(t *testing.T) {
	ctx := context.Background()
	server := NewServer(&Implementation{Name: "s", Version: "1"}, &ServerOptions{
		Capabilities: &ServerCapabilities{Resources: &ResourceCapabilities{}},
	})
	// A server that reads every URI itself, as a proxy does, before the
	// go-sdk's lookup of listed resources.
	server.AddReceivingMiddleware(func(next MethodHandler) MethodHandler {
		return func(ctx context.Context, method string, req Request) (Result, error) {
			if method == "resources/read" {
				return &ReadResourceResult{Contents: []*ResourceContents{{URI: "x://y", Text: "z"}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	st, ct := NewInMemoryTransports()
	var log syncBuffer
	ss, err := server.Connect(ctx, &LoggingTransport{Transport: st, Writer: &log}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := NewClient(&Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != protocolVersion20260728 {
		t.Fatalf("client speaks %s", v)
	}
	if _, err := cs.ReadResource(ctx, &ReadResourceParams{URI: "x://y"}); err != nil {
		t.Fatal(err)
	}
	// The transport logs a message after sending it, so perhaps after the
	// client has read it.
	want := `"resultType":"complete"`
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var read string
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, `"contents"`) {
				read = line
			}
		}
		if strings.Contains(read, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("resources/read answered without %s:\n%s", want, log.String())
		}
	}
}
