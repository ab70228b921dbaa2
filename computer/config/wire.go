package config

import "github.com/smcpgw/smcp-gateway/smcp"

// Redacted is the placeholder for secret values in client:get_config.
const Redacted = "***"

// Wire returns the configuration as client:get_config answers it:
// {servers: {name: MCPServerConfig}, inputs: [MCPServerInput]}, with
// placeholders unrendered, env and header values, password defaults and
// the secrets of URLs and command lines (see RedactURL) replaced by Redacted.
func (c *Config) Wire() map[string]any {
	servers := make(map[string]any, len(c.Servers))
	for name, s := range c.Servers {
		servers[name] = s.Wire()
	}
	inputs := make([]any, 0, len(c.Inputs))
	for _, in := range c.Inputs {
		m := map[string]any{"type": in.Type, "id": in.ID, "description": in.Description}
		if in.Default != nil {
			m["default"] = stringify(in.Default) // a string on the wire
			if in.Password != nil && *in.Password {
				m["default"] = Redacted
			}
		}
		if in.Password != nil {
			m["password"] = *in.Password
		}
		if len(in.Options) > 0 {
			m["options"] = in.Options
		}
		if in.Command != "" {
			m["command"] = in.Command
		}
		if len(in.Args) > 0 {
			m["args"] = in.Args
		}
		inputs = append(inputs, m)
	}
	return map[string]any{"servers": servers, "inputs": inputs}
}

// Wire returns the server's MCPServerConfig with the transport defaults of
// the Python SDK filled in, list and map values as strings (the wire types),
// and secrets redacted. Placeholders stay unrendered.
func (s *Server) Wire() map[string]any {
	m := s.Raw()
	for k, def := range map[string]any{"disabled": false, "forbidden_tools": []any{}, "tool_meta": map[string]any{}} {
		if _, ok := m[k]; !ok {
			m[k] = def
		}
	}
	p, _ := m["server_parameters"].(map[string]any)
	if p == nil {
		return m
	}
	var defaults map[string]any
	switch m["type"] {
	case TypeStdio:
		defaults = map[string]any{"args": []any{}, "env": nil, "cwd": nil,
			"encoding": smcp.DefaultStdioEncoding, "encoding_error_handler": smcp.DefaultStdioErrorHandler}
		if args, ok := p["args"].([]any); ok {
			for i, a := range args {
				args[i] = stringify(a)
			}
		}
	case TypeSSE:
		defaults = map[string]any{"headers": nil, "timeout": smcp.DefaultSSETimeout, "sse_read_timeout": smcp.DefaultSSEReadTimeout}
	case TypeStreamable:
		defaults = map[string]any{"headers": nil, "timeout": smcp.DefaultStreamableTimeout,
			"sse_read_timeout": smcp.DefaultStreamableReadTimeout, "terminate_on_close": smcp.DefaultStreamableTerminateOnClose}
	}
	for k, def := range defaults {
		if _, ok := p[k]; !ok {
			p[k] = def
		}
	}
	if u, ok := p["url"].(string); ok {
		p["url"] = RedactURL(u)
	}
	if args, ok := p["args"].([]any); ok {
		redactArgs(args)
	}
	for _, k := range []string{"env", "headers"} {
		if vals, ok := p[k].(map[string]any); ok {
			for name := range vals {
				vals[name] = Redacted
			}
		}
	}
	return m
}
