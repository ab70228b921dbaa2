package terminal

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

func TestAskInputAndConfirm(t *testing.T) {
	var out strings.Builder
	term := New(strings.NewReader("2\nvalue\n\nnope\nsafe\ny\nn\n"), &out)
	ctx := context.Background()
	pick := config.Input{Type: config.InputPickString, ID: "mode", Options: []string{"fast", "safe"}}
	if v, err := term.AskInput(ctx, pick); err != nil || v != "safe" {
		t.Fatalf("pick by number: %q %v", v, err)
	}
	if v, _ := term.AskInput(ctx, config.Input{Type: config.InputPromptString, ID: "x", Default: "d"}); v != "value" {
		t.Fatalf("prompt: %q", v)
	}
	if v, _ := term.AskInput(ctx, config.Input{Type: config.InputPromptString, ID: "y"}); v != "" {
		t.Fatalf("empty answer: %q", v)
	}
	if v, _ := term.AskInput(ctx, pick); v != "safe" || !strings.Contains(out.String(), `"nope" is not one of the options`) {
		t.Fatalf("pick by value after a bad answer: %q\n%s", v, out.String())
	}
	e := &tools.Entry{Name: "echo", Server: "s", Tool: &mcp.Tool{Name: "echo"}}
	for _, want := range []bool{true, false} {
		ok, err := term.ConfirmToolCall(ctx, tools.Call{Agent: "bot", Name: "echo", Params: map[string]any{"a": 1}}, e)
		if err != nil || ok != want {
			t.Fatalf("confirm: %v %v, want %v", ok, err, want)
		}
	}
	if !strings.Contains(out.String(), `Agent "bot" wants to call tool "echo"`) {
		t.Fatalf("question: %s", out.String())
	}
	if _, err := term.AskInput(ctx, config.Input{Type: config.InputPromptString, ID: "z"}); err == nil {
		t.Fatal("answer after EOF")
	}
}

func TestQuestionWithdrawnOnCancel(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	term := New(r, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := term.ConfirmToolCall(ctx, tools.Call{Name: "x"}, &tools.Entry{Tool: &mcp.Tool{Name: "x"}}); err == nil {
		t.Fatal("cancelled question answered")
	}
}
