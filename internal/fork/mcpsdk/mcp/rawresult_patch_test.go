// Tests of the local patch (internal/fork/mcpsdk/PATCHED.md): a
// RawCallToolResult reaches the client as the bytes it was made of.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logging transport's writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRawCallToolResultSentAsIs(t *testing.T) {
	// Member order, spacing inside strings, an unknown member and an
	// annotation the typed result would reorder or drop.
	raw := `{"isError":true,"content":[{"text":"a  <b>","type":"text","annotations":{"priority":0.5}}],"x-extra":[1,2]}`
	ctx := context.Background()
	server := NewServer(&Implementation{Name: "s", Version: "1"}, nil)
	server.AddTool(&Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *CallToolRequest) (*CallToolResult, error) {
			return RawCallToolResult(json.RawMessage(raw), true), nil
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
	res, err := cs.CallTool(ctx, &CallToolParams{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// The in-memory client speaks 2026-07-28, whose result type the session
	// adds in front. The transport logs a message after sending it, so
	// perhaps after the client has read it.
	want := `"result":{"resultType":"complete",` + raw[1:] + `}`
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not write the result as it is:\n%s", log.String())
		}
	}
	text, ok := res.Content[0].(*TextContent)
	if !res.IsError || !ok || text.Text != "a  <b>" || text.Annotations == nil || text.Annotations.Priority != 0.5 {
		t.Errorf("client read %+v", res)
	}
}

func TestRawCallToolResultWithResultType(t *testing.T) {
	for raw, want := range map[string]string{
		`{"content":[]}`:     `{"resultType":"complete","content":[]}`,
		`{ }`:                `{"resultType":"complete"}`,
		`{"isError":false} `: `{"resultType":"complete","isError":false}`,
	} {
		r := RawCallToolResult(json.RawMessage(raw), false)
		r.setResultType(resultTypeComplete)
		got, err := json.Marshal(r)
		if err != nil || string(got) != want {
			t.Errorf("%s: got %s (%v), want %s", raw, got, err, want)
		}
	}
}
