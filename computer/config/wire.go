package config

import (
	"encoding/json"

	"github.com/smcpgw/smcp-gateway/smcp"
)

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
	return map[string]any{"servers": servers, "inputs": c.wireInputs(false)}
}

// WireBundled returns the configuration as client:get_config answers it in
// the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §5.3): servers keyed by bundle
// id, only those of ids (server name → bundle id: the servers agents may
// see, one per bundle id), and pickString options as [{label, value}].
// Each config is as Wire makes it; "name" is display only.
func (c *Config) WireBundled(ids map[string]string) map[string]any {
	servers := make(map[string]any, len(ids))
	for name, id := range ids {
		if s, ok := c.Servers[name]; ok {
			servers[id] = s.Wire()
		}
	}
	return map[string]any{"servers": servers, "inputs": c.wireInputs(true)}
}

func (c *Config) wireInputs(pickObjects bool) []any {
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
		switch choices := in.Choices(); {
		case len(choices) == 0:
		case pickObjects:
			m["options"] = choices
		default: // the 0.2 wire has strings: the values
			values := make([]string, len(choices))
			for i, o := range choices {
				values[i] = o.Value
			}
			m["options"] = values
		}
		if in.Command != "" {
			m["command"] = in.Command
		}
		if len(in.Args) > 0 {
			m["args"] = in.Args
		}
		inputs = append(inputs, m)
	}
	return inputs
}

// Wire returns the server's MCPServerConfig as written, completed with the
// keys the wire always carries (smcp.WireDefaults: the Python SDK's
// transport defaults, empty lists), list and map values as strings (the wire
// types), and secrets redacted. Placeholders stay unrendered, which is why
// this works on the JSON tree and not on the typed model: "${input:port}"
// may stand where the model has a number.
func (s *Server) Wire() map[string]any {
	m := s.Raw()
	typ, _ := m["type"].(string)
	top, defaults, err := smcp.WireDefaults(typ)
	if err != nil { // a loaded Server has a known type
		top, defaults = map[string]any{}, map[string]any{}
	}
	fillMissing(m, top)
	p, _ := m["server_parameters"].(map[string]any)
	if p == nil {
		return m
	}
	fillMissing(p, defaults)
	if typ == TypeStreamable {
		// A number of seconds is a duration in a file; the wire (and the
		// proto) say it the SDK's way, "PT<n>S".
		for _, k := range []string{"timeout", "sse_read_timeout"} {
			if secs, ok := p[k].(float64); ok {
				var d smcp.Duration
				if b, err := json.Marshal(secs); err == nil && d.UnmarshalJSON(b) == nil {
					p[k] = string(d)
				}
			}
		}
	}
	if args, ok := p["args"].([]any); ok {
		for i, a := range args {
			args[i] = stringify(a)
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

// fillMissing sets the keys of defaults that m lacks; a key written as null
// stays null.
func fillMissing(m, defaults map[string]any) {
	for k, def := range defaults {
		if _, ok := m[k]; !ok {
			m[k] = def
		}
	}
}
