package sio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
)

func decodeOne(t *testing.T, frames ...any) *parser.Packet {
	t.Helper()
	d := rawParser{}.NewDecoder()
	var got []*parser.Packet
	_ = d.On("decoded", func(args ...any) { got = append(got, args[0].(*parser.Packet)) })
	for _, f := range frames {
		if err := d.Add(f); err != nil {
			t.Fatalf("Add(%v): %v", f, err)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d packets decoded, want 1", len(got))
	}
	return got[0]
}

func TestParserKeepsArgumentsAsReceived(t *testing.T) {
	arg := `{"z":1,"a":18446744073709551616,"s":"\ud800 <&>","e":{ }}`
	p := decodeOne(t, types.NewStringBufferString(`2/smcp,7["client:tool_call",`+arg+`, [ 1 ] ]`))
	if p.Type != parser.EVENT || p.Nsp != "/smcp" || p.Id != nil {
		t.Fatalf("header: %+v", p)
	}
	args := p.Data.([]any)
	if len(args) != 4 || args[0] != "client:tool_call" || string(args[1].(json.RawMessage)) != arg || string(args[2].(json.RawMessage)) != "[ 1 ]" {
		t.Fatalf("args: %#v", args)
	}
	// The ack id is the last argument, for the gateway's listener to
	// answer with, not the library.
	if id, ok := args[3].(*ackID); !ok || *id != 7 {
		t.Fatalf("ack id: %#v", args[3])
	}

	ack := decodeOne(t, `3/smcp,12[`+arg+`]`)
	if ack.Type != parser.ACK || *ack.Id != 12 || string(ack.Data.([]any)[0].(json.RawMessage)) != arg {
		t.Fatalf("ack: %#v", ack.Data)
	}

	// Encoding writes raw arguments verbatim; encoding/json would escape
	// <&> and rewrite the lone surrogate.
	out := rawParser{}.NewEncoder().Encode(&parser.Packet{Type: parser.ACK, Nsp: "/smcp", Id: ack.Id, Data: ack.Data})
	if len(out) != 1 || out[0].(*types.StringBuffer).String() != `3/smcp,12[`+arg+`]` {
		t.Fatalf("encoded %v", out)
	}
}

// An answer the gateway cannot relay is delivered as *badArgs for its ack
// id (failing that call) instead of an error that closes the connection.
func TestParserBadAnswersFailTheirCallOnly(t *testing.T) {
	for name, payload := range map[string]string{
		"NaN":          `[{"x":NaN}]`,
		"375 digits":   `[{"x":` + strings.Repeat("9", 375) + `}]`,
		"1e400":        `[1e400]`,
		"invalid JSON": `[{"x":}]`,
		"truncated":    `[{"x":1`,
	} {
		p := decodeOne(t, `3/smcp,5`+payload)
		args := p.Data.([]any)
		if p.Id == nil || *p.Id != 5 || len(args) != 1 {
			t.Fatalf("%s: %+v", name, p)
		}
		if _, ok := args[0].(*badArgs); !ok {
			t.Fatalf("%s: arg %#v, want *badArgs", name, args[0])
		}
	}
	// An integer beyond 2^64 but within float64 is relayed.
	p := decodeOne(t, `3/smcp,5[`+strings.Repeat("9", 300)+`]`)
	if _, ok := p.Data.([]any)[0].(json.RawMessage); !ok {
		t.Fatalf("300 digits: %#v", p.Data)
	}
}

func TestParserBinaryAttachmentsAreNamedAndDropped(t *testing.T) {
	p := decodeOne(t, `51-/smcp,3["client:tool_call",{"params":{"img":{"_placeholder":true,"num":0}}}]`, []byte{1, 2, 3})
	args := p.Data.([]any)
	bad, ok := args[1].(*badArgs)
	if args[0] != "client:tool_call" || !ok || !strings.Contains(bad.reason, "arg0.params.img") {
		t.Fatalf("args %#v", args)
	}
	p = decodeOne(t, `61-/smcp,4[{"data":{"_placeholder":true,"num":0}}]`, []byte{1})
	if bad, ok := p.Data.([]any)[0].(*badArgs); !ok || !strings.Contains(bad.reason, "binary attachments") {
		t.Fatalf("ack %#v", p.Data)
	}
}

func TestParserRefusesReservedAndMalformedEvents(t *testing.T) {
	for _, frame := range []string{`2/smcp,1["disconnect",{}]`, `2/smcp,1[{}]`, `2/smcp,1[]`, `2/smcp,1["x",NaN]`} {
		p := decodeOne(t, frame)
		args := p.Data.([]any)
		if args[0] != malformedEvent {
			t.Fatalf("%s: %#v", frame, args)
		}
		if _, ok := args[1].(*badArgs); !ok {
			t.Fatalf("%s: %#v", frame, args)
		}
	}
	// Control packets decode as the library's parser does.
	p := decodeOne(t, `0/smcp,{"token":"x"}`)
	if auth, _ := p.Data.(map[string]any); p.Type != parser.CONNECT || auth["token"] != "x" {
		t.Fatalf("connect %+v", p)
	}
	if err := (rawParser{}).NewDecoder().Add(`0/smcp,[1]`); err == nil {
		t.Fatal("a CONNECT with an array was accepted")
	}
}

// FuzzDecodePacket: any text frame decodes or is refused, never panics, and
// an EVENT or ACK that decodes carries only raw JSON, names and *badArgs,
// and an EVENT's ack id as its last argument.
func FuzzDecodePacket(f *testing.F) {
	for _, s := range []string{`2/smcp,1["a",{}]`, `3/smcp,2[1,"x"]`, `51-/smcp,3["a",{"_placeholder":true,"num":0}]`,
		`0/smcp,{"token":"t"}`, `1/smcp,`, `3/smcp,5[NaN]`, `2["disconnect"]`, `6999-`, `2/smcp,99999999999999999999999[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePacket([]byte(s))
		if err != nil || (p.Type != parser.EVENT && p.Type != parser.ACK && p.Type != parser.BINARY_EVENT && p.Type != parser.BINARY_ACK) {
			return
		}
		args := p.Data.([]any)
		for i, a := range args {
			switch a.(type) {
			case json.RawMessage, string, *badArgs:
			case *ackID:
				if i != len(args)-1 || p.Id != nil || (p.Type != parser.EVENT && p.Type != parser.BINARY_EVENT) {
					t.Fatalf("%q: ack id at %d of %d (%s, id %v)", s, i, len(args), p.Type, p.Id)
				}
			default:
				t.Fatalf("%q: argument %T", s, a)
			}
		}
	})
}
