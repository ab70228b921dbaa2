package sioclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/sioclient"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A request's handler context ends when the connection that delivered it
// drops: its answer could not go back (an ack belongs to its connection),
// so a computer's tool call is cancelled instead of running to its end for
// nobody. The client itself lives on, reconnecting.
func TestHandlerEndsWithItsConnection(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, ShutdownGrace: 200 * time.Millisecond}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: r.URL, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	started, ended := make(chan struct{}), make(chan error, 1)
	pc.Handle(smcp.EventToolCall, func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	if err := pc.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	bot, err := sioclient.Dial(ctx, sioclient.Options{URL: r.URL, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()
	if err := bot.JoinOffice(ctx, smcp.RoleAgent, "bot", "o"); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = bot.Request(ctx, smcp.EventToolCall, json.RawMessage(`{"agent":"bot","req_id":"r1","computer":"pc","tool_name":"t","params":{},"timeout":30}`))
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the call never reached the computer")
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler's context did not end when its connection dropped")
	}
	select {
	case <-pc.Done():
		t.Errorf("the client ended with its connection: %v", pc.Err())
	default:
	}
}

// Payloads cross the client byte for byte both ways: a request reaches the
// computer's handler as the agent wrote it, and the answer reaches the
// agent as the computer wrote it (key order, <, > and & unescaped), each
// scanned once, not decoded into Go values and encoded again (which
// re-sorted keys and escaped HTML, and cost a blob chunk's 350 KB several
// passes at each end).
func TestPayloadsCrossByteForByte(t *testing.T) {
	r, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	const (
		req = `{"req_id":"r1","computer":"pc","agent":"bot","blob_handle":"<h&>","chunk_offset":0}`
		ans = `{"req_id":"r1","blob":"<&>","eof":true,"blob_handle":"<h&>","total_size":3}`
	)
	pc, err := sioclient.Dial(ctx, sioclient.Options{URL: r.URL, Version: "0.4.0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	got := make(chan string, 1)
	pc.Handle(smcp.EventGetBlob, func(_ context.Context, payload json.RawMessage) (any, error) {
		got <- string(payload)
		return json.RawMessage(ans), nil
	})
	if err := pc.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	bot, err := sioclient.Dial(ctx, sioclient.Options{URL: r.URL, Version: "0.4.0", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer bot.Close()
	if err := bot.JoinOffice(ctx, smcp.RoleAgent, "bot", "o"); err != nil {
		t.Fatal(err)
	}
	answer, err := bot.Request(ctx, smcp.EventGetBlob, json.RawMessage(req))
	if err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != req {
		t.Errorf("the computer got\n%s\nthe agent sent\n%s", p, req)
	}
	if string(answer) != ans {
		t.Errorf("the agent got\n%s\nthe computer answered\n%s", answer, ans)
	}
}
