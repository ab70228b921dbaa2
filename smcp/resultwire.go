package smcp

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// AppendCallToolResultWire appends to dst the protobuf encoding of the
// CallToolResult that Unmarshal would read from the JSON answer b, written
// from b directly: no Struct, Value or map is built to be marshalled and
// dropped at once, which is most of what the typed API spent on an answer's
// way through (BENCHMARKS.md, "Typed RPC"). It takes the fast reader's rules
// (the same keys, "_meta" for "meta" unless both are given, duplicate keys
// refused) and returns an error for whatever that reader leaves to protojson;
// the caller then decodes b with Unmarshal, whose result this one's bytes
// decode to (TestCallToolResultWireMatchesUnmarshal).
func AppendCallToolResultWire(dst, b []byte) ([]byte, error) {
	w := wireWriter{jsonReader: jsonReader{b: b}}
	start := len(dst)
	var got seen
	// underscore is where the "_meta" field was written, if it was.
	underscore := [2]int{-1, -1}
	err := w.object(func(key []byte) error {
		switch string(key) {
		case "content":
			if err := got.add(0); err != nil {
				return err
			}
			return w.array(func() error {
				if w.peek() != '{' {
					return errSlow
				}
				return w.nested(&dst, 1, func() error { return w.structBody(&dst) })
			})
		case "isError":
			if err := got.add(1); err != nil {
				return err
			}
			var v uint64
			switch w.peek() {
			case 't':
				v = 1
				if err := w.literal("true"); err != nil {
					return err
				}
			case 'f':
				if err := w.literal("false"); err != nil {
					return err
				}
			default:
				return errSlow
			}
			dst = protowire.AppendTag(dst, 2, protowire.VarintType)
			dst = protowire.AppendVarint(dst, v)
			return nil
		case "structuredContent":
			if err := got.add(2); err != nil {
				return err
			}
			if w.peek() == 'n' {
				return errSlow
			}
			return w.nested(&dst, 3, func() error { return w.valueBody(&dst) })
		case "meta":
			if err := got.add(3); err != nil {
				return err
			}
			if w.peek() != '{' {
				return errSlow
			}
			if underscore[0] >= 0 {
				// "meta" wins over an earlier "_meta": drop that one.
				dst = append(dst[:underscore[0]], dst[underscore[1]:]...)
			}
			return w.nested(&dst, 4, func() error { return w.structBody(&dst) })
		case "_meta":
			if err := got.add(4); err != nil {
				return err
			}
			if w.peek() != '{' {
				return errSlow
			}
			if got&(1<<3) != 0 {
				// "meta" came first and wins; "_meta" must still be valid.
				scratch := make([]byte, 0, 64)
				return w.structBody(&scratch)
			}
			underscore[0] = len(dst)
			err := w.nested(&dst, 4, func() error { return w.structBody(&dst) })
			underscore[1] = len(dst)
			return err
		}
		if !unknownKey(callToolResultDesc, string(key)) {
			return errSlow
		}
		return w.skip()
	})
	if err == nil {
		err = w.end()
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// wireWriter reads JSON with jsonReader's rules and writes the protobuf
// encoding of google.protobuf.Struct, Value and ListValue.
type wireWriter struct {
	jsonReader
	key []byte // scratch for keys with escapes
	val []byte // scratch for string values with escapes (strBytes)
}

// nested writes field num as a length-delimited message whose body body
// appends to *dst, then moves the body to make room for its length.
func (w *wireWriter) nested(dst *[]byte, num protowire.Number, body func() error) error {
	*dst = protowire.AppendTag(*dst, num, protowire.BytesType)
	at := len(*dst)
	if err := body(); err != nil {
		return err
	}
	n := len(*dst) - at
	k := protowire.SizeVarint(uint64(n))
	*dst = append(*dst, make([]byte, k)...)
	copy((*dst)[at+k:], (*dst)[at:at+n])
	protowire.AppendVarint((*dst)[at:at], uint64(n))
	return nil
}

// object calls field for each key of an object (unescaped, valid until the
// next key), with w before its value; field must read the value.
func (w *wireWriter) object(field func(key []byte) error) error {
	if w.depth++; w.depth > maxFastDepth {
		return errSlow
	}
	defer func() { w.depth-- }()
	if err := w.expect('{'); err != nil {
		return err
	}
	if w.peek() == '}' {
		w.i++
		return nil
	}
	for {
		key, err := w.rawKey()
		if err != nil {
			return err
		}
		if err := w.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
			w.i++
			return nil
		default:
			return errSlow
		}
	}
}

// rawKey reads an object key, a sub-slice of the input when it holds no
// escape.
func (w *wireWriter) rawKey() ([]byte, error) {
	if w.peek() != '"' {
		return nil, errSlow
	}
	start := w.i + 1
	if end := bytes.IndexByte(w.b[start:], '"'); end >= 0 {
		s := w.b[start : start+end]
		if bytes.IndexByte(s, '\\') < 0 {
			if !validPlain(s) {
				return nil, errSlow
			}
			w.i = start + end + 1
			return s, nil
		}
	}
	var err error
	w.key, err = w.strInto(w.key[:0])
	return w.key, err
}

// validPlain reports whether s, a string without escapes, is what str
// accepts: valid UTF-8 and no control character.
func validPlain(s []byte) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			ch, size := utf8.DecodeRune(s[i:])
			if ch == utf8.RuneError && size == 1 {
				return false
			}
			i += size
		}
	}
	return true
}

// callToolResultDesc is the descriptor unknown keys are looked up in.
var callToolResultDesc = (&smcpv1.CallToolResult{}).ProtoReflect().Descriptor()

// structBody writes the fields of the Struct read from an object.
func (w *wireWriter) structBody(dst *[]byte) error {
	// keys are where each entry's key was written in *dst (nothing before
	// them moves while the object is read).
	type span struct{ at, n int }
	var keysArr [16]span
	keys := keysArr[:0]
	return w.object(func(key []byte) error {
		// A key given twice is protojson's to refuse.
		for _, k := range keys {
			if bytes.Equal((*dst)[k.at:k.at+k.n], key) {
				return errSlow
			}
		}
		entry := len(*dst)
		n := len(key)
		err := w.nested(dst, 1, func() error {
			*dst = protowire.AppendTag(*dst, 1, protowire.BytesType)
			*dst = protowire.AppendBytes(*dst, key)
			return w.nested(dst, 2, func() error { return w.valueBody(dst) })
		})
		if err != nil {
			return err
		}
		// The entry: its tag, its length, the key's tag and length, the key.
		at := entry + 1
		_, k := protowire.ConsumeVarint((*dst)[at:])
		at += k + 1 + protowire.SizeVarint(uint64(n))
		keys = append(keys, span{at, n})
		return nil
	})
}

// valueBody writes the Value read from any JSON value.
func (w *wireWriter) valueBody(dst *[]byte) error {
	switch c := w.peek(); {
	case c == '"':
		s, err := w.strBytes()
		if err != nil {
			return err
		}
		*dst = protowire.AppendTag(*dst, 3, protowire.BytesType)
		*dst = protowire.AppendBytes(*dst, s)
		return nil
	case c == '{':
		return w.nested(dst, 5, func() error { return w.structBody(dst) })
	case c == '[':
		return w.nested(dst, 6, func() error {
			return w.array(func() error {
				return w.nested(dst, 1, func() error { return w.valueBody(dst) })
			})
		})
	case c == 't' || c == 'f':
		v := uint64(0)
		word := "false"
		if c == 't' {
			v, word = 1, "true"
		}
		*dst = protowire.AppendTag(*dst, 4, protowire.VarintType)
		*dst = protowire.AppendVarint(*dst, v)
		return w.literal(word)
	case c == 'n':
		*dst = protowire.AppendTag(*dst, 1, protowire.VarintType)
		*dst = protowire.AppendVarint(*dst, 0)
		return w.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		lit, err := w.numberLiteral()
		if err != nil {
			return err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			return errSlow
		}
		*dst = protowire.AppendTag(*dst, 2, protowire.Fixed64Type)
		*dst = protowire.AppendFixed64(*dst, math.Float64bits(f))
		return nil
	}
	return errSlow
}

// strBytes reads a string value, a sub-slice of the input when it holds no
// escape.
func (w *wireWriter) strBytes() ([]byte, error) {
	start := w.i + 1
	if end := bytes.IndexByte(w.b[start:], '"'); end >= 0 {
		s := w.b[start : start+end]
		if bytes.IndexByte(s, '\\') < 0 && validPlain(s) {
			w.i = start + end + 1
			return s, nil
		}
	}
	var err error
	w.val, err = w.strInto(w.val[:0])
	return w.val, err
}
