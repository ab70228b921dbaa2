package cluster

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/adapters/redis"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
)

// TestWireKeepsRawArguments: the raw JSON arguments of the packets the
// adapter carries come back as json.RawMessage with their bytes (not as
// []byte, which socket.io would send as a binary attachment), other
// arguments as msgpack gives them, and encoding leaves the caller's packet
// alone (the adapter delivers it on this node too).
func TestWireKeepsRawArguments(t *testing.T) {
	payload := json.RawMessage(`{"z":1,"a":{"n":9007199254740993,"s":"\ud800"},"e":[ ]}`)
	id := uint64(7)
	req := &redis.RedisRequest{Type: 1, RequestId: "r1", Uid: "node",
		Packet: &parser.Packet{Type: parser.EVENT, Nsp: "/smcp", Id: &id, Data: []any{"client:tool_call", payload}},
		Data:   []any{"smcp:notify", "o", "wire"}}
	b, err := Wire{}.Encode(req)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := req.Packet.Data.([]any)[1].(json.RawMessage); !ok || string(got) != string(payload) {
		t.Fatalf("Encode changed the caller's packet: %#v", req.Packet.Data)
	}
	var back *redis.RedisRequest
	if err := (Wire{}).Decode(b, &back); err != nil {
		t.Fatal(err)
	}
	args, _ := back.Packet.Data.([]any)
	if len(args) != 2 || args[0] != "client:tool_call" {
		t.Fatalf("request args %#v", back.Packet.Data)
	}
	if got, ok := args[1].(json.RawMessage); !ok || string(got) != string(payload) {
		t.Fatalf("payload came back as %T %s, want json.RawMessage %s", args[1], args[1], payload)
	}
	if !reflect.DeepEqual(back.Data, req.Data) || back.RequestId != "r1" || *back.Packet.Id != 7 || back.Packet.Nsp != "/smcp" {
		t.Fatalf("request %+v / %+v", back, back.Packet)
	}

	// An ack: the computer's raw answer, and the bad-answer marker of
	// gateway/sio (a struct, carried as the map it encodes to).
	answer := json.RawMessage(`{"isError":false,"content":[{"text":"1e308","type":"text"}]}`)
	bad := struct {
		SMCPBadAnswer string `msgpack:"SMCPBadAnswer"`
	}{"NaN"}
	ack := func(arg any) any {
		t.Helper()
		b, err := Wire{}.Encode(&redis.RedisResponse{Type: 2, RequestId: "r1", Packet: []any{arg}})
		if err != nil {
			t.Fatal(err)
		}
		var res *redis.RedisResponse
		if err := (Wire{}).Decode(b, &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Packet) != 1 {
			t.Fatalf("ack args %#v", res.Packet)
		}
		return res.Packet[0]
	}
	if got, ok := ack(answer).(json.RawMessage); !ok || string(got) != string(answer) {
		t.Fatalf("answer came back as %T %s, want json.RawMessage %s", got, got, answer)
	}
	if got, ok := ack(bad).(map[string]any); !ok || len(got) != 1 || got["SMCPBadAnswer"] != "NaN" {
		t.Fatalf("bad-answer marker came back as %#v", got)
	}
}
