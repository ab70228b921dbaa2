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
	"github.com/smcpgw/smcp-gateway/smcp/bundleid"
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
	// Order lists the server names in the order the file writes them
	// ("servers" first, then "mcpServers"). Of servers sharing a bundle id,
	// the first in this order is the one that starts (PROTOCOL-0.4.md §7
	// C2). Names of Servers missing here follow, sorted.
	Order []string
	// Inputs in declaration order.
	Inputs []Input
}

// Names returns the server names in configuration order (see Order).
func (c *Config) Names() []string {
	out := make([]string, 0, len(c.Servers))
	seen := make(map[string]bool, len(c.Servers))
	for _, n := range c.Order {
		if _, ok := c.Servers[n]; ok && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n := range c.Servers {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Server is one MCP server's configuration in the SDK shape, placeholders
// not yet rendered.
type Server struct {
	Name string
	// raw is the normalized SDK-shape object (with "name").
	raw map[string]any
}

// BundleID is the server's bundle id (PROTOCOL-0.4.md §5.2): its explicit
// "bundle_id", else derived from its name or, when the name normalises to
// nothing, from the connection identity of the raw configuration
// (placeholders hashed as written, never rendered). An invalid explicit id
// is an error: such a server must not start in a 0.3 or 0.4 profile.
func (s *Server) BundleID() (string, error) {
	var explicit *string
	if v, ok := s.raw["bundle_id"]; ok && v != nil {
		str, isStr := v.(string)
		if !isStr {
			return "", fmt.Errorf("server %q: bundle_id must be a string, got %T", s.Name, v)
		}
		explicit = &str
	}
	id, err := bundleid.Resolve(s.Name, explicit, bundleid.IdentityOf(s.raw))
	if err != nil {
		return "", fmt.Errorf("server %q: %w", s.Name, err)
	}
	return id, nil
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
	Default  any   `json:"default,omitempty"`
	Password *bool `json:"password,omitempty"`
	// Options of a pickString in the 0.2 form (strings); PickOptions in
	// the 0.3.2 form ([{label, value}]). A file writes either under
	// "options"; Choices gives both as one list.
	Options     []string     `json:"options,omitempty"`
	PickOptions []PickOption `json:"-"`
	// Command (a shell command line) whose trimmed stdout is the value.
	Command string `json:"command,omitempty"`
	// Args of a command input: each entry is passed to the command as an
	// environment variable.
	Args map[string]any `json:"args,omitempty"`
}

// PickOption is one choice of a pickString input (0.3.2+): label is shown,
// value is used; a value is never mapped back to its label.
type PickOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// UnmarshalJSON reads "options" in either shape: strings (0.2) into
// Options, {label, value} objects (0.3.2) into PickOptions.
func (in *Input) UnmarshalJSON(b []byte) error {
	type plain Input
	var w struct {
		plain
		Options []json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*in = Input(w.plain)
	in.Options, in.PickOptions = nil, nil
	for i, raw := range w.Options {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil && len(in.PickOptions) == 0 {
			in.Options = append(in.Options, s)
			continue
		}
		var o struct {
			Label *string `json:"label"`
			Value *string `json:"value"`
		}
		if err := json.Unmarshal(raw, &o); err != nil || o.Label == nil || o.Value == nil || len(in.Options) > 0 {
			return fmt.Errorf("input %q: options[%d]: want {\"label\": string, \"value\": string} (or, in a 0.2 configuration, a string), got %s", in.ID, i, raw)
		}
		in.PickOptions = append(in.PickOptions, PickOption{Label: *o.Label, Value: *o.Value})
	}
	return nil
}

// Choices returns the options of a pickString: its PickOptions, or its 0.2
// strings each as its own label.
func (in Input) Choices() []PickOption {
	if len(in.PickOptions) > 0 {
		return in.PickOptions
	}
	out := make([]PickOption, len(in.Options))
	for i, o := range in.Options {
		out[i] = PickOption{Label: o, Value: o}
	}
	return out
}

// hasChoice reports whether v is the value of one of the options.
func (in Input) hasChoice(v string) bool {
	for _, o := range in.Choices() {
		if o.Value == v {
			return true
		}
	}
	return false
}

func (in Input) validate() error {
	if in.ID == "" {
		return errors.New("input without id")
	}
	switch in.Type {
	case InputPromptString:
	case InputPickString:
		if len(in.Options) == 0 && len(in.PickOptions) == 0 {
			return fmt.Errorf("input %q: pickString needs options", in.ID)
		}
		if len(in.PickOptions) > 0 {
			// §5.9: non-empty strings, and a default that is one of the values.
			for i, o := range in.PickOptions {
				if o.Label == "" || o.Value == "" {
					return fmt.Errorf("input %q: options[%d]: label and value must be non-empty", in.ID, i)
				}
			}
			if in.Default != nil {
				d, ok := in.Default.(string)
				if !ok || !in.hasChoice(d) {
					return fmt.Errorf("input %q: default %v is not the value of any option", in.ID, in.Default)
				}
			}
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

// CheckProtocol checks what a configuration may say in a protocol version
// ("0.2", "0.3" or "0.4"): from 0.3.2 on, pickString options are
// [{label, value}] objects and the 0.2 list of strings is refused
// (PROTOCOL-0.4.md §5.9).
func (c *Config) CheckProtocol(version string) error {
	if version == "" || version == "0.2" {
		return nil
	}
	for _, in := range c.Inputs {
		if in.Type == InputPickString && len(in.Options) > 0 {
			return fmt.Errorf("input %q: pickString options must be objects {\"label\": ..., \"value\": ...} in protocol %s (from 0.3.2); "+
				"a list of strings is the 0.2 form, e.g. write %q as {\"label\": %q, \"value\": %q}", in.ID, version, in.Options[0], in.Options[0], in.Options[0])
		}
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
	written := keyOrder(data, asYAML)
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
		cfg.Order = append(cfg.Order, s.Name)
		return nil
	}
	for _, key := range []string{"servers", "mcpServers"} {
		switch list := top[key].(type) {
		case nil:
		case map[string]any:
			for _, name := range inOrder(list, written[key]) {
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

// keyOrder returns, for the top-level "servers" and "mcpServers" objects
// of a document, their keys in the order written: decoding into a map
// loses it, and the first of two servers sharing a bundle id is decided by
// it. A document it cannot read gives nothing (Parse reports the error).
func keyOrder(data []byte, asYAML bool) map[string][]string {
	out := map[string][]string{}
	if asYAML {
		var doc yaml.Node
		if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return out
		}
		top := doc.Content[0]
		for i := 0; i+1 < len(top.Content); i += 2 {
			key, val := top.Content[i].Value, top.Content[i+1]
			if val.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(val.Content); j += 2 {
				out[key] = append(out[key], val.Content[j].Value)
			}
		}
		return out
	}
	_ = smcp.ObjectFields(data, func(key string, v json.RawMessage) error {
		if key == "servers" || key == "mcpServers" {
			_ = smcp.ObjectFields(v, func(name string, _ json.RawMessage) error {
				out[key] = append(out[key], name)
				return nil
			})
		}
		return nil
	})
	return out
}

// inOrder lists the keys of m in the written order, then any others sorted.
func inOrder(m map[string]any, written []string) []string {
	out := make([]string, 0, len(m))
	seen := make(map[string]bool, len(m))
	for _, k := range written {
		if _, ok := m[k]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range sortedKeys(m) {
		if !seen[k] {
			out = append(out, k)
		}
	}
	return out
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
