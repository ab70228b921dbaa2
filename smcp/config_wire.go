package smcp

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

// Defaults of the MCP Python SDK's server parameters, applied to missing
// keys on input and to empty values on output so that every config on the
// wire is complete.
const (
	DefaultStdioEncoding              = "utf-8"
	DefaultStdioErrorHandler          = "strict"
	DefaultSSETimeout                 = 5.0   // seconds
	DefaultSSEReadTimeout             = 300.0 // seconds
	DefaultStreamableTimeout          = "PT30S"
	DefaultStreamableReadTimeout      = "PT300S"
	DefaultStreamableTerminateOnClose = true
)

// On the wire an MCPServerConfig carries its transport parameters under one
// "server_parameters" key whose shape follows "type"; the proto has a oneof.
// These mirrors give the exact key order and the nulls of PROTOCOL.md §5.
type wireServerConfig struct {
	Name             string                     `json:"name"`
	Type             string                     `json:"type"`
	Disabled         bool                       `json:"disabled"`
	ForbiddenTools   []string                   `json:"forbidden_tools"`
	ToolMeta         map[string]json.RawMessage `json:"tool_meta"`
	DefaultToolMeta  json.RawMessage            `json:"default_tool_meta,omitempty"`
	VRL              *string                    `json:"vrl,omitempty"`
	ServerParameters json.RawMessage            `json:"server_parameters"`
	ResultJQ         *string                    `json:"result_jq,omitempty"`
}

type wireStdio struct {
	Command              string            `json:"command"`
	Args                 []string          `json:"args"`
	Env                  map[string]string `json:"env"`
	Cwd                  *string           `json:"cwd"`
	Encoding             *string           `json:"encoding"`
	EncodingErrorHandler *string           `json:"encoding_error_handler"`
	InheritEnv           []string          `json:"inherit_env,omitempty"`
}

type wireSSE struct {
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	Timeout        *float64          `json:"timeout"`
	SSEReadTimeout *float64          `json:"sse_read_timeout"`
}

type wireStreamable struct {
	URL              string            `json:"url"`
	Headers          map[string]string `json:"headers"`
	Timeout          json.RawMessage   `json:"timeout"`
	SSEReadTimeout   json.RawMessage   `json:"sse_read_timeout"`
	TerminateOnClose *bool             `json:"terminate_on_close"`
}

type wireConfigRet struct {
	Servers map[string]json.RawMessage `json:"servers"`
	Inputs  []json.RawMessage          `json:"inputs"`
}

type wireInput struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Options     *[]string       `json:"options,omitempty"`
	Default     *string         `json:"default,omitempty"`
	Password    *bool           `json:"password,omitempty"`
	Command     *string         `json:"command,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
}

func marshalServerConfig(c *smcpv1.MCPServerConfig) ([]byte, error) {
	typ, params, err := serverParametersToWire(c)
	if err != nil {
		return nil, err
	}
	w := wireServerConfig{
		Name:             c.GetName(),
		Type:             typ,
		Disabled:         c.GetDisabled(),
		ForbiddenTools:   c.GetForbiddenTools(),
		ToolMeta:         make(map[string]json.RawMessage, len(c.GetToolMeta())),
		VRL:              c.Vrl,
		ServerParameters: params,
		ResultJQ:         c.ResultJq,
	}
	if w.ForbiddenTools == nil {
		w.ForbiddenTools = []string{}
	}
	for name, tm := range c.GetToolMeta() {
		if w.ToolMeta[name], err = marshalOptions.Marshal(tm); err != nil {
			return nil, fmt.Errorf("tool_meta %q: %w", name, err)
		}
	}
	if c.DefaultToolMeta != nil {
		if w.DefaultToolMeta, err = marshalOptions.Marshal(c.DefaultToolMeta); err != nil {
			return nil, fmt.Errorf("default_tool_meta: %w", err)
		}
	}
	return json.Marshal(w)
}

// serverParametersToWire renders the oneof as server_parameters and checks
// that it agrees with type (an empty type is taken from the oneof).
func serverParametersToWire(c *smcpv1.MCPServerConfig) (string, json.RawMessage, error) {
	var (
		typ string
		v   any
	)
	switch p := c.GetServerParameters().(type) {
	case *smcpv1.MCPServerConfig_Stdio:
		s := p.Stdio
		typ = ServerTypeStdio
		v = wireStdio{
			Command:              s.GetCommand(),
			Args:                 nonNil(s.GetArgs()),
			Env:                  s.GetEnv(),
			Cwd:                  s.Cwd,
			Encoding:             new(cmp.Or(s.GetEncoding(), DefaultStdioEncoding)),
			EncodingErrorHandler: new(cmp.Or(s.GetEncodingErrorHandler(), DefaultStdioErrorHandler)),
			InheritEnv:           s.GetInheritEnv(),
		}
	case *smcpv1.MCPServerConfig_Sse:
		s := p.Sse
		typ = ServerTypeSSE
		v = wireSSE{
			URL:            s.GetUrl(),
			Headers:        s.GetHeaders(),
			Timeout:        new(positiveOr(s.GetTimeout(), DefaultSSETimeout)),
			SSEReadTimeout: new(positiveOr(s.GetSseReadTimeout(), DefaultSSEReadTimeout)),
		}
	case *smcpv1.MCPServerConfig_Streamable:
		s := p.Streamable
		typ = ServerTypeStreamable
		v = struct {
			URL              string            `json:"url"`
			Headers          map[string]string `json:"headers"`
			Timeout          string            `json:"timeout"`
			SSEReadTimeout   string            `json:"sse_read_timeout"`
			TerminateOnClose bool              `json:"terminate_on_close"`
		}{
			URL:              s.GetUrl(),
			Headers:          s.GetHeaders(),
			Timeout:          cmp.Or(s.GetTimeout(), DefaultStreamableTimeout),
			SSEReadTimeout:   cmp.Or(s.GetSseReadTimeout(), DefaultStreamableReadTimeout),
			TerminateOnClose: s.GetTerminateOnClose(),
		}
	default:
		return "", nil, fmt.Errorf("server %q has no server_parameters", c.GetName())
	}
	if c.GetType() != "" && c.GetType() != typ {
		return "", nil, fmt.Errorf("server %q: type %q does not match its %s parameters", c.GetName(), c.GetType(), typ)
	}
	b, err := json.Marshal(v)
	return typ, b, err
}

func unmarshalServerConfig(b []byte, m *smcpv1.MCPServerConfig) error {
	var w wireServerConfig
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	proto.Reset(m)
	m.Name, m.Type, m.Disabled, m.ForbiddenTools, m.Vrl, m.ResultJq = w.Name, w.Type, w.Disabled, w.ForbiddenTools, w.VRL, w.ResultJQ
	for name, raw := range w.ToolMeta {
		if isNull(raw) {
			continue
		}
		tm := &smcpv1.ToolMeta{}
		if err := unmarshalOptions.Unmarshal(raw, tm); err != nil {
			return fmt.Errorf("tool_meta %q: %w", name, err)
		}
		if m.ToolMeta == nil {
			m.ToolMeta = make(map[string]*smcpv1.ToolMeta, len(w.ToolMeta))
		}
		m.ToolMeta[name] = tm
	}
	if !isNull(w.DefaultToolMeta) {
		m.DefaultToolMeta = &smcpv1.ToolMeta{}
		if err := unmarshalOptions.Unmarshal(w.DefaultToolMeta, m.DefaultToolMeta); err != nil {
			return fmt.Errorf("default_tool_meta: %w", err)
		}
	}
	if isNull(w.ServerParameters) {
		return fmt.Errorf("server %q: server_parameters missing", w.Name)
	}
	switch w.Type {
	case ServerTypeStdio:
		var p wireStdio
		if err := json.Unmarshal(w.ServerParameters, &p); err != nil {
			return fmt.Errorf("server %q: stdio server_parameters: %w", w.Name, err)
		}
		m.ServerParameters = &smcpv1.MCPServerConfig_Stdio{Stdio: &smcpv1.StdioServerParameters{
			Command:              p.Command,
			Args:                 p.Args,
			Env:                  p.Env,
			Cwd:                  p.Cwd,
			Encoding:             cmp.Or(deref(p.Encoding), DefaultStdioEncoding),
			EncodingErrorHandler: cmp.Or(deref(p.EncodingErrorHandler), DefaultStdioErrorHandler),
			InheritEnv:           p.InheritEnv,
		}}
	case ServerTypeSSE:
		var p wireSSE
		if err := json.Unmarshal(w.ServerParameters, &p); err != nil {
			return fmt.Errorf("server %q: sse server_parameters: %w", w.Name, err)
		}
		m.ServerParameters = &smcpv1.MCPServerConfig_Sse{Sse: &smcpv1.SseServerParameters{
			Url:            p.URL,
			Headers:        p.Headers,
			Timeout:        positiveOr(deref(p.Timeout), DefaultSSETimeout),
			SseReadTimeout: positiveOr(deref(p.SSEReadTimeout), DefaultSSEReadTimeout),
		}}
	case ServerTypeStreamable:
		var p wireStreamable
		if err := json.Unmarshal(w.ServerParameters, &p); err != nil {
			return fmt.Errorf("server %q: streamable server_parameters: %w", w.Name, err)
		}
		timeout, err := isoDuration(p.Timeout, DefaultStreamableTimeout)
		if err != nil {
			return fmt.Errorf("server %q: timeout: %w", w.Name, err)
		}
		readTimeout, err := isoDuration(p.SSEReadTimeout, DefaultStreamableReadTimeout)
		if err != nil {
			return fmt.Errorf("server %q: sse_read_timeout: %w", w.Name, err)
		}
		terminate := DefaultStreamableTerminateOnClose
		if p.TerminateOnClose != nil {
			terminate = *p.TerminateOnClose
		}
		m.ServerParameters = &smcpv1.MCPServerConfig_Streamable{Streamable: &smcpv1.StreamableHttpServerParameters{
			Url:              p.URL,
			Headers:          p.Headers,
			Timeout:          timeout,
			SseReadTimeout:   readTimeout,
			TerminateOnClose: terminate,
		}}
	default:
		return fmt.Errorf("server %q: unknown type %q (want stdio, sse or streamable)", w.Name, w.Type)
	}
	return nil
}

// isoDuration reads a streamable timeout: an ISO-8601 duration string as
// the Python SDK writes it, or a number of seconds (pydantic accepts both).
func isoDuration(raw json.RawMessage, def string) (string, error) {
	if isNull(raw) {
		return def, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return def, nil
		}
		return s, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs < 0 {
		return "", errors.New("want an ISO-8601 duration string or a non-negative number of seconds")
	}
	return "PT" + strconv.FormatFloat(secs, 'f', -1, 64) + "S", nil
}

func inputToWire(in *smcpv1.MCPServerInput) wireInput {
	w := wireInput{Type: in.GetType(), ID: in.GetId(), Description: in.GetDescription(), Default: in.Default}
	switch in.GetType() {
	case InputPromptString:
		w.Password = in.Password
	case InputPickString:
		w.Options = new(nonNil(in.GetOptions()))
	case InputCommand:
		w.Default = nil
		w.Command = new(in.GetCommand())
		w.Args = structJSON(in.GetArgs())
	default: // an unknown kind keeps whatever it has
		w.Password, w.Command, w.Args = in.Password, in.Command, structJSON(in.GetArgs())
		if len(in.GetOptions()) > 0 {
			w.Options = new(in.GetOptions())
		}
	}
	return w
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
		if err := unmarshalOptions.Unmarshal(raw, in); err != nil {
			return fmt.Errorf("inputs[%d]: %w", i, err)
		}
		m.Inputs = append(m.Inputs, in)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
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

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
