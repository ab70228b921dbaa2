package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/itchyny/gojq"

	"github.com/smcpgw/smcp-gateway/smcp"
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

// ToolMeta is the per-tool configuration (PROTOCOL.md §5): the model's.
type ToolMeta = smcp.ToolMeta

// Resolved is a server configuration with its placeholders rendered, ready
// to start: the one configuration model (smcp.ServerConfig, see the package
// doc) plus what the computer compiles from it. It is not completed with
// the SDK's defaults: a zero timeout is the computer's own default.
type Resolved struct {
	smcp.ServerConfig
	// ResultJQCode is ResultJQ compiled, when set (see computer/README.md).
	ResultJQCode *gojq.Code `json:"-"`
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
	model, err := smcp.DecodeServerConfig(b)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", name, err)
	}
	res := Resolved{ServerConfig: *model}
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
	switch p := res.Params; {
	case p.Stdio != nil:
		if p.Stdio.Command == "" {
			return nil, fmt.Errorf("server %q: stdio needs a command", name)
		}
		for _, v := range p.Stdio.InheritEnv {
			if ComputerSecretEnv(v) {
				return nil, fmt.Errorf("server %q: inherit_env: %s is the computer's own (the gateway API key and input values live under SMCP_ and A2C_SMCP_) and is never passed to MCP servers; "+
					"give the server a value of its own in env", name, v)
			}
			if v == "" || strings.ContainsAny(v, "=\x00") {
				return nil, fmt.Errorf("server %q: inherit_env: %q is not a variable name", name, v)
			}
		}
	case p.SSE != nil:
		if p.SSE.URL == "" {
			return nil, fmt.Errorf("server %q: sse needs a url", name)
		}
		if p.SSE.Timeout < 0 || p.SSE.SSEReadTimeout < 0 {
			return nil, fmt.Errorf("server %q: negative timeout", name)
		}
	case p.Streamable != nil:
		if p.Streamable.URL == "" {
			return nil, fmt.Errorf("server %q: streamable needs a url", name)
		}
		for _, d := range []smcp.Duration{p.Streamable.Timeout, p.Streamable.SSEReadTimeout} {
			if d == "" {
				continue
			}
			if _, err := ParseISODuration(string(d)); err != nil {
				return nil, fmt.Errorf("server %q: %w", name, err)
			}
		}
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
	case r.Params.SSE != nil && r.Params.SSE.Timeout > 0:
		return time.Duration(r.Params.SSE.Timeout * float64(time.Second))
	case r.Params.Streamable != nil && r.Params.Streamable.Timeout != "":
		d, _ := ParseISODuration(string(r.Params.Streamable.Timeout))
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
