package smcp

// The one Go model of an MCP server configuration (PROTOCOL.md §5).
//
// ServerConfig and its parts are the model; every other form is derived
// from it:
//
//   - the wire JSON (what client:get_config answers, what the Python SDK
//     sends, what a user writes in the SDK shape of a config file) is the
//     model's encoding/json form: its struct tags give the keys, their order
//     and the nulls;
//   - the proto message smcpv1.MCPServerConfig (the Connect front end and the
//     Go agent) is filled from the model and read back into it by a copier
//     that matches fields by JSON name (config_wire_proto.go), so that the
//     proto needs no conversion code of its own;
//   - computer/config decodes a user's file into this model (DecodeServerConfig,
//     strict about transport keys) and the computer starts servers from it.
//
// Adding a field is one change here, plus the proto field with the same
// json_name when the typed API is to carry it (TestServerModelMatchesProto
// fails until both agree).
//
// The model lives in smcp and not in computer/config because the gateway and
// the Go agent decode configurations too and must not depend on the
// computer. It is not the generated proto type because the wire needs what
// proto3 cannot say: a missing terminate_on_close means true, a zero SSE
// timeout in a user's file means "the computer's default", transport keys
// live under one "server_parameters" key chosen by "type", "env" may be
// null, and a user's file writes numbers where the wire has strings.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// MCP server types (MCPServerConfig.type).
const (
	ServerTypeStdio      = "stdio"
	ServerTypeSSE        = "sse"
	ServerTypeStreamable = "streamable"
)

// MCP server input types (MCPServerInput.type).
const (
	InputPromptString = "promptString"
	InputPickString   = "pickString"
	InputCommand      = "command"
)

// Defaults of the MCP Python SDK's server parameters, applied by
// [ServerConfig.Complete] so that every config on the wire is complete.
const (
	DefaultStdioEncoding              = "utf-8"
	DefaultStdioErrorHandler          = "strict"
	DefaultSSETimeout                 = 5.0   // seconds
	DefaultSSEReadTimeout             = 300.0 // seconds
	DefaultStreamableTimeout          = "PT30S"
	DefaultStreamableReadTimeout      = "PT300S"
	DefaultStreamableTerminateOnClose = true
)

// ServerConfig is an MCP server's configuration (MCPServerConfig). Its JSON
// is the wire form.
type ServerConfig struct {
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	Disabled       bool     `json:"disabled"`
	ForbiddenTools []string `json:"forbidden_tools"`
	// ToolMeta by MCP tool name. A null entry on the wire is dropped.
	ToolMeta        map[string]ToolMeta `json:"tool_meta"`
	DefaultToolMeta *ToolMeta           `json:"default_tool_meta,omitempty"`
	// VRL is the Python SDK's result transform (Vector Remap Language).
	VRL *string `json:"vrl,omitempty"`
	// Params are the transport parameters, under one key whose shape
	// follows Type (the proto's server_parameters oneof).
	Params ServerParameters `json:"server_parameters"`
	// ResultJQ is a jq program applied to the server's tool results (a Go
	// computer extension, its counterpart of VRL).
	ResultJQ *string `json:"result_jq,omitempty"`
	// BundleID is an explicit bundle id (0.3+, PROTOCOL-0.4.md §5.2); unset,
	// it is derived from Name or the transport.
	BundleID *string `json:"bundle_id,omitempty"`
}

// ServerParameters holds the transport parameters: exactly one is set, the
// one Type names. The proto tags name the oneof's fields.
type ServerParameters struct {
	Stdio      *StdioParams      `proto:"stdio"`
	SSE        *SSEParams        `proto:"sse"`
	Streamable *StreamableParams `proto:"streamable"`
}

// StdioParams starts a server as a child process.
type StdioParams struct {
	Command string     `json:"command"`
	Args    StringList `json:"args"`
	// Env values are redacted when sent to agents.
	Env                  StringMap `json:"env"`
	Cwd                  *string   `json:"cwd"`
	Encoding             string    `json:"encoding"`
	EncodingErrorHandler string    `json:"encoding_error_handler"`
	// InheritEnv names variables of the computer's environment the server
	// gets on top of the default set (PATH, HOME, locale...): a child
	// process does not see the rest of the computer's environment. A Go
	// computer extension: names only, no values.
	InheritEnv StringList `json:"inherit_env,omitempty"`
}

// SSEParams connects over HTTP+SSE. Timeouts are float seconds; zero is
// unset.
type SSEParams struct {
	URL            string    `json:"url"`
	Headers        StringMap `json:"headers"`
	Timeout        float64   `json:"timeout"`
	SSEReadTimeout float64   `json:"sse_read_timeout"`
}

// StreamableParams connects over streamable HTTP. A missing
// terminate_on_close is true (the SDK's default).
type StreamableParams struct {
	URL              string    `json:"url"`
	Headers          StringMap `json:"headers"`
	Timeout          Duration  `json:"timeout"`
	SSEReadTimeout   Duration  `json:"sse_read_timeout"`
	TerminateOnClose bool      `json:"terminate_on_close"`
}

// ToolMeta is the per-tool configuration (PROTOCOL.md §5). Tags is always
// a list on the wire ([ServerConfig.Complete]).
type ToolMeta struct {
	AutoApply *bool    `json:"auto_apply,omitempty"`
	Alias     *string  `json:"alias,omitempty"`
	Tags      []string `json:"tags"`
	// RetObjectMapper is free-form JSON, kept as written (an explicit null
	// included).
	RetObjectMapper json.RawMessage `json:"ret_object_mapper,omitempty"`
}

// Duration is a streamable timeout: an ISO-8601 duration ("PT30S") as the
// Python SDK writes it. A number of seconds is accepted too (pydantic
// accepts both) and becomes "PT<n>S"; "" is unset.
type Duration string

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*d = Duration(s)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil || secs < 0 {
		return errors.New("want an ISO-8601 duration string or a non-negative number of seconds")
	}
	*d = Duration("PT" + strconv.FormatFloat(secs, 'f', -1, 64) + "S")
	return nil
}

// StringMap is a map of strings that also accepts numbers and booleans as
// values (YAML reads "WORKERS: 4" as a number; a placeholder may render to
// one) and null (as "").
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
		s, ok := scalarString(v)
		if !ok {
			return fmt.Errorf("%q: want a string, got %T", k, v)
		}
		out[k] = s
	}
	*m = out
	return nil
}

// StringList is a list of strings that also accepts numbers, booleans and
// null (YAML reads "args: [-p, 8080]" with a number).
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(b []byte) error {
	var raw []any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*l = nil
		return nil
	}
	out := make(StringList, 0, len(raw))
	for i, v := range raw {
		s, ok := scalarString(v)
		if !ok {
			return fmt.Errorf("[%d]: want a string, got %T", i, v)
		}
		out = append(out, s)
	}
	*l = out
	return nil
}

// scalarString renders a JSON scalar as a config string: numbers and
// booleans as JSON writes them, null as "".
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case nil:
		return "", true
	case float64, bool:
		b, _ := json.Marshal(x)
		return string(b), true
	}
	return "", false
}

// MarshalJSON writes the set parameters, or null when none is.
func (p ServerParameters) MarshalJSON() ([]byte, error) {
	switch p.count() {
	case 0:
		return []byte("null"), nil
	case 1:
	default:
		return nil, errors.New("more than one kind of server_parameters")
	}
	switch {
	case p.Stdio != nil:
		return json.Marshal(p.Stdio)
	case p.SSE != nil:
		return json.Marshal(p.SSE)
	default:
		return json.Marshal(p.Streamable)
	}
}

func (p ServerParameters) count() int {
	n := 0
	for _, set := range []bool{p.Stdio != nil, p.SSE != nil, p.Streamable != nil} {
		if set {
			n++
		}
	}
	return n
}

// Type is the server type of the set parameters ("" when none or several).
func (p ServerParameters) Type() string {
	if p.count() != 1 {
		return ""
	}
	switch {
	case p.Stdio != nil:
		return ServerTypeStdio
	case p.SSE != nil:
		return ServerTypeSSE
	default:
		return ServerTypeStreamable
	}
}

// UnmarshalJSON decodes an MCPServerConfig as the wire carries it: keys it
// does not know are ignored (newer peers may add some).
func (c *ServerConfig) UnmarshalJSON(b []byte) error {
	return c.decode(b, false)
}

// DecodeServerConfig decodes an MCPServerConfig written by a person: like
// UnmarshalJSON, but a key of server_parameters that the transport does not
// have is an error (a misspelt "evn" must not start a server without its
// environment).
func DecodeServerConfig(b []byte) (*ServerConfig, error) {
	c := &ServerConfig{}
	if err := c.decode(b, true); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *ServerConfig) decode(b []byte, strict bool) error {
	type plain ServerConfig // without the methods: no recursion
	*c = ServerConfig{}
	// The outer fields shadow the model's: the parameters wait for the
	// type, and null tool_meta entries are told apart.
	w := struct {
		*plain
		ToolMeta map[string]*ToolMeta `json:"tool_meta"`
		Params   json.RawMessage      `json:"server_parameters"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.ToolMeta != nil {
		c.ToolMeta = make(map[string]ToolMeta, len(w.ToolMeta))
	}
	for name, tm := range w.ToolMeta {
		if tm != nil {
			c.ToolMeta[name] = *tm
		}
	}
	if isNull(w.Params) {
		return errors.New("server_parameters missing")
	}
	var dst any
	switch c.Type {
	case ServerTypeStdio:
		c.Params.Stdio = &StdioParams{}
		dst = c.Params.Stdio
	case ServerTypeSSE:
		c.Params.SSE = &SSEParams{}
		dst = c.Params.SSE
	case ServerTypeStreamable:
		c.Params.Streamable = &StreamableParams{TerminateOnClose: DefaultStreamableTerminateOnClose}
		dst = c.Params.Streamable
	default:
		return fmt.Errorf("unknown type %q (want stdio, sse or streamable)", c.Type)
	}
	dec := json.NewDecoder(bytes.NewReader(w.Params))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s server_parameters: %w", c.Type, err)
	}
	return nil
}

// Complete fills, in place, what a configuration on the wire always
// carries and a writer may leave out: the Python SDK's defaults for unset
// (zero) transport values and empty lists and maps for the required keys.
// The computer does not complete the configurations it runs: there a zero
// timeout means the computer's own default.
func (c *ServerConfig) Complete() {
	if c.ForbiddenTools == nil {
		c.ForbiddenTools = []string{}
	}
	if c.ToolMeta == nil {
		c.ToolMeta = map[string]ToolMeta{}
	}
	for name, tm := range c.ToolMeta {
		tm.complete()
		c.ToolMeta[name] = tm
	}
	if c.DefaultToolMeta != nil {
		c.DefaultToolMeta.complete()
	}
	if c.Type == "" {
		c.Type = c.Params.Type()
	}
	switch p := c.Params; {
	case p.Stdio != nil:
		if p.Stdio.Args == nil {
			p.Stdio.Args = StringList{}
		}
		p.Stdio.Encoding = cmp.Or(p.Stdio.Encoding, DefaultStdioEncoding)
		p.Stdio.EncodingErrorHandler = cmp.Or(p.Stdio.EncodingErrorHandler, DefaultStdioErrorHandler)
	case p.SSE != nil:
		p.SSE.Timeout = positiveOr(p.SSE.Timeout, DefaultSSETimeout)
		p.SSE.SSEReadTimeout = positiveOr(p.SSE.SSEReadTimeout, DefaultSSEReadTimeout)
	case p.Streamable != nil:
		p.Streamable.Timeout = cmp.Or(p.Streamable.Timeout, DefaultStreamableTimeout)
		p.Streamable.SSEReadTimeout = cmp.Or(p.Streamable.SSEReadTimeout, DefaultStreamableReadTimeout)
	}
}

func (tm *ToolMeta) complete() {
	if tm.Tags == nil {
		tm.Tags = []string{}
	}
}

// checkParams reports a configuration whose parameters are missing or
// disagree with its type.
func (c *ServerConfig) checkParams() error {
	typ := c.Params.Type()
	switch {
	case c.Params.count() == 0:
		return fmt.Errorf("server %q has no server_parameters", c.Name)
	case typ == "":
		return fmt.Errorf("server %q has more than one kind of server_parameters", c.Name)
	case c.Type != "" && c.Type != typ:
		return fmt.Errorf("server %q: type %q does not match its %s parameters", c.Name, c.Type, typ)
	}
	return nil
}

// WireDefaults returns what an MCPServerConfig of type typ carries on the
// wire when its writer sets nothing: the top-level keys (without name, type
// and server_parameters) and the keys of server_parameters, as decoded JSON
// values. They are derived from the model, so that a configuration kept as
// written (with unrendered ${input:id} placeholders, which no typed model
// can hold) is completed exactly as the codec completes a typed one.
func WireDefaults(typ string) (top, params map[string]any, err error) {
	var c ServerConfig
	if err := c.decode(fmt.Appendf(nil, `{"type":%q,"server_parameters":{}}`, typ), false); err != nil {
		return nil, nil, err
	}
	c.Complete()
	b, err := json.Marshal(c)
	if err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, nil, err
	}
	params, _ = top["server_parameters"].(map[string]any)
	for _, k := range []string{"name", "type", "server_parameters"} {
		delete(top, k)
	}
	return top, params, nil
}

func marshalServerConfig(m *smcpv1.MCPServerConfig) ([]byte, error) {
	c, err := ServerConfigFromProto(m)
	if err != nil {
		return nil, err
	}
	c.Complete()
	return json.Marshal(c)
}

func unmarshalServerConfig(b []byte, m *smcpv1.MCPServerConfig) error {
	var c ServerConfig
	if err := json.Unmarshal(b, &c); err != nil {
		if c.Name != "" {
			return fmt.Errorf("server %q: %w", c.Name, err)
		}
		return err
	}
	c.Complete()
	proto.Reset(m)
	return c.toProto(m)
}

type wireConfigRet struct {
	Servers map[string]json.RawMessage `json:"servers"`
	Inputs  []json.RawMessage          `json:"inputs"`
}

type wireInput struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Options     any             `json:"options,omitempty"` // []string (0.2) or []wirePickOption (0.3.2+)
	Default     *string         `json:"default,omitempty"`
	Password    *bool           `json:"password,omitempty"`
	Command     *string         `json:"command,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
}

func inputToWire(in *smcpv1.MCPServerInput) wireInput {
	w := wireInput{Type: in.GetType(), ID: in.GetId(), Description: in.GetDescription(), Default: in.Default}
	switch in.GetType() {
	case InputPromptString:
		w.Password = in.Password
	case InputPickString:
		// One "options" key, two shapes (PROTOCOL-0.4.md §5.9): the 0.3.2
		// objects when the message has them, else the 0.2 strings.
		if po := in.GetPickOptions(); len(po) > 0 {
			opts := make([]wirePickOption, len(po))
			for i, o := range po {
				opts[i] = wirePickOption{Label: o.GetLabel(), Value: o.GetValue()}
			}
			w.Options = opts
		} else {
			w.Options = nonNil(in.GetOptions())
		}
	case InputCommand:
		w.Default = nil
		w.Command = new(in.GetCommand())
		w.Args = structJSON(in.GetArgs())
	default: // an unknown kind keeps whatever it has
		w.Password, w.Command, w.Args = in.Password, in.Command, structJSON(in.GetArgs())
		if len(in.GetOptions()) > 0 {
			w.Options = in.GetOptions()
		}
	}
	return w
}

// wirePickOption is one pickString choice of 0.3.2+.
type wirePickOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// unmarshalInput decodes an MCPServerInput whose "options" may be either
// wire shape: a list of objects is the 0.3.2 [{label, value}] form and goes
// to pick_options; a list of strings stays the 0.2 options.
func unmarshalInput(raw []byte, in *smcpv1.MCPServerInput) error {
	var probe struct {
		Options []json.RawMessage `json:"options"`
	}
	if json.Unmarshal(raw, &probe) == nil && len(probe.Options) > 0 && bytes.HasPrefix(bytes.TrimSpace(probe.Options[0]), []byte("{")) {
		opts := make([]wirePickOption, 0, len(probe.Options))
		for i, o := range probe.Options {
			var po wirePickOption
			if err := json.Unmarshal(o, &po); err != nil {
				return fmt.Errorf("options[%d]: want {label, value}: %w", i, err)
			}
			opts = append(opts, po)
		}
		rest, err := dropTopLevel(raw, "options")
		if err != nil {
			return err
		}
		if err := unmarshalOptions.Unmarshal(rest, in); err != nil {
			return err
		}
		for _, o := range opts {
			in.PickOptions = append(in.PickOptions, &smcpv1.PickOption{Label: o.Label, Value: o.Value})
		}
		return nil
	}
	return unmarshalOptions.Unmarshal(raw, in)
}

// dropTopLevel returns the JSON object b without its key.
func dropTopLevel(b []byte, key string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, key)
	return json.Marshal(m)
}

func structJSON(s *structpb.Struct) json.RawMessage {
	if s == nil {
		return nil
	}
	b, err := marshalOptions.Marshal(s)
	if err != nil {
		return nil
	}
	return b
}

func marshalConfigRet(r *smcpv1.GetComputerConfigRet) ([]byte, error) {
	w := wireConfigRet{
		Servers: make(map[string]json.RawMessage, len(r.GetServers())),
		Inputs:  make([]json.RawMessage, 0, len(r.GetInputs())),
	}
	for name, c := range r.GetServers() {
		b, err := marshalServerConfig(c)
		if err != nil {
			return nil, err
		}
		w.Servers[name] = b
	}
	for _, in := range r.GetInputs() {
		b, err := json.Marshal(inputToWire(in))
		if err != nil {
			return nil, err
		}
		w.Inputs = append(w.Inputs, b)
	}
	return json.Marshal(w)
}

func unmarshalConfigRet(b []byte, m *smcpv1.GetComputerConfigRet) error {
	var w wireConfigRet
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	proto.Reset(m)
	for name, raw := range w.Servers {
		c := &smcpv1.MCPServerConfig{}
		if err := unmarshalServerConfig(raw, c); err != nil {
			return fmt.Errorf("servers[%q]: %w", name, err)
		}
		if c.Name == "" {
			c.Name = name
		}
		if m.Servers == nil {
			m.Servers = make(map[string]*smcpv1.MCPServerConfig, len(w.Servers))
		}
		m.Servers[name] = c
	}
	for i, raw := range w.Inputs {
		in := &smcpv1.MCPServerInput{}
		if err := unmarshalInput(raw, in); err != nil {
			return fmt.Errorf("inputs[%d]: %w", i, err)
		}
		m.Inputs = append(m.Inputs, in)
	}
	return nil
}

func isNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func positiveOr(v, def float64) float64 {
	if v <= 0 {
		return def
	}
	return v
}
