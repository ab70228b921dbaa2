package sioclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

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
	pc, err := Dial(ctx, Options{URL: r.URL, Logger: quiet})
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
	bot, err := Dial(ctx, Options{URL: r.URL, Logger: quiet})
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
