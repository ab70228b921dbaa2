package policy

import (
	"encoding/json"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// lazyMap is a CEL map whose fields are made when an expression reads
// them: a rule that reads args.path decodes that one field of the call's
// arguments, not the whole object (decoding it whole was most of a rule's
// cost per call). Whatever needs the whole map (size, iteration,
// equality) gets it decoded once.
type lazyMap struct {
	find  func(key string) (ref.Val, bool)
	whole func() map[string]any
	full  traits.Mapper
}

var _ traits.Mapper = (*lazyMap)(nil)

func (m *lazyMap) all() traits.Mapper {
	if m.full == nil {
		m.full = types.DefaultTypeAdapter.NativeToValue(m.whole()).(traits.Mapper)
	}
	return m.full
}

func (m *lazyMap) Find(key ref.Val) (ref.Val, bool) {
	if k, ok := key.(types.String); ok {
		return m.find(string(k))
	}
	return m.all().Find(key)
}

func (m *lazyMap) Get(key ref.Val) ref.Val {
	if v, ok := m.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

func (m *lazyMap) Contains(key ref.Val) ref.Val {
	_, ok := m.Find(key)
	return types.Bool(ok)
}

func (m *lazyMap) Iterator() traits.Iterator { return m.all().Iterator() }
func (m *lazyMap) Size() ref.Val             { return m.all().Size() }
func (m *lazyMap) Equal(o ref.Val) ref.Val   { return m.all().Equal(o) }
func (m *lazyMap) Type() ref.Type            { return types.MapType }
func (m *lazyMap) Value() any                { return m.all().Value() }
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val {
	return m.all().ConvertToType(t)
}
func (m *lazyMap) ConvertToNative(t reflect.Type) (any, error) {
	return m.all().ConvertToNative(t)
}

// jsonValue is a JSON value for CEL: an object stays raw until read.
func jsonValue(raw json.RawMessage) ref.Val {
	switch {
	case len(raw) > 0 && raw[0] == '{':
		return jsonObject(raw)
	case len(raw) > 0 && raw[0] == '"':
		if s, err := smcp.RawString(raw); err == nil {
			return types.String(s)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return types.NewErr("args: %v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// jsonObject is a JSON object as a lazyMap.
func jsonObject(raw json.RawMessage) *lazyMap {
	return &lazyMap{
		find: func(key string) (ref.Val, bool) {
			var found json.RawMessage
			// The last of repeated keys, as encoding/json takes it.
			err := smcp.ObjectFields(raw, func(k string, v json.RawMessage) error {
				if k == key {
					found = v
				}
				return nil
			})
			if err != nil || found == nil {
				return nil, false
			}
			return jsonValue(found), true
		},
		whole: func() map[string]any {
			m := map[string]any{}
			_ = json.Unmarshal(raw, &m)
			return m
		},
	}
}
