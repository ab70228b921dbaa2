package smcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// OfficeAckArgs returns the two ack arguments of server:join_office and
// server:leave_office: [true, nil] or [false, "<reason>"].
func OfficeAckArgs(a *smcpv1.OfficeAck) []any {
	if a.Reason != nil {
		return []any{a.GetOk(), a.GetReason()}
	}
	return []any{a.GetOk(), nil}
}

func marshalOfficeAck(a *smcpv1.OfficeAck) ([]byte, error) {
	return json.Marshal(OfficeAckArgs(a))
}

// unmarshalOfficeAck accepts the ack arguments [ok] or [ok, reason|null],
// and the object form {"ok": ..., "reason": ...}.
func unmarshalOfficeAck(b []byte, m *smcpv1.OfficeAck) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return unmarshalOptions.Unmarshal(b, m)
	}
	var args []json.RawMessage
	if err := json.Unmarshal(b, &args); err != nil {
		return err
	}
	if len(args) == 0 || len(args) > 2 {
		return errors.New("office ack must be [ok, reason]")
	}
	proto.Reset(m)
	switch string(bytes.TrimSpace(args[0])) {
	case "true":
		m.Ok = true
	case "false":
	default:
		return errors.New("office ack: ok must be a boolean")
	}
	if len(args) == 2 {
		var reason *string
		if err := json.Unmarshal(args[1], &reason); err != nil {
			return errors.New("office ack: reason must be a string or null")
		}
		m.Reason = reason
	}
	return nil
}

// renameTopLevel renames the top-level key from to to (unless to is already
// there) in a JSON object. Input without the key is returned untouched, so
// only payloads that use the alias pay for the rewrite.
func renameTopLevel(b []byte, from, to string) ([]byte, error) {
	if !bytes.Contains(b, []byte(`"`+from+`"`)) {
		return b, nil
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return b, nil // not an object: protojson reports the error
	}
	v, ok := top[from]
	if !ok {
		return b, nil
	}
	delete(top, from)
	if _, ok := top[to]; !ok {
		top[to] = v
	}
	return json.Marshal(top)
}

// unmarshalError accepts the flat error and the {"error": {...}} wrapper.
func unmarshalError(b []byte, m *smcpv1.Error) error {
	if bytes.Contains(b, []byte(`"error"`)) {
		var top map[string]json.RawMessage
		if json.Unmarshal(b, &top) == nil {
			if inner, ok := top["error"]; ok {
				if _, flat := top["code"]; !flat {
					b = inner
				}
			}
		}
	}
	return unmarshalOptions.Unmarshal(b, m)
}

// ErrorFromAck reports whether an ack value is a protocol error, flat
// {"code", "message", "details"?} or wrapped {"error": {...}}, and decodes
// it. v may be what a Socket.IO library hands over (map[string]any, or a
// one-element []any of the ack arguments) or raw JSON (json.RawMessage,
// []byte). A value is an error when it is an object with an integer "code";
// no answer shape of the protocol has one.
func ErrorFromAck(v any) (*Error, bool) {
	switch x := v.(type) {
	case []any:
		if len(x) == 1 {
			return ErrorFromAck(x[0])
		}
	case map[string]any:
		return errorFromMap(x)
	case json.RawMessage:
		return errorFromJSON(x)
	case []byte:
		return errorFromJSON(x)
	}
	return nil, false
}

func errorFromJSON(b []byte) (*Error, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') || !bytes.Contains(b, []byte(`"code"`)) {
		return nil, false
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return ErrorFromAck(v)
}

func errorFromMap(obj map[string]any) (*Error, bool) {
	if _, flat := obj["code"]; !flat {
		inner, ok := obj["error"].(map[string]any)
		if !ok {
			return nil, false
		}
		obj = inner
	}
	code, ok := integer(obj["code"])
	if !ok {
		return nil, false
	}
	e := &Error{Code: code}
	e.Message, _ = obj["message"].(string)
	if d, ok := obj["details"].(map[string]any); ok && len(d) > 0 {
		e.Details = d
	}
	for k, v := range obj {
		switch k {
		case "code", "message", "details":
		default:
			if e.Fields == nil {
				e.Fields = map[string]any{}
			}
			e.Fields[k] = v
		}
	}
	return e, true
}

func integer(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<31 {
			return int(n), true
		}
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			return int(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), true
		}
	}
	return 0, false
}

// Message fields the wire always shows although the proto gives them
// presence (PROTOCOL.md §5, seed 002): unset, they are sent as {} (a Struct)
// or null (a Value).
var (
	toolRequired    = []protoreflect.Name{"params_schema", "return_schema", "meta"}
	callRequired    = []protoreflect.Name{"params"}
	elementRequired = []protoreflect.Name{"content"}
)

// fillUnset returns m when the named fields are set, otherwise a shallow
// copy of m (sharing every field value) with the unset ones filled. Copying
// keeps Marshal free of side effects on messages other goroutines may read.
func fillUnset(m proto.Message, names []protoreflect.Name) proto.Message {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	var c protoreflect.Message
	for _, name := range names {
		fd := fields.ByName(name)
		if r.Has(fd) {
			continue
		}
		if c == nil {
			c = shallowCopy(r)
		}
		if fd.Message().FullName() == "google.protobuf.Value" {
			c.Set(fd, protoreflect.ValueOfMessage(structpb.NewNullValue().ProtoReflect()))
		} else {
			c.Set(fd, c.NewField(fd))
		}
	}
	if c == nil {
		return m
	}
	return c.Interface()
}

func completeTools(r *smcpv1.GetToolsRet) proto.Message {
	var tools []*smcpv1.SMCPTool
	for i, t := range r.GetTools() {
		c := fillUnset(t, toolRequired).(*smcpv1.SMCPTool)
		if c != t && tools == nil {
			tools = make([]*smcpv1.SMCPTool, len(r.GetTools()))
			copy(tools, r.GetTools()[:i])
		}
		if tools != nil {
			tools[i] = c
		}
	}
	if tools == nil {
		return r
	}
	c := shallowCopy(r.ProtoReflect()).Interface().(*smcpv1.GetToolsRet)
	c.Tools = tools
	return c
}

// shallowCopy returns a new message whose fields share the values of r.
func shallowCopy(r protoreflect.Message) protoreflect.Message {
	c := r.New()
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		c.Set(fd, v)
		return true
	})
	return c
}
