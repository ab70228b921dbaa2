package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
)

var placeholder = regexp.MustCompile(`\$\{input:([^}]*)\}`)

// EnvName is the environment variable that supplies input id:
// A2C_SMCP_ + the id upper-cased, every non-alphanumeric rune as "_".
func EnvName(id string) string {
	var b strings.Builder
	b.WriteString("A2C_SMCP_")
	for _, r := range strings.ToUpper(id) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Asker asks a person for an input's value. Resolvers without one never
// prompt.
type Asker interface {
	AskInput(ctx context.Context, in Input) (string, error)
}

// Resolver finds the values of inputs, in this order: the environment
// variable EnvName(id); for a command input, the command's output; a
// terminal prompt when an Asker is set; the input's default. Values are
// cached: each input is resolved once.
type Resolver struct {
	inputs map[string]Input
	lookup func(string) (string, bool)
	asker  Asker

	mu    sync.Mutex
	cache map[string]any
}

// NewResolver makes a resolver over inputs. lookupEnv defaults to
// os.LookupEnv; asker may be nil (not interactive).
func NewResolver(inputs []Input, lookupEnv func(string) (string, bool), asker Asker) *Resolver {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	m := make(map[string]Input, len(inputs))
	for _, in := range inputs {
		m[in.ID] = in
	}
	return &Resolver{inputs: m, lookup: lookupEnv, asker: asker, cache: map[string]any{}}
}

// ErrUnresolved is wrapped by errors for declared inputs that have no value.
var ErrUnresolved = errors.New("input has no value")

// Value resolves input id. found is false when no input has that id.
func (r *Resolver) Value(ctx context.Context, id string) (v any, found bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock() // one prompt at a time, and each input once
	in, ok := r.inputs[id]
	if !ok {
		return nil, false, nil
	}
	if v, ok := r.cache[id]; ok {
		return v, true, nil
	}
	v, err = r.resolve(ctx, in)
	if err != nil {
		return nil, true, err
	}
	r.cache[id] = v
	return v, true, nil
}

func (r *Resolver) resolve(ctx context.Context, in Input) (any, error) {
	env := EnvName(in.ID)
	if s, ok := r.lookup(env); ok {
		if in.Type == InputPickString && !in.hasChoice(s) {
			return nil, fmt.Errorf("input %q: %s=%q is not one of %v", in.ID, env, s, in.Choices())
		}
		return s, nil
	}
	if in.Type == InputCommand {
		return runCommand(ctx, in)
	}
	if r.asker != nil {
		s, err := r.asker.AskInput(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in.ID, err)
		}
		if s != "" {
			return s, nil
		}
	}
	if in.Default != nil {
		return in.Default, nil
	}
	return nil, fmt.Errorf("input %q (%s): %w; set %s or give it a default", in.ID, in.Description, ErrUnresolved, env)
}

func runCommand(ctx context.Context, in Input) (any, error) {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", in.Command)
	cmd.Env = os.Environ()
	for k, v := range in.Args {
		cmd.Env = append(cmd.Env, k+"="+stringify(v))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, fmt.Errorf("input %q: command %q failed: %w %s", in.ID, in.Command, err, msg)
	}
	return strings.TrimRight(string(out), "\r\n"), nil
}

// Render returns a copy of v with every ${input:id} placeholder replaced.
// A string that is exactly one placeholder takes the value itself (its own
// type); elsewhere the value is stringified. Placeholders naming no
// declared input stay literal and are listed in unknown.
func (r *Resolver) Render(ctx context.Context, v any) (out any, unknown []string, err error) {
	out, err = Render(v, func(id string) (any, bool, error) {
		val, found, err := r.Value(ctx, id)
		if !found && err == nil && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
		return val, found, err
	})
	return out, unknown, err
}

// Render replaces placeholders in v using lookup, which reports whether id
// is known; unknown placeholders stay literal.
func Render(v any, lookup func(id string) (any, bool, error)) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := Render(e, lookup)
			if err != nil {
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			c, err := Render(e, lookup)
			if err != nil {
				return nil, err
			}
			s[i] = c
		}
		return s, nil
	case string:
		if m := placeholder.FindStringSubmatchIndex(x); m != nil && m[0] == 0 && m[1] == len(x) {
			val, found, err := lookup(x[m[2]:m[3]])
			if err != nil || !found {
				return x, err
			}
			return val, nil
		}
		var firstErr error
		s := placeholder.ReplaceAllStringFunc(x, func(ph string) string {
			val, found, err := lookup(ph[len("${input:") : len(ph)-1])
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if err != nil || !found {
				return ph
			}
			return stringify(val)
		})
		return s, firstErr
	default:
		return v, nil
	}
}

func stringify(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}
