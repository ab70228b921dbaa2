package sio

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// rawParser is the socket.io parser of the gateway (the server's SetParser
// extension point). The library's own parser decodes every event and ack
// argument into Go values (numbers to float64, objects to maps that lose
// their key order, binary to {}), which a relay then has to encode again,
// changing the bytes. This one keeps each argument of EVENT and ACK packets
// as the json.RawMessage it received (checked to be JSON, see
// smcp.SplitArray), and writes json.RawMessage arguments verbatim on the way
// out, so a payload crosses the gateway byte for byte. CONNECT, CONNECT_ERROR
// and DISCONNECT are decoded as the library does.
//
// What the library would have closed the connection for is, when the packet
// header could be read, delivered as a value the gateway answers instead:
// an ACK whose arguments are not JSON carries a *badArgs (so the one call it
// answers fails and the computer stays connected), an EVENT likewise (its
// sender gets a flat 400). Binary attachments (BINARY_EVENT / BINARY_ACK) are
// read and dropped, and the packet arrives with a *badArgs naming them: the
// gateway refuses them rather than relay them (PROTOCOL.md §1: JSON only).
type rawParser struct{}

func (rawParser) NewEncoder() parser.Encoder { return &rawEncoder{std: parser.NewEncoder()} }

func (rawParser) NewDecoder() parser.Decoder {
	return &rawDecoder{EventEmitter: types.NewEventEmitter()}
}

// badArgs stands for the arguments of a packet that cannot be relayed.
type badArgs struct{ reason string }

func (b *badArgs) Error() string { return b.reason }

func newBadArgs(reason string) *badArgs { return &badArgs{reason: reason} }

// malformedEvent is the event name given to an EVENT whose payload did not
// yield one; no client can send it (it holds a NUL).
const malformedEvent = "\x00malformed"

// maxAttachments bounds the binary attachments one packet may announce, as
// the library's parser does.
const maxAttachments = 10

type rawDecoder struct {
	types.EventEmitter

	mu sync.Mutex
	// pending is a binary packet waiting for its attachments.
	pending   *parser.Packet
	remaining uint64
	paths     []string
}

type byteser interface{ Bytes() []byte }

func (d *rawDecoder) Add(data any) error {
	var b []byte
	text := false
	switch x := data.(type) {
	case string:
		b, text = []byte(x), true
	case *types.StringBuffer:
		b, text = x.Bytes(), true
	case byteser:
		b = x.Bytes()
	case []byte:
		b = x
	default:
		return fmt.Errorf("sio parser: unknown data type %T", data)
	}
	d.mu.Lock()
	if !text {
		p := d.pending
		if p == nil {
			d.mu.Unlock()
			return parser.ErrBinaryWithoutReconstruction
		}
		if d.remaining--; d.remaining > 0 {
			d.mu.Unlock()
			return nil
		}
		d.pending = nil
		d.mu.Unlock()
		d.Emit("decoded", p)
		return nil
	}
	if d.pending != nil {
		d.mu.Unlock()
		return parser.ErrPlaintextDuringReconstruction
	}
	d.mu.Unlock()
	p, err := decodePacket(b)
	if err != nil {
		return err
	}
	if p.Attachments != nil && *p.Attachments > 0 {
		d.mu.Lock()
		d.pending, d.remaining = p, *p.Attachments
		d.mu.Unlock()
		return nil
	}
	d.Emit("decoded", p)
	return nil
}

func (d *rawDecoder) Destroy() {
	d.mu.Lock()
	d.pending = nil
	d.mu.Unlock()
}

// decodePacket reads <type>[<attachments>-][<nsp>,][<id>][<json>].
func decodePacket(b []byte) (*parser.Packet, error) {
	if len(b) == 0 {
		return nil, parser.ErrInvalidPayload
	}
	// The packet and its id in one allocation.
	pid := &packetWithID{Packet: parser.Packet{Type: parser.PacketType(int(b[0]) - '0'), Nsp: "/"}}
	p := &pid.Packet
	if !p.Type.Valid() {
		return nil, fmt.Errorf("unknown packet type %d", p.Type)
	}
	i := 1
	binary := p.Type == parser.BINARY_EVENT || p.Type == parser.BINARY_ACK
	if binary {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == i || j >= len(b) || b[j] != '-' {
			return nil, parser.ErrIllegalAttachments
		}
		n, err := strconv.ParseUint(string(b[i:j]), 10, 64)
		if err != nil {
			return nil, parser.ErrIllegalAttachments
		}
		if n > maxAttachments {
			return nil, parser.ErrTooManyAttachments
		}
		p.Attachments = &n
		i = j + 1
	}
	if i < len(b) && b[i] == '/' {
		j := i
		for j < len(b) && b[j] != ',' {
			j++
		}
		if j-i > parser.DefaultMaxNamespaceLength {
			return nil, parser.ErrIllegalNamespace
		}
		if nsp := b[i:j]; string(nsp) == smcp.Namespace {
			p.Nsp = smcp.Namespace // the only one served: not copied for every packet
		} else {
			p.Nsp = string(nsp)
		}
		i = min(j+1, len(b))
	}
	if j := i; j < len(b) && b[j] >= '0' && b[j] <= '9' {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j-i > parser.DefaultMaxPacketIDLength {
			return nil, parser.ErrIllegalID
		}
		id, ok := parseID(b[i:j])
		if !ok {
			return nil, parser.ErrIllegalID
		}
		pid.id = id
		p.Id = &pid.id
		i = j
	}
	payload := b[i:]
	switch p.Type {
	case parser.EVENT, parser.BINARY_EVENT:
		args := eventArgs(payload, binary)
		if p.Id != nil {
			// The ack id goes to the gateway's listener as the last argument
			// instead of to the library, which would wrap it in an Ack
			// callback of its own (a sync.Once, a closure, and per answer
			// a packet, its encoding and a copy of it): the gateway
			// answers the event itself (handler.ackFunc).
			args = append(args, (*ackID)(&pid.id))
			p.Id = nil
		}
		p.Data = args
	case parser.ACK, parser.BINARY_ACK:
		p.Data = ackArgs(payload, binary)
	default:
		// CONNECT (auth object), CONNECT_ERROR and DISCONNECT: as the library.
		if len(payload) > 0 {
			var v any
			if err := json.Unmarshal(payload, &v); err != nil {
				return nil, parser.ErrInvalidPayload
			}
			p.Data = v
		}
		if !validControl(p.Type, p.Data) {
			return nil, parser.ErrInvalidPayload
		}
	}
	return p, nil
}

// ackID is the id an EVENT asks to be acknowledged with (see decodePacket).
type ackID uint64

// packetWithID is a decoded packet with room for its id.
type packetWithID struct {
	parser.Packet
	id uint64
}

// parseID reads a packet id: decimal digits that fit a uint64.
func parseID(digits []byte) (uint64, bool) {
	var n uint64
	for _, c := range digits {
		d := uint64(c - '0')
		if d > 9 || n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, len(digits) > 0
}

func validControl(t parser.PacketType, data any) bool {
	switch t {
	case parser.CONNECT:
		_, ok := data.(map[string]any)
		return data == nil || ok
	case parser.DISCONNECT:
		return data == nil
	case parser.CONNECT_ERROR:
		switch data.(type) {
		case map[string]any, string:
			return true
		}
	}
	return false
}

// eventArgs is the Data of an EVENT: the event name (a string) then each
// argument as raw JSON. An event that cannot be relayed keeps its name when
// it has one and carries a *badArgs.
func eventArgs(payload []byte, binary bool) []any {
	var arr [4]json.RawMessage // an event is a name and a payload
	elems, err := smcp.AppendArray(arr[:0], payload)
	if err != nil || len(elems) == 0 {
		if err == nil {
			err = errors.New("an event needs a name")
		}
		return []any{malformedEvent, newBadArgs("malformed packet: " + err.Error())}
	}
	name, err := eventName(elems[0])
	if err != nil {
		// The library accepts numeric event names; nothing here handles one.
		return []any{malformedEvent, newBadArgs("event name must be a string")}
	}
	if parser.ReservedEvents.Has(name) {
		return []any{malformedEvent, newBadArgs(fmt.Sprintf("%q is a reserved event name", name))}
	}
	if binary {
		return []any{name, binaryRefused(elems[1:])}
	}
	// One slot more for the ack callback the library appends.
	out := make([]any, len(elems), len(elems)+1)
	out[0] = name
	for i, e := range elems[1:] {
		out[i+1] = e
	}
	return out
}

// eventNames holds every event name a client sends, so that a packet's
// name is not copied out of it for every event.
var eventNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []smcp.Kind{smcp.Server, smcp.Routed} {
		for _, e := range smcp.Events(k) {
			m[e.Name] = e.Name
		}
	}
	return m
}()

// eventName is a packet's event name (a JSON string).
func eventName(tok json.RawMessage) (string, error) {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
		if name, ok := eventNames[string(tok[1:len(tok)-1])]; ok {
			return name, nil
		}
	}
	return smcp.RawString(tok)
}

// ackArgs is the Data of an ACK: each argument as raw JSON, or a single
// *badArgs when they cannot be relayed.
func ackArgs(payload []byte, binary bool) []any {
	var arr [4]json.RawMessage // an answer is one argument
	elems, err := smcp.AppendArray(arr[:0], payload)
	if err != nil {
		return []any{newBadArgs("malformed answer: " + err.Error())}
	}
	if binary {
		return []any{binaryRefused(elems)}
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out
}

// binaryRefused names where the binary attachments of a packet were.
func binaryRefused(args []json.RawMessage) *badArgs {
	var paths []string
	for i, a := range args {
		var v any
		if json.Unmarshal(a, &v) == nil {
			placeholders(v, fmt.Sprintf("arg%d", i), &paths)
		}
	}
	slices.Sort(paths)
	return newBadArgs(fmt.Sprintf("binary attachments are not supported (send them as base64 strings): found at %v", paths))
}

func placeholders(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		if ph, _ := x["_placeholder"].(bool); ph {
			*out = append(*out, path)
			return
		}
		for k, e := range x {
			placeholders(e, path+"."+k, out)
		}
	case []any:
		for i, e := range x {
			placeholders(e, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

// rawEncoder writes EVENT and ACK packets whose arguments are json.RawMessage
// (or plain values) itself, raw arguments verbatim. encoding/json would not:
// it compacts a RawMessage and escapes <, > and & in it. Anything else (the
// CONNECT answer, CONNECT_ERROR, packets with Go binary values) takes the
// library's encoder.
type rawEncoder struct {
	std parser.Encoder
}

func (e *rawEncoder) Encode(p *parser.Packet) []types.BufferInterface {
	args, ok := p.Data.([]any)
	if !ok || (p.Type != parser.EVENT && p.Type != parser.ACK) || parser.HasBinary(args) {
		return e.std.Encode(p)
	}
	return []types.BufferInterface{types.NewStringBuffer(encodeArgs(p.Type, p.Nsp, p.Id, args))}
}

// encodeArgs is the packet <type>[<nsp>,][<id>][args...] in one buffer
// sized for its raw JSON arguments (appendArg encodes each).
func encodeArgs(t parser.PacketType, nsp string, id *uint64, args []any) []byte {
	size := len(nsp) + 32
	for _, a := range args {
		if r, ok := a.(json.RawMessage); ok {
			size += len(r) + 1
		}
	}
	b := appendHeader(make([]byte, 0, size), t, nsp, id)
	b = append(b, '[')
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendArg(b, a)
	}
	return append(b, ']')
}

// appendHeader appends a packet's <type>[<nsp>,][<id>].
func appendHeader(b []byte, t parser.PacketType, nsp string, id *uint64) []byte {
	b = append(b, byte(t)+'0')
	if nsp != "" && nsp != "/" {
		b = append(b, nsp...)
		b = append(b, ',')
	}
	if id != nil {
		b = strconv.AppendUint(b, *id, 10)
	}
	return b
}

// appendArg appends one argument: raw JSON verbatim, a plain string
// quoted, anything else as encoding/json writes it.
func appendArg(b []byte, a any) []byte {
	switch x := a.(type) {
	case json.RawMessage:
		return appendRaw(b, x)
	case string:
		return appendString(b, x)
	}
	return appendMarshal(b, a)
}

func appendRaw(b []byte, x json.RawMessage) []byte {
	if len(x) == 0 {
		x = json.RawMessage("null")
	}
	return append(b, x...)
}

func appendString(b []byte, s string) []byte {
	if !plainString(s) {
		return appendMarshal(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendMarshal(b []byte, a any) []byte {
	j, err := json.Marshal(a)
	if err != nil {
		j = []byte("null")
	}
	return append(b, j...)
}

// plainString reports whether encoding/json writes s as its bytes between
// quotes: printable ASCII without the characters it escapes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// appendEvent appends the EVENT packet nsp,id[event,payload] that a request
// to a computer is.
func appendEvent(b []byte, nsp string, id uint64, event string, payload json.RawMessage) []byte {
	b = appendHeader(b, parser.EVENT, nsp, &id)
	b = append(b, '[')
	b = appendString(b, event)
	b = append(b, ',')
	b = appendRaw(b, payload)
	return append(b, ']')
}
