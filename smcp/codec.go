package smcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// The json_name of every field in proto/ is its wire key, so protojson
// speaks the Socket.IO wire form for most messages. EmitDefaultValues makes
// required fields appear even when zero ("total_count": 0, "page_index": 0,
// "documents": []), while optional fields and unset messages stay omitted.
// Unknown keys are ignored on input: newer peers may add fields.
//
// A few shapes differ from what protojson makes of the proto (see wire.go and
// config_wire.go); Marshal and Unmarshal dispatch on those message types
// only, so every other payload takes the plain protojson path.
var (
	marshalOptions   = protojson.MarshalOptions{EmitDefaultValues: true}
	unmarshalOptions = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// Marshal encodes m in its Socket.IO wire JSON form.
func Marshal(m proto.Message) ([]byte, error) {
	b, err := marshal(m)
	if err != nil {
		return nil, fmt.Errorf("smcp: encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return b, nil
}

func marshal(m proto.Message) ([]byte, error) {
	switch m := m.(type) {
	case *smcpv1.OfficeAck:
		return marshalOfficeAck(m)
	case *smcpv1.SMCPTool:
		return marshalOptions.Marshal(fillUnset(m, toolRequired))
	case *smcpv1.GetToolsRet:
		return marshalOptions.Marshal(completeTools(m))
	case *smcpv1.ToolCallReq:
		if b, err := marshalToolCallReq(m); err == nil {
			return b, nil
		}
		return marshalOptions.Marshal(fillUnset(m, callRequired))
	case *smcpv1.DPEElementDetail:
		return marshalOptions.Marshal(fillUnset(m, elementRequired))
	case *smcpv1.MCPServerConfig:
		return marshalServerConfig(m)
	case *smcpv1.MCPServerInput:
		return json.Marshal(inputToWire(m))
	case *smcpv1.GetComputerConfigRet:
		return marshalConfigRet(m)
	}
	if int64AsNumbers(m) {
		return marshalInt64AsNumbers(m)
	}
	return marshalOptions.Marshal(m)
}

// marshalInt64AsNumbers encodes a message whose top-level int64 fields
// (offsets and sizes of blobs) are JSON numbers on the wire
// (PROTOCOL-0.4.md §5.7-5.8): protojson writes 64-bit integers as strings,
// which an SDK with typed integers (serde's u64, pydantic's strict int)
// refuses.
func marshalInt64AsNumbers(m proto.Message) ([]byte, error) {
	// A chunk's base64 (blob) is written as it is, not scanned by protojson
	// for characters to escape and again here: it has none.
	blob, hasBlob := "", false
	if c, ok := m.(interface{ GetBlob() string }); ok && quotesAsIs(c.GetBlob()) {
		blob, hasBlob = c.GetBlob(), true
		m = proto.Clone(m) // shares the string, not its bytes
		m.ProtoReflect().Clear(m.ProtoReflect().Descriptor().Fields().ByJSONName("blob"))
	}
	b, err := marshalOptions.Marshal(m)
	if err != nil {
		return nil, err
	}
	// The fields are scalars: each value is one token, written back as
	// protojson wrote it (a blob chunk's 350 KB of base64 is copied once,
	// never re-encoded nor compacted).
	obj := map[string]json.RawMessage{}
	if err := ObjectFields(b, func(key string, value json.RawMessage) error {
		obj[key] = value
		return nil
	}); err != nil {
		return nil, err
	}
	fields := m.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Kind() != protoreflect.Int64Kind || f.IsList() || f.IsMap() {
			continue
		}
		raw, ok := obj[f.JSONName()]
		if !ok {
			continue
		}
		var digits string
		if json.Unmarshal(raw, &digits) == nil {
			obj[f.JSONName()] = json.RawMessage(digits) // protojson wrote a decimal integer
		}
	}
	// Written back in the message's field order, as protojson wrote them
	// (and as the protocol lists them), not in encoding/json's sorted
	// order: the answers stay byte for byte those of the hand-written
	// structs they replace.
	out := make([]byte, 0, len(b)+len(blob)+2)
	out = append(out, '{')
	write := func(name string, raw json.RawMessage) error {
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, err := json.Marshal(name)
		if err != nil {
			return err
		}
		out = append(out, k...)
		out = append(out, ':')
		if hasBlob && name == "blob" {
			out = append(out, '"')
			out = append(out, blob...)
			out = append(out, '"')
			return nil
		}
		out = append(out, raw...)
		return nil
	}
	for i := range fields.Len() {
		name := fields.Get(i).JSONName()
		if raw, ok := obj[name]; ok {
			if err := write(name, raw); err != nil {
				return nil, err
			}
			delete(obj, name)
		}
	}
	rest := make([]string, 0, len(obj))
	for name := range obj {
		rest = append(rest, name)
	}
	sort.Strings(rest)
	for _, name := range rest {
		if err := write(name, obj[name]); err != nil {
			return nil, err
		}
	}
	out = append(out, '}')
	return out, nil
}

// int64AsNumbers reports whether m is written by marshalInt64AsNumbers,
// whose output is compact already.
func int64AsNumbers(m proto.Message) bool {
	switch m.(type) {
	case *smcpv1.GetBlobReq, *smcpv1.GetBlobRet, *smcpv1.PutBlobReq, *smcpv1.PutBlobRet, *smcpv1.GetSkillRet:
		return true
	}
	return false
}

// Unmarshal decodes wire JSON into m. Besides the canonical form it accepts
// "_meta" for "meta" in a CallToolResult, the {"error": {...}} wrapper for
// an Error, an OfficeAck as [ok, reason], and an MCPServerConfig with its
// server_parameters (missing parameters take the MCP SDK's defaults).
func Unmarshal(b []byte, m proto.Message) error {
	if err := unmarshal(b, m); err != nil {
		return fmt.Errorf("smcp: decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

func unmarshal(b []byte, m proto.Message) error {
	switch m := m.(type) {
	case *smcpv1.GetBlobRet:
		return unmarshalBlob(b, m, func(s string) { m.Blob = s })
	case *smcpv1.PutBlobReq:
		return unmarshalBlob(b, m, func(s string) { m.Blob = s })
	case *smcpv1.OfficeAck:
		return unmarshalOfficeAck(b, m)
	case *smcpv1.ToolCallReq:
		proto.Reset(m)
		if unmarshalToolCallReq(b, m) == nil {
			return nil
		}
		proto.Reset(m)
	case *smcpv1.CallToolResult:
		proto.Reset(m)
		if unmarshalCallToolResult(b, m) == nil {
			return nil
		}
		proto.Reset(m)
		return unmarshalCallToolResultSlow(b, m)
	case *smcpv1.Error:
		return unmarshalError(b, m)
	case *smcpv1.MCPServerConfig:
		return unmarshalServerConfig(b, m)
	case *smcpv1.GetComputerConfigRet:
		return unmarshalConfigRet(b, m)
	case *smcpv1.MCPServerInput:
		proto.Reset(m)
		return unmarshalInput(b, m)
	}
	return unmarshalOptions.Unmarshal(b, m)
}

// quotesAsIs reports whether s is a JSON string's body as it is: printable
// ASCII without quote or backslash (base64 is).
func quotesAsIs(s string) bool {
	for i := plainRun(s); i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// unmarshalBlob decodes a message carrying a chunk's base64 in "blob":
// the chunk, a plain string, is taken as it is (protojson would scan its
// 350 KB for escapes once more, and copy it), the other fields take
// protojson. A blob with escapes takes protojson whole.
func unmarshalBlob(b []byte, m proto.Message, setBlob func(string)) error {
	var blob json.RawMessage
	rest := make([]byte, 0, 256)
	rest = append(rest, '{')
	err := ObjectFields(b, func(key string, value json.RawMessage) error {
		// A string without a backslash is its value as it is (the walk
		// checked it is UTF-8 without control characters).
		if key == "blob" && len(value) >= 2 && value[0] == '"' && bytes.IndexByte(value[1:len(value)-1], '\\') < 0 {
			if blob != nil {
				return errors.New("duplicate blob") // protojson says more
			}
			blob = value
			return nil
		}
		if len(rest) > 1 {
			rest = append(rest, ',')
		}
		k, err := json.Marshal(key)
		if err != nil {
			return err
		}
		rest = append(append(append(rest, k...), ':'), value...)
		return nil
	})
	if err != nil || blob == nil {
		return unmarshalOptions.Unmarshal(b, m)
	}
	if err := unmarshalOptions.Unmarshal(append(rest, '}'), m); err != nil {
		return err
	}
	setBlob(string(blob[1 : len(blob)-1]))
	return nil
}

// unmarshalCallToolResultSlow is the protojson path for a CallToolResult:
// "_meta" is renamed to the proto's "meta" first.
func unmarshalCallToolResultSlow(b []byte, m *smcpv1.CallToolResult) error {
	b, err := renameTopLevel(b, "_meta", "meta")
	if err != nil {
		return err
	}
	return unmarshalOptions.Unmarshal(b, m)
}

// FromWire decodes a value as delivered by a Socket.IO library (maps, slices,
// float64 numbers) into m by re-encoding it as JSON.
func FromWire(v any, m proto.Message) error {
	b, err := MarshalDecoded(v)
	if err != nil {
		return fmt.Errorf("smcp: decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return Unmarshal(b, m)
}

// ToWire encodes m as a json.RawMessage, ready to be emitted or acked. The
// Socket.IO front end sends a RawMessage verbatim, so protojson's
// deliberately unstable white space is removed here.
func ToWire(m proto.Message) (json.RawMessage, error) {
	b, err := Marshal(m)
	if err != nil {
		return nil, err
	}
	if int64AsNumbers(m) {
		return b, nil
	}
	var c bytes.Buffer
	c.Grow(len(b))
	if err := json.Compact(&c, b); err != nil {
		return nil, fmt.Errorf("smcp: encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return c.Bytes(), nil
}
