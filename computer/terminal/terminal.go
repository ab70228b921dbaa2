// Package terminal asks the person at the computer's terminal: values of
// ${input:id} placeholders and confirmation of tool calls. Questions are
// asked one at a time; a question whose context ends is abandoned.
package terminal

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
)

// Terminal reads answers from in and writes questions to out.
type Terminal struct {
	out     io.Writer
	fd      int // of in when it is a terminal (hidden input), else -1
	lines   chan string
	readErr error
	mu      sync.Mutex // one question at a time
}

// Interactive reports whether stdin is a terminal.
func Interactive() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

// New reads answers from in, line by line, and writes questions to out.
func New(in io.Reader, out io.Writer) *Terminal {
	t := &Terminal{out: out, fd: -1, lines: make(chan string)}
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		t.fd = int(f.Fd())
	}
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			t.lines <- sc.Text()
		}
		t.readErr = sc.Err()
		if t.readErr == nil {
			t.readErr = io.EOF
		}
		close(t.lines)
	}()
	return t
}

// Stdio is a Terminal on stdin and stderr (stdout may carry data).
func Stdio() *Terminal { return New(os.Stdin, os.Stderr) }

var errClosed = errors.New("the terminal input is closed")

func (t *Terminal) ask(ctx context.Context, question string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprint(t.out, question)
	select {
	case line, ok := <-t.lines:
		if !ok {
			return "", fmt.Errorf("%w: %v", errClosed, t.readErr)
		}
		return strings.TrimSpace(line), nil
	case <-ctx.Done():
		fmt.Fprintln(t.out, "\n(question withdrawn)")
		return "", ctx.Err()
	}
}

// AskInput implements config.Asker: prompts for an input's value (a
// password without echo when in is a terminal; a pickString by number or
// value). An empty answer takes the default.
func (t *Terminal) AskInput(ctx context.Context, in config.Input) (string, error) {
	desc := in.Description
	if desc == "" {
		desc = in.ID
	}
	switch in.Type {
	case config.InputPickString:
		var b strings.Builder
		fmt.Fprintf(&b, "%s (input %q):\n", desc, in.ID)
		choices := in.Choices()
		for i, o := range choices {
			if o.Label == o.Value {
				fmt.Fprintf(&b, "  %d) %s\n", i+1, o.Value)
			} else {
				fmt.Fprintf(&b, "  %d) %s (%s)\n", i+1, o.Label, o.Value)
			}
		}
		b.WriteString("choose")
		if d, ok := in.Default.(string); ok && d != "" {
			fmt.Fprintf(&b, " [%s]", d)
		}
		b.WriteString(": ")
		for {
			ans, err := t.ask(ctx, b.String())
			if err != nil || ans == "" {
				return "", err
			}
			if n, err := strconv.Atoi(ans); err == nil && n >= 1 && n <= len(choices) {
				return choices[n-1].Value, nil
			}
			for _, o := range choices {
				if o.Value == ans {
					return o.Value, nil
				}
			}
			fmt.Fprintf(t.out, "%q is not one of the options\n", ans)
		}
	default:
		q := fmt.Sprintf("%s (input %q)", desc, in.ID)
		if d, ok := in.Default.(string); ok && d != "" && (in.Password == nil || !*in.Password) {
			q += " [" + d + "]"
		}
		q += ": "
		if in.Password != nil && *in.Password && t.fd >= 0 {
			return t.askHidden(q)
		}
		return t.ask(ctx, q)
	}
}

// askHidden reads a password without echo. It cannot be abandoned: a
// terminal read blocks until the user presses Enter.
func (t *Terminal) askHidden(question string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprint(t.out, question)
	b, err := term.ReadPassword(t.fd)
	fmt.Fprintln(t.out)
	return strings.TrimSpace(string(b)), err
}

// ConfirmToolCall implements tools.Asker.
func (t *Terminal) ConfirmToolCall(ctx context.Context, c tools.Call, e *tools.Entry) (bool, error) {
	args, _ := json.Marshal(c.Params)
	if len(args) > 500 {
		args = append(args[:500], "…"...)
	}
	ans, err := t.ask(ctx, fmt.Sprintf("\nAgent %q wants to call tool %q (MCP server %q, tool %q) with %s\nAllow? [y/N]: ",
		c.Agent, c.Name, e.Server, e.Tool.Name, args))
	if err != nil {
		return false, err
	}
	switch strings.ToLower(ans) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
