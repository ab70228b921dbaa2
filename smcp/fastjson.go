package smcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// The messages of every tool call (ToolCallReq, CallToolResult) carry
// google.protobuf.Struct values, which protojson encodes and decodes through
// reflection at ~10 µs a message: with the HTTP work it made a Connect
// CallTool cost 1.7x a Socket.IO one at the gateway. The fast paths below
// write and read those two messages directly. They only take inputs whose
// meaning is plain; anything else (null fields, duplicate or alternate keys,
// escapes they do not decode, numbers out of range, deep nesting) returns
// errSlow and the caller runs protojson, which decides and words the error.
// FuzzFastPaths checks that both ways agree on every input.

var errSlow = errors.New("smcp: input outside the fast path")

// maxFastDepth bounds the nesting the fast reader follows; deeper values go
// to protojson (whose limit is 10,000).
const maxFastDepth = 64

// appendJSONString appends s as a JSON string. Invalid UTF-8 is left to
// protojson, which rejects it.
func appendJSONString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return nil, errSlow
		}
		i += size
	}
	return append(append(b, s[start:]...), '"'), nil
}

// appendJSONNumber formats like encoding/json and protojson (ES6 number
// form); NaN and infinities have no JSON form.
func appendJSONNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errSlow
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7, as the other encoders write it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

func appendValue(b []byte, v *structpb.Value, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return nil, errSlow
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return append(b, "null"...), nil
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), nil
	case *structpb.Value_NumberValue:
		return appendJSONNumber(b, k.NumberValue)
	case *structpb.Value_StringValue:
		return appendJSONString(b, k.StringValue)
	case *structpb.Value_StructValue:
		return appendStruct(b, k.StructValue, depth+1)
	case *structpb.Value_ListValue:
		return appendArray(b, k.ListValue.GetValues(), depth+1, appendValue)
	}
	return nil, errSlow // no kind set: protojson reports it
}

// appendStruct writes the keys in sorted order, as protojson does, so that
// equal messages encode to equal bytes.
func appendStruct(b []byte, s *structpb.Struct, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return nil, errSlow
	}
	return appendObject(b, s.GetFields(), depth, appendValue)
}

// appendObject writes m with its keys in sorted order, each value by
// value at depth.
func appendObject[V any](b []byte, m map[string]V, depth int, value func([]byte, V, int) ([]byte, error)) ([]byte, error) {
	b = append(b, '{')
	var err error
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSONString(b, k); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = value(b, m[k], depth); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendArray writes s, each element by value at depth.
func appendArray[V any](b []byte, s []V, depth int, value func([]byte, V, int) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = value(b, e, depth); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// marshalToolCallReq is the wire form of marshal's protojson path for a
// ToolCallReq (every field emitted, params {} when unset).
func marshalToolCallReq(m *smcpv1.ToolCallReq) ([]byte, error) {
	b := make([]byte, 0, 128)
	var err error
	for _, f := range [...]struct{ key, val string }{
		{`{"agent":`, m.GetAgent()}, {`,"req_id":`, m.GetReqId()},
		{`,"computer":`, m.GetComputer()}, {`,"tool_name":`, m.GetToolName()},
	} {
		b = append(b, f.key...)
		if b, err = appendJSONString(b, f.val); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"params":`...)
	if b, err = appendStruct(b, m.GetParams(), 0); err != nil {
		return nil, err
	}
	b = append(b, `,"timeout":`...)
	b = strconv.AppendInt(b, int64(m.GetTimeout()), 10)
	return append(b, '}'), nil
}

// jsonReader reads the JSON the fast paths accept, from b at i.
type jsonReader struct {
	b     []byte
	i     int
	depth int
}

func (r *jsonReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (r *jsonReader) peek() byte {
	r.space()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

func (r *jsonReader) expect(c byte) error {
	if r.peek() != c {
		return errSlow
	}
	r.i++
	return nil
}

func (r *jsonReader) literal(word string) error {
	if len(r.b)-r.i < len(word) || string(r.b[r.i:r.i+len(word)]) != word {
		return errSlow
	}
	r.i += len(word)
	return nil
}

// end checks that nothing but white space follows.
func (r *jsonReader) end() error {
	if r.peek() != 0 || r.i != len(r.b) {
		return errSlow
	}
	return nil
}

// str reads a string; the caller has seen its opening quote.
func (r *jsonReader) str() (string, error) {
	r.i++
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		case c == '\\':
			return r.escapedStr(start)
		case c < 0x20:
			return "", errSlow
		case c < utf8.RuneSelf:
			r.i++
		default:
			ch, size := utf8.DecodeRune(r.b[r.i:])
			if ch == utf8.RuneError && size == 1 {
				return "", errSlow
			}
			r.i += size
		}
	}
	return "", errSlow
}

// escapedStr finishes a string holding escapes, from start (after the
// opening quote) with r.i at the first backslash. Its buffer is sized once:
// the string unescaped is never longer than it is in JSON.
func (r *jsonReader) escapedStr(start int) (string, error) {
	out, err := r.appendEscaped(make([]byte, 0, quotedLen(r.b, r.i)-start), start)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// quotedLen is the index in b of the quote that ends the string i is in
// (escapes skipped), or len(b) if it does not end.
func quotedLen(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case '"':
			return i
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return len(b)
}

// strInto is str appending the string's value to dst: the wire writers
// copy it into their output at once, so one scratch buffer serves every
// string with escapes (JSON text in a tool's text content is full of them).
func (r *jsonReader) strInto(dst []byte) ([]byte, error) {
	r.i++
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			dst = append(dst, r.b[start:r.i]...)
			r.i++
			return dst, nil
		case c == '\\':
			if n := quotedLen(r.b, r.i) - start; cap(dst)-len(dst) < n {
				dst = append(make([]byte, 0, len(dst)+n), dst...)
			}
			return r.appendEscaped(dst, start)
		case c < 0x20:
			return nil, errSlow
		case c < utf8.RuneSelf:
			r.i++
		default:
			ch, size := utf8.DecodeRune(r.b[r.i:])
			if ch == utf8.RuneError && size == 1 {
				return nil, errSlow
			}
			r.i += size
		}
	}
	return nil, errSlow
}

// appendEscaped appends to out the value of a string holding escapes, from
// start (after the opening quote) with r.i at the first backslash.
func (r *jsonReader) appendEscaped(out []byte, start int) ([]byte, error) {
	out = append(out, r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return out, nil
		case c == '\\':
			if r.i+1 >= len(r.b) {
				return nil, errSlow
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				ch, ok := r.hex4()
				if !ok {
					return nil, errSlow
				}
				if utf16.IsSurrogate(ch) {
					// Only a well-formed pair; lone halves go to protojson.
					if r.i+1 >= len(r.b) || r.b[r.i] != '\\' || r.b[r.i+1] != 'u' {
						return nil, errSlow
					}
					r.i += 2
					lo, ok := r.hex4()
					if !ok {
						return nil, errSlow
					}
					if ch = utf16.DecodeRune(ch, lo); ch == utf8.RuneError {
						return nil, errSlow
					}
				}
				out = utf8.AppendRune(out, ch)
			default:
				return nil, errSlow
			}
		case c < 0x20:
			return nil, errSlow
		case c < utf8.RuneSelf:
			out = append(out, c)
			r.i++
		default:
			ch, size := utf8.DecodeRune(r.b[r.i:])
			if ch == utf8.RuneError && size == 1 {
				return nil, errSlow
			}
			out = append(out, r.b[r.i:r.i+size]...)
			r.i += size
		}
	}
	return nil, errSlow
}

func (r *jsonReader) hex4() (rune, bool) {
	if len(r.b)-r.i < 4 {
		return 0, false
	}
	var v rune
	for _, c := range r.b[r.i : r.i+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	r.i += 4
	return v, true
}

// numberLiteral reads a number in JSON's grammar and returns its text.
func (r *jsonReader) numberLiteral() ([]byte, error) {
	r.space()
	start := r.i
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	first := r.i
	if n := digits(); n == 0 || (n > 1 && r.b[first] == '0') {
		return nil, errSlow
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return nil, errSlow
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return nil, errSlow
		}
	}
	return r.b[start:r.i], nil
}

func (r *jsonReader) value() (*structpb.Value, error) {
	switch c := r.peek(); {
	case c == '"':
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		return structpb.NewStringValue(s), nil
	case c == '{':
		s, err := r.structValue()
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case c == '[':
		l, err := r.list()
		if err != nil {
			return nil, err
		}
		return structpb.NewListValue(l), nil
	case c == 't':
		return structpb.NewBoolValue(true), r.literal("true")
	case c == 'f':
		return structpb.NewBoolValue(false), r.literal("false")
	case c == 'n':
		return structpb.NewNullValue(), r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := r.numberLiteral()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			return nil, errSlow
		}
		return structpb.NewNumberValue(f), nil
	}
	return nil, errSlow
}

// object calls field for each key of an object, with r before its value;
// field must read the value.
func (r *jsonReader) object(field func(key string) error) error {
	if r.depth++; r.depth > maxFastDepth {
		return errSlow
	}
	defer func() { r.depth-- }()
	if err := r.expect('{'); err != nil {
		return err
	}
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.peek() != '"' {
			return errSlow
		}
		key, err := r.str()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return errSlow
		}
	}
}

// structObject reads an object as a Struct; null or any other value is
// protojson's call.
func (r *jsonReader) structObject() (*structpb.Struct, error) {
	if r.peek() != '{' {
		return nil, errSlow
	}
	return r.structValue()
}

func (r *jsonReader) structValue() (*structpb.Struct, error) {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	err := r.object(func(key string) error {
		if _, dup := s.Fields[key]; dup {
			return errSlow
		}
		v, err := r.value()
		s.Fields[key] = v
		return err
	})
	return s, err
}

// array calls elem for each element of an array, with r before it; elem
// must read the element.
func (r *jsonReader) array(elem func() error) error {
	if r.depth++; r.depth > maxFastDepth {
		return errSlow
	}
	defer func() { r.depth-- }()
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return errSlow
		}
	}
}

func (r *jsonReader) list() (*structpb.ListValue, error) {
	l := &structpb.ListValue{}
	err := r.array(func() error {
		v, err := r.value()
		l.Values = append(l.Values, v)
		return err
	})
	return l, err
}

// skip reads a value of a key the message does not have; protojson
// (DiscardUnknown) still requires it to be valid JSON.
func (r *jsonReader) skip() error {
	_, err := r.value()
	return err
}

// unknownKey reports whether key names no field of d under any spelling
// protojson accepts (JSON name or proto name): only those are skipped.
func unknownKey(d protoreflect.MessageDescriptor, key string) bool {
	f := d.Fields()
	return f.ByJSONName(key) == nil && f.ByTextName(key) == nil
}

// seen tracks the keys of a message read so far: a repeated key is
// protojson's to reject.
type seen uint32

func (s *seen) add(bit uint) error {
	if *s&(1<<bit) != 0 {
		return errSlow
	}
	*s |= 1 << bit
	return nil
}

func unmarshalToolCallReq(b []byte, m *smcpv1.ToolCallReq) error {
	r := jsonReader{b: b}
	var got seen
	str := func(bit uint, dst *string) error {
		if err := got.add(bit); err != nil {
			return err
		}
		if r.peek() != '"' {
			return errSlow
		}
		s, err := r.str()
		*dst = s
		return err
	}
	err := r.object(func(key string) error {
		switch key {
		case "agent":
			return str(0, &m.Agent)
		case "req_id":
			return str(1, &m.ReqId)
		case "computer":
			return str(2, &m.Computer)
		case "tool_name":
			return str(3, &m.ToolName)
		case "params":
			if err := got.add(4); err != nil {
				return err
			}
			s, err := r.structObject()
			m.Params = s
			return err
		case "timeout":
			if err := got.add(5); err != nil {
				return err
			}
			lit, err := r.numberLiteral()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(string(lit), 10, 32)
			if err != nil {
				return errSlow // 30.0, 3e1, out of range: protojson's call
			}
			m.Timeout = int32(n)
			return nil
		}
		if !unknownKey(m.ProtoReflect().Descriptor(), key) {
			return errSlow
		}
		return r.skip()
	})
	if err != nil {
		return err
	}
	return r.end()
}

// unmarshalCallToolResult reads the answer of a tool call, "_meta" taken for
// "meta" unless both are present (then "meta" wins), as renameTopLevel does.
func unmarshalCallToolResult(b []byte, m *smcpv1.CallToolResult) error {
	r := jsonReader{b: b}
	var got seen
	var underscoreMeta *structpb.Struct
	meta := func(bit uint, dst **structpb.Struct) error {
		if err := got.add(bit); err != nil {
			return err
		}
		s, err := r.structObject()
		*dst = s
		return err
	}
	err := r.object(func(key string) error {
		switch key {
		case "content":
			if err := got.add(0); err != nil {
				return err
			}
			return r.array(func() error {
				s, err := r.structObject()
				m.Content = append(m.Content, s)
				return err
			})
		case "isError":
			if err := got.add(1); err != nil {
				return err
			}
			switch r.peek() {
			case 't':
				m.IsError = new(true)
				return r.literal("true")
			case 'f':
				m.IsError = new(false)
				return r.literal("false")
			}
			return errSlow
		case "structuredContent":
			if err := got.add(2); err != nil {
				return err
			}
			if r.peek() == 'n' {
				return errSlow
			}
			v, err := r.value()
			m.StructuredContent = v
			return err
		case "meta":
			return meta(3, &m.Meta)
		case "_meta":
			return meta(4, &underscoreMeta)
		}
		if !unknownKey(m.ProtoReflect().Descriptor(), key) {
			return errSlow
		}
		return r.skip()
	})
	if err != nil {
		return err
	}
	if m.Meta == nil {
		m.Meta = underscoreMeta
	}
	return r.end()
}

// MarshalDecoded encodes a value as a Socket.IO library delivers it
// (map[string]any, []any, string, float64, bool, nil) to JSON with the
// meaning encoding/json gives it, keys in sorted order, at a fraction of its
// cost: the gateway re-encodes every request and answer it relays. Other
// types, and the inputs the direct writer leaves alone (invalid UTF-8, NaN,
// deep nesting), take encoding/json.
func MarshalDecoded(v any) ([]byte, error) {
	if b, err := appendDecoded(make([]byte, 0, 256), v, 0); err == nil {
		return b, nil
	}
	return json.Marshal(v)
}

func appendDecoded(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return nil, errSlow
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, x)
	case float64:
		return appendJSONNumber(b, x)
	case bool:
		return strconv.AppendBool(b, x), nil
	case map[string]any:
		return appendObject(b, x, depth+1, appendDecoded)
	case []any:
		return appendArray(b, x, depth+1, appendDecoded)
	}
	return nil, errSlow
}

// ToolCallPayload is the wire form of a ToolCallReq whose params are given
// as JSON text: params is written as it is (the caller checked it), so a
// front end holding exact JSON forwards it byte for byte.
func ToolCallPayload(m *smcpv1.ToolCallReq, params json.RawMessage) ([]byte, error) {
	b, err := appendToolCallHead(make([]byte, 0, 128+len(params)), m)
	if err != nil {
		return nil, err
	}
	return appendToolCallTail(append(b, params...), m), nil
}

// ToolCallPayloadStructWire is ToolCallPayload with params written from
// the protobuf encoding of a Struct (AppendStructWireJSON) straight into
// the payload. paramsOK is false, and nothing returned, when that writer
// leaves the encoding to protojson; err is an error of the other fields.
func ToolCallPayloadStructWire(m *smcpv1.ToolCallReq, params []byte) (payload []byte, paramsOK bool, err error) {
	b, err := appendToolCallHead(make([]byte, 0, 144+len(params)+len(params)/4), m)
	if err != nil {
		return nil, true, err
	}
	if b, err = AppendStructWireJSON(b, params); err != nil {
		return nil, false, nil
	}
	return appendToolCallTail(b, m), true, nil
}

// appendToolCallHead writes a ToolCallReq's fields up to the value of
// params; appendToolCallTail the rest.
func appendToolCallHead(b []byte, m *smcpv1.ToolCallReq) ([]byte, error) {
	var err error
	for _, f := range [...]struct{ key, val string }{
		{`{"agent":`, m.GetAgent()}, {`,"req_id":`, m.GetReqId()},
		{`,"computer":`, m.GetComputer()}, {`,"tool_name":`, m.GetToolName()},
	} {
		b = append(b, f.key...)
		if b, err = appendJSONString(b, f.val); err != nil {
			return nil, fmt.Errorf("smcp: encode ToolCallReq: %w", err)
		}
	}
	return append(b, `,"params":`...), nil
}

func appendToolCallTail(b []byte, m *smcpv1.ToolCallReq) []byte {
	b = append(b, `,"timeout":`...)
	b = strconv.AppendInt(b, int64(m.GetTimeout()), 10)
	return append(b, '}')
}
