package smcp

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// AppendStructWireJSON appends to dst the JSON that Marshal writes for the
// google.protobuf.Struct whose protobuf encoding is wire (keys sorted, as
// appendStruct writes them), read from the encoding directly: a typed
// CallTool's params go to the computer without a Struct being built from the
// request and encoded again. It takes only the plain encodings a protobuf
// encoder writes (each map entry a key and a value, each value one kind, no
// key twice, no unknown field) and returns an error for anything else; the
// caller then decodes the message and encodes the Struct
// (TestStructWireJSONMatchesMarshal).
func AppendStructWireJSON(dst, wire []byte) ([]byte, error) {
	start := len(dst)
	out, err := appendStructWire(dst, wire, 0)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

// entry is one key and value of a Struct's encoding.
type wireEntry struct{ key, value []byte }

func appendStructWire(b, wire []byte, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return nil, errSlow
	}
	var arr [16]wireEntry
	entries := arr[:0]
	for len(wire) > 0 {
		num, typ, n := protowire.ConsumeTag(wire)
		if n < 0 || num != 1 || typ != protowire.BytesType {
			return nil, errSlow
		}
		wire = wire[n:]
		e, n := protowire.ConsumeBytes(wire)
		if n < 0 {
			return nil, errSlow
		}
		wire = wire[n:]
		var ent wireEntry
		var got seen
		for len(e) > 0 {
			num, typ, n := protowire.ConsumeTag(e)
			if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
				return nil, errSlow
			}
			e = e[n:]
			v, n := protowire.ConsumeBytes(e)
			if n < 0 {
				return nil, errSlow
			}
			e = e[n:]
			if err := got.add(uint(num)); err != nil {
				return nil, err
			}
			if num == 1 {
				ent.key = v
			} else {
				ent.value = v
			}
		}
		if got != 1<<1|1<<2 || !validUTF8(ent.key) {
			return nil, errSlow
		}
		entries = append(entries, ent)
	}
	slices.SortFunc(entries, func(a, b wireEntry) int { return bytes.Compare(a.key, b.key) })
	b = append(b, '{')
	var err error
	for i, e := range entries {
		if i > 0 {
			if bytes.Equal(entries[i-1].key, e.key) {
				return nil, errSlow // a key twice: the last wins in decoding
			}
			b = append(b, ',')
		}
		if b, err = appendJSONString(b, string(e.key)); err != nil {
			return nil, err
		}
		b = append(b, ':')
		if b, err = appendValueWire(b, e.value, depth); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendValueWire writes the google.protobuf.Value encoded as wire.
func appendValueWire(b, wire []byte, depth int) ([]byte, error) {
	num, typ, n := protowire.ConsumeTag(wire)
	if n < 0 {
		return nil, errSlow // no kind set (or a broken encoding): the slow path says which
	}
	wire = wire[n:]
	var (
		v   []byte
		u   uint64
		err error
	)
	switch typ {
	case protowire.BytesType:
		v, n = protowire.ConsumeBytes(wire)
	case protowire.VarintType:
		u, n = protowire.ConsumeVarint(wire)
	case protowire.Fixed64Type:
		u, n = protowire.ConsumeFixed64(wire)
	default:
		return nil, errSlow
	}
	if n < 0 || n != len(wire) {
		return nil, errSlow // one kind, once, and nothing else
	}
	switch {
	case num == 1 && typ == protowire.VarintType && u == 0:
		return append(b, "null"...), nil
	case num == 2 && typ == protowire.Fixed64Type:
		return appendJSONNumber(b, math.Float64frombits(u))
	case num == 3 && typ == protowire.BytesType:
		if !validUTF8(v) {
			return nil, errSlow
		}
		return appendJSONString(b, string(v))
	case num == 4 && typ == protowire.VarintType && u <= 1:
		return strconv.AppendBool(b, u == 1), nil
	case num == 5 && typ == protowire.BytesType:
		return appendStructWire(b, v, depth+1)
	case num == 6 && typ == protowire.BytesType:
		if depth+1 > maxFastDepth {
			return nil, errSlow
		}
		b = append(b, '[')
		for i := 0; len(v) > 0; i++ {
			num, typ, n := protowire.ConsumeTag(v)
			if n < 0 || num != 1 || typ != protowire.BytesType {
				return nil, errSlow
			}
			v = v[n:]
			elem, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return nil, errSlow
			}
			v = v[n:]
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValueWire(b, elem, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return nil, errSlow
}

// validUTF8 reports whether s is valid UTF-8, as protobuf requires of a
// string.
func validUTF8(s []byte) bool { return utf8.Valid(s) }
