package smcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// The proto form of the configuration model is derived from it, not
// written out: a model field and a proto field are the same field when the
// model's JSON key (or its `proto` tag) is the proto field's json_name,
// which in proto/ is always the wire key. A struct field whose key names no
// proto field is a group whose own fields sit in the same message (the
// server_parameters oneof).
//
// Presence follows the model: a nil pointer is an unset optional field or
// message. Proto3 does not tell an empty map or list from an unset one, so
// both read back as nil: an "env": {} that went through the proto comes
// back as the SDK's "env": null.

// Proto returns the proto form of c (MCPServerConfig), as is: nothing is
// completed.
func (c *ServerConfig) Proto() (*smcpv1.MCPServerConfig, error) {
	m := &smcpv1.MCPServerConfig{}
	if err := c.toProto(m); err != nil {
		return nil, err
	}
	return m, nil
}

func (c *ServerConfig) toProto(m *smcpv1.MCPServerConfig) error {
	if err := c.checkParams(); err != nil {
		return err
	}
	if err := copyToProto(reflect.ValueOf(c).Elem(), m.ProtoReflect()); err != nil {
		return fmt.Errorf("server %q: %w", c.Name, err)
	}
	return nil
}

// ServerConfigFromProto returns the model of m, as is: nothing is
// completed. The type, when empty, is taken from the parameters.
func ServerConfigFromProto(m *smcpv1.MCPServerConfig) (*ServerConfig, error) {
	c := &ServerConfig{}
	if err := copyFromProto(m.ProtoReflect(), reflect.ValueOf(c).Elem()); err != nil {
		return nil, fmt.Errorf("server %q: %w", m.GetName(), err)
	}
	if err := c.checkParams(); err != nil {
		return nil, err
	}
	if c.Type == "" {
		c.Type = c.Params.Type()
	}
	return c, nil
}

// Proto returns the proto form of tm.
func (tm *ToolMeta) Proto() (*smcpv1.ToolMeta, error) {
	m := &smcpv1.ToolMeta{}
	if err := copyToProto(reflect.ValueOf(tm).Elem(), m.ProtoReflect()); err != nil {
		return nil, err
	}
	return m, nil
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	valueName      = (&structpb.Value{}).ProtoReflect().Descriptor().FullName()
)

// protoKey is the json_name of the proto field a model field maps to; ""
// for a field that has none.
func protoKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	if k, ok := f.Tag.Lookup("proto"); ok {
		return k
	}
	k, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// pairFields calls fn for each field of the model struct v and the proto
// field of md it maps to, descending into groups.
func pairFields(v reflect.Value, md protoreflect.MessageDescriptor, fn func(fd protoreflect.FieldDescriptor, fv reflect.Value) error) error {
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		key := protoKey(sf)
		if key == "" {
			continue
		}
		fd := md.Fields().ByJSONName(key)
		switch {
		case fd != nil:
			if err := fn(fd, v.Field(i)); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		case sf.Type.Kind() == reflect.Struct:
			if err := pairFields(v.Field(i), md, fn); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s has no field %q for %s.%s", md.FullName(), key, v.Type().Name(), sf.Name)
		}
	}
	return nil
}

func copyToProto(v reflect.Value, m protoreflect.Message) error {
	return pairFields(v, m.Descriptor(), func(fd protoreflect.FieldDescriptor, fv reflect.Value) error {
		return setProtoField(m, fd, fv)
	})
}

func setProtoField(m protoreflect.Message, fd protoreflect.FieldDescriptor, fv reflect.Value) error {
	switch {
	case fv.Type() == rawMessageType || fv.Kind() == reflect.Pointer || fv.Kind() == reflect.Interface:
		if fv.IsNil() {
			return nil
		}
	case fd.IsMap():
		if fv.IsNil() {
			return nil
		}
		mp := m.Mutable(fd).Map()
		for it := fv.MapRange(); it.Next(); {
			val, err := protoValue(fd.MapValue(), it.Value(), mp.NewValue)
			if err != nil {
				return fmt.Errorf("%q: %w", it.Key().String(), err)
			}
			mp.Set(protoreflect.ValueOfString(it.Key().String()).MapKey(), val)
		}
		return nil
	case fd.IsList():
		if fv.IsNil() {
			return nil
		}
		l := m.Mutable(fd).List()
		for i := range fv.Len() {
			val, err := protoValue(fd, fv.Index(i), l.NewElement)
			if err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
			l.Append(val)
		}
		return nil
	}
	val, err := protoValue(fd, fv, func() protoreflect.Value { return m.NewField(fd) })
	if err != nil {
		return err
	}
	m.Set(fd, val)
	return nil
}

// protoValue converts one model value (not a map or list) to fd's kind.
func protoValue(fd protoreflect.FieldDescriptor, v reflect.Value, newMsg func() protoreflect.Value) (protoreflect.Value, error) {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if v.Kind() == reflect.String {
			return protoreflect.ValueOfString(v.String()), nil
		}
	case protoreflect.BoolKind:
		if v.Kind() == reflect.Bool {
			return protoreflect.ValueOfBool(v.Bool()), nil
		}
	case protoreflect.DoubleKind:
		if v.Kind() == reflect.Float64 {
			return protoreflect.ValueOfFloat64(v.Float()), nil
		}
	case protoreflect.MessageKind:
		if fd.Message().FullName() == valueName && v.Type() == rawMessageType {
			pv := &structpb.Value{}
			if err := protojson.Unmarshal(v.Bytes(), pv); err != nil {
				return protoreflect.Value{}, err
			}
			return protoreflect.ValueOfMessage(pv.ProtoReflect()), nil
		}
		if v.Kind() == reflect.Struct {
			msg := newMsg()
			if err := copyToProto(v, msg.Message()); err != nil {
				return protoreflect.Value{}, err
			}
			return msg, nil
		}
	}
	return protoreflect.Value{}, fmt.Errorf("no conversion from %s to proto %s", v.Type(), fd.Kind())
}

func copyFromProto(m protoreflect.Message, v reflect.Value) error {
	return pairFields(v, m.Descriptor(), func(fd protoreflect.FieldDescriptor, fv reflect.Value) error {
		return getProtoField(m, fd, fv)
	})
}

func getProtoField(m protoreflect.Message, fd protoreflect.FieldDescriptor, fv reflect.Value) error {
	switch {
	case fd.IsMap():
		mp := m.Get(fd).Map()
		if !mp.IsValid() { // nil in the Go struct: unset
			return nil
		}
		out := reflect.MakeMapWithSize(fv.Type(), mp.Len())
		var err error
		mp.Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
			e := reflect.New(fv.Type().Elem()).Elem()
			if err = modelValue(fd.MapValue(), val, e); err != nil {
				err = fmt.Errorf("%q: %w", k.String(), err)
				return false
			}
			out.SetMapIndex(reflect.ValueOf(k.String()).Convert(fv.Type().Key()), e)
			return true
		})
		if err != nil {
			return err
		}
		fv.Set(out)
		return nil
	case fd.IsList():
		l := m.Get(fd).List()
		if !l.IsValid() {
			return nil
		}
		out := reflect.MakeSlice(fv.Type(), l.Len(), l.Len())
		for i := range l.Len() {
			if err := modelValue(fd, l.Get(i), out.Index(i)); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		fv.Set(out)
		return nil
	}
	if !m.Has(fd) {
		return nil
	}
	return modelValue(fd, m.Get(fd), fv)
}

// modelValue stores one proto value (not a map or list) in dst.
func modelValue(fd protoreflect.FieldDescriptor, val protoreflect.Value, dst reflect.Value) error {
	if dst.Type() == rawMessageType && fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() == valueName {
		b, err := protojson.Marshal(val.Message().Interface())
		if err != nil {
			return err
		}
		dst.SetBytes(b)
		return nil
	}
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		if err := modelValue(fd, val, p.Elem()); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	switch {
	case fd.Kind() == protoreflect.StringKind && dst.Kind() == reflect.String:
		dst.SetString(val.String())
	case fd.Kind() == protoreflect.BoolKind && dst.Kind() == reflect.Bool:
		dst.SetBool(val.Bool())
	case fd.Kind() == protoreflect.DoubleKind && dst.Kind() == reflect.Float64:
		dst.SetFloat(val.Float())
	case fd.Kind() == protoreflect.MessageKind && dst.Kind() == reflect.Struct:
		return copyFromProto(val.Message(), dst)
	default:
		return fmt.Errorf("no conversion from proto %s to %s", fd.Kind(), dst.Type())
	}
	return nil
}
