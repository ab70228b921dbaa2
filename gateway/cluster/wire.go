package cluster

import (
	"encoding/json"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/adapters/redis"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/utils"
)

// rawJSONKey names the one key of the map that carries a raw JSON argument
// between nodes; no client can put such a map there (see Wire).
const rawJSONKey = "SMCPRawJSON"

// Wire is the encoding of the socket.io Redis adapter's messages between the
// nodes (its Parser option): the adapter's msgpack, except for the
// arguments of the socket.io packets it carries (a cross-node request's
// event and payload, the ack that answers it). On a node those arguments
// are json.RawMessage, the bytes a client sent (gateway/sio's parser keeps
// them so); msgpack would give them back on the other node as []byte, which
// socket.io takes for a binary attachment, so they used to cross as decoded
// values and arrive changed (keys sorted, integers past 2^53 rounded, lone
// surrogates replaced). Wire carries each as a one-key map {SMCPRawJSON:
// bytes} and gives it back as the json.RawMessage it was: the computer on
// another node gets the agent's bytes, and the agent the computer's.
//
// The arguments the adapter carries are only ever the gateway's own values
// (json.RawMessage, strings, the bad-answer marker of gateway/sio): a
// client's payload is never a decoded map, so the marker cannot be forged.
type Wire struct{}

var _ redis.Parser = Wire{}

// Encode implements redis.Parser. It does not change v: the adapter still
// delivers the same packet on this node.
func (Wire) Encode(v any) ([]byte, error) {
	switch m := v.(type) {
	case *redis.RedisRequest:
		if m != nil {
			c := *m
			c.Packet = wrapPacket(m.Packet)
			c.Data = wrapArgs(m.Data)
			v = &c
		}
	case *redis.RedisResponse:
		if m != nil {
			c := *m
			c.Packet = wrapArgs(m.Packet)
			c.Data = wrapArgs(m.Data)
			v = &c
		}
	case *redis.RedisPacket:
		if m != nil {
			c := *m
			c.Packet = wrapPacket(m.Packet)
			v = &c
		}
	}
	return utils.MsgPack().Encode(v)
}

// Decode implements redis.Parser; v is a **RedisRequest, **RedisResponse or
// **RedisPacket (the adapter decodes into a nil pointer), or one level less.
func (Wire) Decode(b []byte, v any) error {
	if err := utils.MsgPack().Decode(b, v); err != nil {
		return err
	}
	switch m := v.(type) {
	case **redis.RedisRequest:
		unwrapRequest(*m)
	case *redis.RedisRequest:
		unwrapRequest(m)
	case **redis.RedisResponse:
		unwrapResponse(*m)
	case *redis.RedisResponse:
		unwrapResponse(m)
	case **redis.RedisPacket:
		if *m != nil {
			unwrapPacket((*m).Packet)
		}
	case *redis.RedisPacket:
		unwrapPacket(m.Packet)
	}
	return nil
}

func unwrapRequest(m *redis.RedisRequest) {
	if m != nil {
		unwrapPacket(m.Packet)
		unwrapArgs(m.Data)
	}
}

func unwrapResponse(m *redis.RedisResponse) {
	if m != nil {
		unwrapArgs(m.Packet)
		unwrapArgs(m.Data)
	}
}

// wrapPacket is p with its raw arguments wrapped (a copy when any is).
func wrapPacket(p *parser.Packet) *parser.Packet {
	if p == nil {
		return nil
	}
	args, ok := p.Data.([]any)
	if !ok {
		return p
	}
	c := *p
	c.Data = wrapArgs(args)
	return &c
}

// wrapArgs is args with each json.RawMessage wrapped (a copy when any is).
func wrapArgs(args []any) []any {
	var out []any
	for i, a := range args {
		raw, ok := a.(json.RawMessage)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = map[string][]byte{rawJSONKey: raw}
	}
	if out == nil {
		return args
	}
	return out
}

func unwrapPacket(p *parser.Packet) {
	if p == nil {
		return
	}
	if args, ok := p.Data.([]any); ok {
		unwrapArgs(args)
	}
}

// unwrapArgs turns the wrapped arguments of args back into json.RawMessage,
// in place.
func unwrapArgs(args []any) {
	for i, a := range args {
		m, ok := a.(map[string]any)
		if !ok || len(m) != 1 {
			continue
		}
		if b, ok := m[rawJSONKey].([]byte); ok {
			args[i] = json.RawMessage(b)
		}
	}
}
