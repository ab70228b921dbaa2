package config

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"
)

// CompileResultJQ compiles a result_jq program. Its input is the tool's
// CallToolResult as JSON; $server and $tool name the call's MCP server and
// tool.
func CompileResultJQ(program string) (*gojq.Code, error) {
	q, err := gojq.Parse(program)
	if err != nil {
		return nil, fmt.Errorf("result_jq: %w", err)
	}
	code, err := gojq.Compile(q, gojq.WithVariables([]string{"$server", "$tool"}))
	if err != nil {
		return nil, fmt.Errorf("result_jq: %w", err)
	}
	return code, nil
}

// ComputerSecretEnv reports whether an environment variable belongs to the
// computer itself: SMCP_* (the gateway API key, SMCP_API_KEY, and the
// command line's other settings) and A2C_SMCP_* (input values, often
// passwords). Such variables never reach an MCP server from the computer's
// environment, even when a configuration asks for them.
func ComputerSecretEnv(name string) bool {
	n := strings.ToUpper(name)
	return strings.HasPrefix(n, "SMCP_") || strings.HasPrefix(n, "A2C_SMCP_")
}

// ToolMeta is the per-tool configuration (PROTOCOL.md §5).
type ToolMeta struct {
	AutoApply       *bool    `json:"auto_apply,omitempty"`
	Alias           *string  `json:"alias,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	RetObjectMapper any      `json:"ret_object_mapper,omitempty"`
}

// Resolved is a server configuration with its placeholders rendered, ready
// to start.
type Resolved struct {
	Name            string              `json:"name"`
	Type            string              `json:"type"`
	Disabled        bool                `json:"disabled"`
	ForbiddenTools  []string            `json:"forbidden_tools"`
	ToolMeta        map[string]ToolMeta `json:"tool_meta"`
	DefaultToolMeta *ToolMeta           `json:"default_tool_meta,omitempty"`
	// VRL is the Python SDK's result transform (Vector Remap Language).
	// There is no VRL runtime in Go: a non-empty one fails the
	// configuration at load; see ResultJQ.
	VRL *string `json:"vrl,omitempty"`
	// ResultJQ is a jq program applied to the CallToolResult of each of
	// the server's tools (see computer/README.md); ResultJQCode is it
	// compiled, when set.
	ResultJQ     *string    `json:"result_jq,omitempty"`
	ResultJQCode *gojq.Code `json:"-"`

	// Exactly one is set, by Type.
	Stdio      *StdioParams      `json:"-"`
	SSE        *SSEParams        `json:"-"`
	Streamable *StreamableParams `json:"-"`
}

// StdioParams starts a server as a child process.
type StdioParams struct {
	Command string     `json:"command"`
	Args    StringList `json:"args"`
	Env     StringMap  `json:"env"`
	// InheritEnv names variables of the computer's environment the server
	// gets on top of the default set (PATH, HOME, locale...): a child
	// process does not see the rest of the computer's environment.
	InheritEnv           StringList `json:"inherit_env,omitempty"`
	Cwd                  *string    `json:"cwd"`
	Encoding             string     `json:"encoding"`
	EncodingErrorHandler string     `json:"encoding_error_handler"`
}

// SSEParams connects over HTTP+SSE. Timeouts are float seconds.
type SSEParams struct {
	URL            string    `json:"url"`
	Headers        StringMap `json:"headers"`
	Timeout        float64   `json:"timeout"`
	SSEReadTimeout float64   `json:"sse_read_timeout"`
}

// StreamableParams connects over streamable HTTP. Timeouts are ISO-8601
// durations ("PT30S").
type StreamableParams struct {
	URL              string    `json:"url"`
	Headers          StringMap `json:"headers"`
	Timeout          string    `json:"timeout"`
	SSEReadTimeout   string    `json:"sse_read_timeout"`
	TerminateOnClose bool      `json:"terminate_on_close"`
}

// StringMap is a map of strings that also accepts numbers and booleans as
// values (a placeholder may render to one).
type StringMap map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (m *StringMap) UnmarshalJSON(b []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*m = nil
		return nil
	}
	out := make(StringMap, len(raw))
	for k, v := range raw {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64, bool:
			out[k] = stringify(x)
		case nil:
			out[k] = ""
		default:
			return fmt.Errorf("%q: want a string, got %T", k, v)
		}
	}
	*m = out
	return nil
}

// StringList is a list of strings that also accepts numbers and booleans
// (YAML reads "args: [-p, 8080]" with a number).
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(b []byte) error {
	var raw []any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(StringList, 0, len(raw))
	for i, v := range raw {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case float64, bool, nil:
			out = append(out, stringify(x))
		default:
			return fmt.Errorf("[%d]: want a string, got %T", i, v)
		}
	}
	*l = out
	return nil
}

// Resolve renders the server's placeholders with r and decodes the result.
// Unknown input ids stay literal and are returned in unresolved.
func (s *Server) Resolve(ctx context.Context, r *Resolver) (res *Resolved, unresolved []string, err error) {
	rendered, unresolved, err := r.Render(ctx, s.raw)
	if err != nil {
		return nil, unresolved, fmt.Errorf("server %q: %w", s.Name, err)
	}
	res, err = decodeServer(rendered.(map[string]any))
	return res, unresolved, err
}

func decodeServer(obj map[string]any) (*Resolved, error) {
	name, _ := obj["name"].(string)
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", name, err)
	}
	var s struct {
		Resolved
		Params json.RawMessage `json:"server_parameters"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("server %q: %w", name, err)
	}
	res := s.Resolved
	if res.VRL != nil && strings.TrimSpace(*res.VRL) != "" {
		return nil, fmt.Errorf("server %q: vrl is not supported: this computer has no VRL runtime (VRL exists only in Rust); "+
			"transform tool results with result_jq, a jq program (see computer/README.md), or remove vrl", name)
	}
	if res.ResultJQ != nil && strings.TrimSpace(*res.ResultJQ) != "" {
		code, err := CompileResultJQ(*res.ResultJQ)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		res.ResultJQCode = code
	}
	strict := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(s.Params))
		d.DisallowUnknownFields()
		if err := d.Decode(v); err != nil {
			return fmt.Errorf("server %q: server_parameters: %w", name, err)
		}
		return nil
	}
	switch res.Type {
	case TypeStdio:
		res.Stdio = &StdioParams{}
		if err := strict(res.Stdio); err != nil {
			return nil, err
		}
		if res.Stdio.Command == "" {
			return nil, fmt.Errorf("server %q: stdio needs a command", name)
		}
		for _, v := range res.Stdio.InheritEnv {
			if ComputerSecretEnv(v) {
				return nil, fmt.Errorf("server %q: inherit_env: %s is the computer's own (the gateway API key and input values live under SMCP_ and A2C_SMCP_) and is never passed to MCP servers; "+
					"give the server a value of its own in env", name, v)
			}
			if v == "" || strings.ContainsAny(v, "=\x00") {
				return nil, fmt.Errorf("server %q: inherit_env: %q is not a variable name", name, v)
			}
		}
	case TypeSSE:
		res.SSE = &SSEParams{}
		if err := strict(res.SSE); err != nil {
			return nil, err
		}
		if res.SSE.URL == "" {
			return nil, fmt.Errorf("server %q: sse needs a url", name)
		}
		if res.SSE.Timeout < 0 || res.SSE.SSEReadTimeout < 0 {
			return nil, fmt.Errorf("server %q: negative timeout", name)
		}
	case TypeStreamable:
		res.Streamable = &StreamableParams{}
		if err := strict(res.Streamable); err != nil {
			return nil, err
		}
		if res.Streamable.URL == "" {
			return nil, fmt.Errorf("server %q: streamable needs a url", name)
		}
		for _, d := range []string{res.Streamable.Timeout, res.Streamable.SSEReadTimeout} {
			if d == "" {
				continue
			}
			if _, err := ParseISODuration(d); err != nil {
				return nil, fmt.Errorf("server %q: %w", name, err)
			}
		}
	default:
		return nil, fmt.Errorf("server %q: unknown type %q", name, res.Type)
	}
	if res.ToolMeta == nil {
		res.ToolMeta = map[string]ToolMeta{}
	}
	if res.ForbiddenTools == nil {
		res.ForbiddenTools = []string{}
	}
	return &res, nil
}

// ConnectTimeout is how long connecting may take (0: the caller's default).
func (r *Resolved) ConnectTimeout() time.Duration {
	switch {
	case r.SSE != nil && r.SSE.Timeout > 0:
		return time.Duration(r.SSE.Timeout * float64(time.Second))
	case r.Streamable != nil && r.Streamable.Timeout != "":
		d, _ := ParseISODuration(r.Streamable.Timeout)
		return d
	}
	return 0
}

// ParseISODuration parses the ISO-8601 durations the Python SDK writes
// (pydantic timedelta): PnDTnHnMnS with fractional seconds; years and
// months are refused, as they have no fixed length.
func ParseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid ISO-8601 duration %q (want e.g. PT30S)", s)
	in := s
	neg := false
	if len(in) > 0 && in[0] == '-' {
		neg, in = true, in[1:]
	}
	if len(in) < 2 || in[0] != 'P' {
		return 0, bad
	}
	in = in[1:]
	var total float64
	inTime := false
	seen := false
	for len(in) > 0 {
		if in[0] == 'T' {
			if inTime {
				return 0, bad
			}
			inTime, in = true, in[1:]
			continue
		}
		i := 0
		for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
			i++
		}
		if i == 0 || i == len(in) {
			return 0, bad
		}
		n, err := strconv.ParseFloat(in[:i], 64)
		if err != nil {
			return 0, bad
		}
		unit := in[i]
		in = in[i+1:]
		switch {
		case !inTime && unit == 'D':
			total += n * 86400
		case !inTime && unit == 'W':
			total += n * 7 * 86400
		case inTime && unit == 'H':
			total += n * 3600
		case inTime && unit == 'M':
			total += n * 60
		case inTime && unit == 'S':
			total += n
		default:
			return 0, bad
		}
		seen = true
	}
	if !seen {
		return 0, bad
	}
	d := time.Duration(total * float64(time.Second))
	if neg {
		return 0, errors.New("negative duration " + strconv.Quote(s))
	}
	return d, nil
}
