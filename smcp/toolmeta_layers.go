package smcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The ToolMeta of the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §5.4): three
// layers instead of 0.2's two, and a canonical JSON string with all four
// keys.

// DeclaredToolMetaTags reads what an MCP server declares for one of its
// tools in Tool._meta["a2c_tool_meta"]. Only tags are taken: a server must
// not approve its own calls (auto_apply) or rename its tools; every other
// field is dropped. declared is false when the key is absent. A declaration
// that is not an object, or whose tags are not a list of strings, is an
// error: the caller discards it with a warning and still lists the tool.
func DeclaredToolMetaTags(meta map[string]any) (tags []string, declared bool, err error) {
	v, ok := meta[MetaToolMeta]
	if !ok {
		return nil, false, nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, true, fmt.Errorf("%s is a %T, not an object", MetaToolMeta, v)
	}
	switch t := obj["tags"].(type) {
	case nil:
		return nil, true, nil // absent or null: inherits from below (nothing)
	case []any:
		out := make([]string, 0, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, true, fmt.Errorf("%s.tags[%d] is a %T, not a string", MetaToolMeta, i, e)
			}
			out = append(out, s)
		}
		return out, true, nil
	case []string:
		return t, true, nil
	default:
		return nil, true, fmt.Errorf("%s.tags is a %T, not a list of strings", MetaToolMeta, t)
	}
}

// LayeredToolMeta merges the three layers of §5.4: the tool's own entry
// (tool_meta[tool]) over the server's default_tool_meta over the tags the
// MCP server declared (declared false: no valid declaration). A field that
// is unset (nil, or a JSON null ret_object_mapper) inherits from the layer
// below; tags are replaced whole, and an empty list clears them. alias
// comes from the tool's own entry only (Decision: a default alias would
// give a whole bundle one name). ok is false when no layer exists at all:
// the tool then carries no a2c_tool_meta.
func LayeredToolMeta(own, def *ToolMeta, declaredTags []string, declared bool) (tm ToolMeta, ok bool) {
	if own == nil && def == nil && !declared {
		return ToolMeta{}, false
	}
	if declared && declaredTags != nil {
		tm.Tags = declaredTags
	}
	for _, layer := range []*ToolMeta{def, own} {
		if layer == nil {
			continue
		}
		if layer.AutoApply != nil {
			tm.AutoApply = new(*layer.AutoApply)
		}
		if layer.Tags != nil {
			tm.Tags = layer.Tags
		}
		if !isNull(layer.RetObjectMapper) {
			tm.RetObjectMapper = layer.RetObjectMapper
		}
	}
	if own != nil && own.Alias != nil {
		tm.Alias = new(*own.Alias)
	}
	return tm, true
}

// CanonicalToolMetaJSON is the a2c_tool_meta string of the 0.3 and 0.4
// profiles: a compact JSON object with all four keys, in the order of
// PROTOCOL.md §5, null when unset.
func CanonicalToolMetaJSON(tm ToolMeta) (string, error) {
	var w struct {
		AutoApply       *bool           `json:"auto_apply"`
		Alias           *string         `json:"alias"`
		Tags            []string        `json:"tags"`
		RetObjectMapper json.RawMessage `json:"ret_object_mapper"`
	}
	w.AutoApply, w.Alias, w.Tags = tm.AutoApply, tm.Alias, tm.Tags
	if !isNull(tm.RetObjectMapper) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, tm.RetObjectMapper); err != nil {
			return "", fmt.Errorf("smcp: ret_object_mapper: %w", err)
		}
		w.RetObjectMapper = buf.Bytes()
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", errors.Join(errors.New("smcp: encode tool meta"), err)
	}
	return string(b), nil
}

// Result-level meta keys of the 0.3 and 0.4 profiles (PROTOCOL-0.4.md §6):
// a tool failure that has a protocol code carries it as error_code (0.2's
// a2c_error_code stays in the 0.2 profile); 4006 and 4007 add the bundle id
// of the MCP server and a user-readable hint.
const (
	MetaCode      = "error_code"
	MetaMCPServer = "mcp_server"
	MetaAuthHint  = "auth_hint"
)
