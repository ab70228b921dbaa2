package smcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Keys of SMCPTool.meta and of CallToolResult.meta (PROTOCOL.md §4-§5).
const (
	MetaToolMeta       = "a2c_tool_meta"       // SMCPTool: JSON string of the effective ToolMeta
	MetaToolAnnotation = "MCP_TOOL_ANNOTATION" // SMCPTool: JSON string of the MCP tool annotations
	MetaTimeout        = "a2c_timeout"         // result: the gateway gave up waiting
	MetaCancelled      = "a2c_cancelled"       // result: the agent cancelled the call
	MetaCancelReason   = "a2c_cancel_reason"   // result: why it was cancelled
	MetaErrorCode      = "a2c_error_code"      // result: protocol error code behind isError
	MetaJQTransformed  = "a2c_jq_transformed"  // result: the server's result_jq rewrote it (the Python SDK's a2c_vrl_transformed, for jq)

	// CancelReasonAgent is the a2c_cancel_reason of a cancellation that came
	// from notify:tool_call_cancel.
	CancelReasonAgent = "agent_requested"
)

// EffectiveToolMeta merges a server's default_tool_meta with a tool's own
// entry: every field the tool sets wins, the others come from the default
// (a shallow merge; empty tags and a JSON-null ret_object_mapper count as
// unset). It returns nil when neither sets anything. The inputs are not
// modified.
func EffectiveToolMeta(defaultMeta, own *smcpv1.ToolMeta) *smcpv1.ToolMeta {
	out := &smcpv1.ToolMeta{}
	for _, src := range []*smcpv1.ToolMeta{defaultMeta, own} {
		if src == nil {
			continue
		}
		if src.AutoApply != nil {
			out.AutoApply = new(src.GetAutoApply())
		}
		if src.Alias != nil {
			out.Alias = new(src.GetAlias())
		}
		if len(src.Tags) > 0 {
			out.Tags = slices.Clone(src.Tags)
		}
		if v := src.GetRetObjectMapper(); v != nil && v.GetKind() != nil {
			if _, null := v.GetKind().(*structpb.Value_NullValue); !null {
				out.RetObjectMapper = proto.CloneOf(v)
			}
		}
	}
	if proto.Size(out) == 0 {
		return nil
	}
	return out
}

// ToolMetaJSON renders a ToolMeta as the compact JSON string carried in
// SMCPTool.meta["a2c_tool_meta"], with only the fields that are set.
func ToolMetaJSON(tm *smcpv1.ToolMeta) (string, error) {
	b, err := protojson.Marshal(tm)
	if err != nil {
		return "", fmt.Errorf("smcp: encode tool meta: %w", err)
	}
	// protojson may add spaces; the string is compared byte for byte by
	// golden tests and caches, so make it canonical.
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "", fmt.Errorf("smcp: encode tool meta: %w", err)
	}
	return buf.String(), nil
}

// ToolMetaFromSMCP decodes the a2c_tool_meta JSON string of an SMCPTool's
// meta; it returns nil when the tool has none.
func ToolMetaFromSMCP(meta *structpb.Struct) (*smcpv1.ToolMeta, error) {
	v, ok := meta.GetFields()[MetaToolMeta]
	if !ok {
		return nil, nil
	}
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return nil, fmt.Errorf("smcp: %s must be a JSON string", MetaToolMeta)
	}
	tm := &smcpv1.ToolMeta{}
	if err := unmarshalOptions.Unmarshal([]byte(s.StringValue), tm); err != nil {
		return nil, fmt.Errorf("smcp: decode %s: %w", MetaToolMeta, err)
	}
	return tm, nil
}

// BuildToolMeta makes SMCPTool.meta: the MCP tool's own _meta keys, then
// MCP_TOOL_ANNOTATION as a JSON string of annotations (skipped when nil or
// encoding to null), then a2c_tool_meta as a JSON string of the effective
// ToolMeta (skipped when nil). meta is flat: own values that are objects or
// lists of non-strings are carried as their JSON text. A tool with none of
// the three gets {}.
func BuildToolMeta(effective *smcpv1.ToolMeta, annotations any, own map[string]any) (*structpb.Struct, error) {
	fields := make(map[string]*structpb.Value, len(own)+2)
	for k, v := range own {
		fv, err := flatValue(v)
		if err != nil {
			return nil, fmt.Errorf("smcp: tool _meta %q: %w", k, err)
		}
		fields[k] = fv
	}
	if annotations != nil {
		b, err := json.Marshal(annotations)
		if err != nil {
			return nil, fmt.Errorf("smcp: encode tool annotations: %w", err)
		}
		if string(b) != "null" {
			fields[MetaToolAnnotation] = structpb.NewStringValue(string(b))
		}
	}
	if effective != nil {
		s, err := ToolMetaJSON(effective)
		if err != nil {
			return nil, err
		}
		fields[MetaToolMeta] = structpb.NewStringValue(s)
	}
	return &structpb.Struct{Fields: fields}, nil
}

// flatValue converts v to a scalar or a list of strings; anything else
// becomes its JSON text.
func flatValue(v any) (*structpb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := json.Unmarshal(b, &decoded); err != nil {
		return nil, err
	}
	switch d := decoded.(type) {
	case map[string]any:
		return structpb.NewStringValue(string(b)), nil
	case []any:
		for _, e := range d {
			if _, ok := e.(string); !ok {
				return structpb.NewStringValue(string(b)), nil
			}
		}
	}
	return structpb.NewValue(decoded)
}
