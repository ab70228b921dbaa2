package sioclient

import (
	"encoding/json"
	"strconv"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// rawParser is the client's socket.io parser. The library's own decodes
// every event and ack argument into Go values (a blob chunk's 350 KB of
// base64 unquoted into a string inside a map), which the client then
// encodes again into the json.RawMessage its callers get; and its encoder
// compacts every json.RawMessage argument again. This one keeps the
// arguments of EVENT and ACK packets as the json.RawMessage received
// (checked to be JSON by smcp.AppendArray) and writes json.RawMessage
// arguments verbatim: a payload is scanned once each way. Other packets
// (CONNECT, DISCONNECT, CONNECT_ERROR, binary ones, which the gateway does
// not send) take the library's parser.
type rawParser struct{}

func (rawParser) NewEncoder() parser.Encoder { return rawEncoder{std: parser.NewEncoder()} }

func (rawParser) NewDecoder() parser.Decoder { return rawDecoder{parser.NewDecoder()} }

type rawEncoder struct{ std parser.Encoder }

// Encode writes <type>[<nsp>,][<id>][args...] itself when every argument
// is a string or a json.RawMessage, as this client's events and acks are.
func (e rawEncoder) Encode(p *parser.Packet) []types.BufferInterface {
	args, ok := p.Data.([]any)
	if !ok || p.Type != parser.EVENT && p.Type != parser.ACK {
		return e.std.Encode(p)
	}
	size := len(p.Nsp) + 32
	for _, a := range args {
		switch x := a.(type) {
		case json.RawMessage:
			size += len(x) + 1
		case string:
			size += len(x) + 8
		default:
			return e.std.Encode(p)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, byte(p.Type)+'0')
	if p.Nsp != "" && p.Nsp != "/" {
		b = append(b, p.Nsp...)
		b = append(b, ',')
	}
	if p.Id != nil {
		b = strconv.AppendUint(b, *p.Id, 10)
	}
	b = append(b, '[')
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		switch x := a.(type) {
		case json.RawMessage:
			if len(x) == 0 {
				x = json.RawMessage("null")
			}
			b = append(b, x...)
		case string:
			q, _ := json.Marshal(x) // a string always encodes
			b = append(b, q...)
		}
	}
	b = append(b, ']')
	return []types.BufferInterface{types.NewStringBuffer(b)}
}

// rawDecoder decodes text EVENT and ACK packets itself and hands the rest
// to the library's decoder, whose "decoded" listeners (the manager's) get
// both.
type rawDecoder struct{ parser.Decoder }

func (d rawDecoder) Add(data any) error {
	var b []byte
	switch x := data.(type) {
	case string:
		b = []byte(x)
	case *types.StringBuffer:
		b = x.Bytes()
	}
	if p := decodeArgs(b); p != nil {
		d.Emit("decoded", p)
		return nil
	}
	return d.Decoder.Add(data)
}

// decodeArgs reads a text EVENT or ACK packet <type>[<nsp>,][<id>][args]
// with its arguments as json.RawMessage (an EVENT's first, its name, as a
// string), or returns nil for the library's decoder to read or refuse.
func decodeArgs(b []byte) *parser.Packet {
	if len(b) == 0 || b[0] != '0'+byte(parser.EVENT) && b[0] != '0'+byte(parser.ACK) {
		return nil
	}
	p := &parser.Packet{Type: parser.PacketType(b[0] - '0'), Nsp: "/"}
	i := 1
	if i < len(b) && b[i] == '/' {
		j := i
		for j < len(b) && b[j] != ',' {
			j++
		}
		if j == len(b) || j-i > parser.DefaultMaxNamespaceLength {
			return nil
		}
		p.Nsp, i = string(b[i:j]), j+1
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j > i {
		if j-i > parser.DefaultMaxPacketIDLength {
			return nil
		}
		id, err := strconv.ParseUint(string(b[i:j]), 10, 64)
		if err != nil {
			return nil
		}
		p.Id, i = &id, j
	}
	elems, err := smcp.SplitArray(b[i:])
	if err != nil {
		return nil
	}
	args := make([]any, len(elems), len(elems)+1) // room for the ack callback the library appends
	for k, e := range elems {
		args[k] = e
	}
	if p.Type == parser.EVENT {
		if len(elems) == 0 {
			return nil
		}
		if elems[0][0] != '"' {
			return nil
		}
		name, err := smcp.RawString(elems[0])
		if err != nil || parser.ReservedEvents.Has(name) {
			return nil
		}
		args[0] = name
	}
	p.Data = args
	return p
}

// rawArg is a decoded argument as JSON: as received when rawDecoder kept
// it, else encoded.
func rawArg(a any) (json.RawMessage, error) {
	if r, ok := a.(json.RawMessage); ok {
		return r, nil
	}
	return json.Marshal(a)
}
