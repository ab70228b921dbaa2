// Package config reads a computer's configuration: the MCP servers it hosts
// and the inputs their ${input:id} placeholders refer to.
//
// Two file shapes are accepted, as JSON or YAML:
//
//   - the A2C-SMCP Python SDK shape: {"servers": {name: MCPServerConfig} or
//     [MCPServerConfig], "inputs": [MCPServerInput]}, where an
//     MCPServerConfig carries its transport under "server_parameters";
//   - the shape of Claude Desktop, Cursor and VS Code:
//     {"mcpServers": {name: {"command", "args", "env"} | {"url", "type"?, "headers"}}}
//     (VS Code's {"servers": {...}, "inputs": [...]} with flat entries works too).
//
// Both are normalized to the SDK shape. Placeholders stay unrendered until a
// server starts (see [Server.Resolve]), so that a missing secret only stops
// the server that needs it.
//
// # One model
//
// A server's configuration has one Go model, [smcp.ServerConfig] (what
// [Resolved] embeds): its JSON is the SMCP wire form, the form the Python
// SDK sends and a user writes in the SDK shape, and the proto
// MCPServerConfig of the Connect API is derived from it field by field.
// This package only adds what a computer needs on top: the two file
// shapes, placeholders, validation (unknown transport keys, vrl, inherit_env,
// durations), the compiled result_jq, and redaction.
//
// The model is in smcp rather than here because the gateway and the Go
// agent decode configurations too and must not depend on the computer; it
// is not the generated proto type because the wire needs what proto3
// cannot say (a missing terminate_on_close is true, a zero timeout in a
// file is the computer's default, the transport sits under one
// server_parameters key chosen by type, nulls). Before a server starts, its
// configuration is an unrendered JSON tree ([Server]), not the model: a
// ${input:id} placeholder may stand where the model has a number or a
// boolean. The get_config answer is made from that tree and completed with
// [smcp.WireDefaults], the keys the model itself completes.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// Transport types of an MCP server.
const (
	TypeStdio      = smcp.ServerTypeStdio
	TypeSSE        = smcp.ServerTypeSSE
	TypeStreamable = smcp.ServerTypeStreamable
)

// Input types.
const (
	InputPromptString = smcp.InputPromptString
	InputPickString   = smcp.InputPickString
	InputCommand      = smcp.InputCommand
)

// Config is a computer's configuration.
type Config struct {
	// Servers by name.
	Servers map[string]*Server
	// Inputs in declaration order.
	Inputs []Input
}

// Server is one MCP server's configuration in the SDK shape, placeholders
// not yet rendered.
type Server struct {
	Name string
	// raw is the normalized SDK-shape object (with "name").
	raw map[string]any
}

// Raw returns a deep copy of the server's SDK-shape object.
func (s *Server) Raw() map[string]any { return deepCopy(s.raw).(map[string]any) }

// Disabled reports the server's "disabled" flag as written (a placeholder
// counts as false until rendered).
func (s *Server) Disabled() bool {
	b, _ := s.raw["disabled"].(bool)
	return b
}

// NewServer makes a Server from an object in either accepted shape (SDK
// MCPServerConfig or a flat mcpServers entry). name is used when the
// object has none.
func NewServer(name string, obj map[string]any) (*Server, error) {
	norm, err := normalizeServer(name, obj)
	if err != nil {
		return nil, err
	}
	// Check the shape now, with placeholders rendered as neutral values, so
	// that a malformed file fails at load and not at start.
	probe, _ := Render(norm, func(string) (any, bool, error) { return nil, true, nil })
	if _, err := decodeServer(probe.(map[string]any)); err != nil {
		return nil, err
	}
	return &Server{Name: norm["name"].(string), raw: norm}, nil
}

// Input declares a value ${input:<id>} placeholders refer to.
type Input struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	// Default value (promptString, pickString). Any JSON value: a
	// placeholder that is a whole string takes its type.
	Default  any      `json:"default,omitempty"`
	Password *bool    `json:"password,omitempty"`
	Options  []string `json:"options,omitempty"`
	// Command (a shell command line) whose trimmed stdout is the value.
	Command string `json:"command,omitempty"`
	// Args of a command input: each entry is passed to the command as an
	// environment variable.
	Args map[string]any `json:"args,omitempty"`
}

func (in Input) validate() error {
	if in.ID == "" {
		return errors.New("input without id")
	}
	switch in.Type {
	case InputPromptString:
	case InputPickString:
		if len(in.Options) == 0 {
			return fmt.Errorf("input %q: pickString needs options", in.ID)
		}
	case InputCommand:
		if strings.TrimSpace(in.Command) == "" {
			return fmt.Errorf("input %q: command input needs a command", in.ID)
		}
	default:
		return fmt.Errorf("input %q: unknown type %q (want promptString, pickString or command)", in.ID, in.Type)
	}
	return nil
}

// Load reads a configuration file. The format follows the extension
// (.yaml/.yml → YAML, anything else JSON; YAML is a superset of JSON).
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	yamlFile := slices.Contains([]string{".yaml", ".yml"}, strings.ToLower(filepath.Ext(path)))
	cfg, err := Parse(data, yamlFile)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse parses a configuration document, JSON or (asYAML) YAML.
func Parse(data []byte, asYAML bool) (*Config, error) {
	var doc any
	if asYAML {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("parse YAML: %w", err)
		}
		var err error
		if doc, err = jsonCompatible(doc); err != nil {
			return nil, err
		}
	} else {
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("parse JSON: %w", err)
		}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("the configuration must be an object with \"servers\" or \"mcpServers\"")
	}
	cfg := &Config{Servers: map[string]*Server{}}
	add := func(name string, v any) error {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("server %q: not an object", name)
		}
		s, err := NewServer(name, obj)
		if err != nil {
			return err
		}
		if _, dup := cfg.Servers[s.Name]; dup {
			return fmt.Errorf("server %q is configured twice", s.Name)
		}
		cfg.Servers[s.Name] = s
		return nil
	}
	for _, key := range []string{"servers", "mcpServers"} {
		switch list := top[key].(type) {
		case nil:
		case map[string]any:
			for _, name := range sortedKeys(list) {
				if err := add(name, list[name]); err != nil {
					return nil, err
				}
			}
		case []any:
			for i, v := range list {
				obj, _ := v.(map[string]any)
				name, _ := obj["name"].(string)
				if name == "" {
					return nil, fmt.Errorf("%s[%d]: a server in a list needs a name", key, i)
				}
				if err := add(name, v); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("%q must be an object or a list", key)
		}
	}
	if _, hasServers := top["servers"]; !hasServers {
		if _, hasMCP := top["mcpServers"]; !hasMCP {
			return nil, errors.New("the configuration has neither \"servers\" nor \"mcpServers\"")
		}
	}
	if raw, ok := top["inputs"]; ok && raw != nil {
		b, _ := json.Marshal(raw)
		if err := json.Unmarshal(b, &cfg.Inputs); err != nil {
			return nil, fmt.Errorf("inputs: %w", err)
		}
		seen := map[string]bool{}
		for _, in := range cfg.Inputs {
			if err := in.validate(); err != nil {
				return nil, err
			}
			if seen[in.ID] {
				return nil, fmt.Errorf("input %q is declared twice", in.ID)
			}
			seen[in.ID] = true
		}
	}
	return cfg, nil
}

// normalizeServer turns either accepted entry shape into the SDK shape.
func normalizeServer(name string, obj map[string]any) (map[string]any, error) {
	out := deepCopy(obj).(map[string]any)
	if n, ok := out["name"].(string); ok && n != "" {
		name = n
	}
	if name == "" {
		return nil, errors.New("server without a name")
	}
	out["name"] = name
	if _, sdk := out["server_parameters"]; sdk {
		if _, ok := out["server_parameters"].(map[string]any); !ok {
			return nil, fmt.Errorf("server %q: server_parameters must be an object", name)
		}
		t, _ := out["type"].(string)
		switch t {
		case TypeStdio, TypeSSE, TypeStreamable:
		default:
			return nil, fmt.Errorf("server %q: unknown type %q (want stdio, sse or streamable)", name, t)
		}
		return out, nil
	}
	// Flat shape (mcpServers / VS Code): transport keys at the top.
	params := map[string]any{}
	move := func(keys ...string) {
		for _, k := range keys {
			if v, ok := out[k]; ok {
				params[k] = v
				delete(out, k)
			}
		}
	}
	t, _ := out["type"].(string)
	_, hasCommand := out["command"]
	_, hasURL := out["url"]
	switch {
	case hasCommand && (t == "" || t == TypeStdio):
		out["type"] = TypeStdio
		move("command", "args", "env", "inherit_env", "cwd", "encoding", "encoding_error_handler")
		if _, ok := out["envFile"]; ok {
			return nil, fmt.Errorf("server %q: envFile is not supported; put the variables in env", name)
		}
	case hasURL && t == TypeSSE:
		out["type"] = TypeSSE
		move("url", "headers", "timeout", "sse_read_timeout")
	case hasURL && (t == "" || t == "http" || t == "streamable" || t == "streamableHttp" || t == "streamable-http" || t == "streamable_http"):
		out["type"] = TypeStreamable
		move("url", "headers", "timeout", "sse_read_timeout", "terminate_on_close")
	case hasCommand || hasURL:
		return nil, fmt.Errorf("server %q: type %q does not fit its %s", name, t, map[bool]string{true: "command", false: "url"}[hasCommand])
	default:
		return nil, fmt.Errorf("server %q: needs \"command\" (stdio), \"url\" (sse or streamable HTTP) or \"server_parameters\"", name)
	}
	out["server_parameters"] = params
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}

// jsonCompatible converts YAML-decoded values to the JSON data model.
func jsonCompatible(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := jsonCompatible(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("YAML key %v is not a string", k)
			}
			c, err := jsonCompatible(e)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range x {
			c, err := jsonCompatible(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	default:
		return v, nil
	}
}

// WithDisabled returns a copy of s with its "disabled" flag set.
func (s *Server) WithDisabled(disabled bool) *Server {
	raw := s.Raw()
	raw["disabled"] = disabled
	return &Server{Name: s.Name, raw: raw}
}
