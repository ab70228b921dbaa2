package smcp

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The json_name of every field in proto/ is its wire key, so protojson with
// default options already speaks the Socket.IO wire form. Unknown keys are
// ignored on input: newer peers may add fields.
var (
	marshalOptions   = protojson.MarshalOptions{}
	unmarshalOptions = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// Marshal encodes m in its Socket.IO wire JSON form.
func Marshal(m proto.Message) ([]byte, error) {
	b, err := marshalOptions.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("smcp: encode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return b, nil
}

// Unmarshal decodes wire JSON into m.
func Unmarshal(b []byte, m proto.Message) error {
	if err := unmarshalOptions.Unmarshal(b, m); err != nil {
		return fmt.Errorf("smcp: decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

// FromWire decodes a value as delivered by a Socket.IO library (maps, slices,
// float64 numbers) into m by re-encoding it as JSON.
func FromWire(v any, m proto.Message) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("smcp: decode %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return Unmarshal(b, m)
}

// ToWire encodes m as a json.RawMessage, ready to be emitted or acked.
func ToWire(m proto.Message) (json.RawMessage, error) {
	b, err := Marshal(m)
	return json.RawMessage(b), err
}
