package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// byteCases are JSON texts whose bytes a relay must keep: every one of them
// changes if it is decoded into Go values and encoded again.
var byteCases = map[string]string{
	"key order":       `{"z":1,"a":2,"m":{"y":[3,{"b":1,"a":0}],"b":null}}`,
	"2^53+1":          `{"n":9007199254740993}`,
	"2^64":            `{"n":18446744073709551616}`,
	"-2^63+1":         `{"n":-9223372036854775807}`,
	"1e308":           `{"n":1e308,"m":1E+2,"z":-0,"f":0.10,"e":2.5e-7}`,
	"unicode escapes": `{"s":"\u00e9 é \u2028 \/ <a&b>","k\u00e9y":"\uD83D\uDE00"}`,
	"lone surrogate":  `{"s":"\ud800","t":"x\udfffy"}`,
	"deep nesting":    `{"d":` + strings.Repeat(`[{"a":`, 400) + `1` + strings.Repeat(`}]`, 400) + `}`,
	"empty":           `{"o":{},"a":[],"s":"","w":{ "x" : [ ] }}`,
}

// relayOffice is a gateway with one raw agent ("ag") and one raw computer
// ("pc") in office "o". The computer answers with answer(payload), or not
// at all when it returns "". An answer starting with "slow:" is sent one
// second later (without the prefix), from a goroutine the test awaits
// through the answer itself.
type relayOffice struct {
	gw       *gateway.Running
	agent    *rawSIO
	pc       *rawSIO
	mu       sync.Mutex
	received [][]byte // the computer's events, as JSON arrays
}

func newRelayOffice(t *testing.T, cfg gateway.Config, answer func(event string, payload []byte) string) *relayOffice {
	t.Helper()
	gw := startGateway(t, cfg)
	return newRelayOfficeOn(t, gw, gw, answer)
}

// newRelayOfficeOn is newRelayOffice with the agent attached to gateway ag
// and the computer to gateway pc: two nodes of a cluster, or one gateway.
func newRelayOfficeOn(t *testing.T, ag, pc *gateway.Running, answer func(event string, payload []byte) string) *relayOffice {
	t.Helper()
	o := &relayOffice{gw: ag}
	o.pc = dialRaw(t, pc.URL, func(array []byte, reply func([]byte)) {
		if !bytes.HasPrefix(array, []byte(`["client:`)) {
			return // notifications
		}
		o.mu.Lock()
		o.received = append(o.received, append([]byte(nil), array...))
		o.mu.Unlock()
		var args []json.RawMessage
		if json.Unmarshal(array, &args) != nil || len(args) < 2 {
			return
		}
		var event string
		_ = json.Unmarshal(args[0], &event)
		// The payload as it arrived: the array minus the name and brackets.
		payload := array[len(args[0])+2 : len(array)-1]
		a := answer(event, payload)
		if slow, ok := strings.CutPrefix(a, "slow:"); ok {
			time.AfterFunc(time.Second, func() { reply([]byte("[" + slow + "]")) })
			return
		}
		if a != "" {
			reply([]byte("[" + a + "]"))
		}
	})
	o.pc.join("computer", "pc", "o")
	o.agent = dialRaw(t, ag.URL, nil)
	o.agent.join("agent", "ag", "o")
	return o
}

func (o *relayOffice) lastReceived() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.received) == 0 {
		return nil
	}
	return o.received[len(o.received)-1]
}

func toolCall(reqID, params string, timeout int) string {
	// tool_name after params and unusual spacing: the routing fields are read
	// where they are, and the text is not rewritten.
	return fmt.Sprintf(`{"timeout" : %d,"params":%s,"agent":"ag","req_id":%q,"computer":"pc","tool_name":"t"}`, timeout, params, reqID)
}

// TestSocketIOBytesBothWays: a tool call's payload reaches the computer as
// the bytes the agent sent, and the computer's answer reaches the agent as
// the bytes the computer sent, for every case of byteCases; and the same for
// a non-tool event (get_config).
func TestSocketIOBytesBothWays(t *testing.T) {
	socketIOBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOffice(t, gateway.Config{}, answer)
	})
}

// socketIOBytesBothWays runs TestSocketIOBytesBothWays on the office that
// start makes with the given computer answers.
func socketIOBytesBothWays(t *testing.T, start func(answer func(event string, payload []byte) string) *relayOffice) {
	answers := map[string]string{} // req_id -> answer
	var mu sync.Mutex
	o := start(func(event string, payload []byte) string {
		var m struct {
			ReqID string `json:"req_id"`
		}
		_ = json.Unmarshal(payload, &m)
		mu.Lock()
		defer mu.Unlock()
		return answers[m.ReqID]
	})
	i := 0
	for name, c := range byteCases {
		i++
		reqID := fmt.Sprintf("r%d", i)
		answer := `{"content":[{"type":"text","text":"ok"}],"isError":false,"structuredContent":` + c + `}`
		mu.Lock()
		answers[reqID] = answer
		answers[reqID+"cfg"] = c
		mu.Unlock()

		payload := toolCall(reqID, c, 5)
		got := o.agent.wait(o.agent.emit("client:tool_call", payload), 5*time.Second)
		if want := "[" + answer + "]"; string(got) != want {
			t.Errorf("%s: agent got\n%.300s\nwant\n%.300s", name, got, want)
		}
		if want := `["client:tool_call",` + payload + `]`; string(o.lastReceived()) != want {
			t.Errorf("%s: computer got\n%.300s\nwant\n%.300s", name, o.lastReceived(), want)
		}

		cfg := `{"computer":"pc","agent":"ag","req_id":"` + reqID + `cfg","x":` + c + `}`
		got = o.agent.wait(o.agent.emit("client:get_config", cfg), 5*time.Second)
		if want := "[" + c + "]"; string(got) != want {
			t.Errorf("%s get_config: agent got %.300s want %.300s", name, got, want)
		}
		if want := `["client:get_config",` + cfg + `]`; string(o.lastReceived()) != want {
			t.Errorf("%s get_config: computer got %.300s want %.300s", name, o.lastReceived(), want)
		}
	}
}

// TestSocketIOBinaryAttachmentsRefused: binary attachments are refused by
// name in both directions, never relayed as {}; the connections survive.
func TestSocketIOBinaryAttachmentsRefused(t *testing.T) {
	binaryAnswer := false
	var mu sync.Mutex
	o := newRelayOffice(t, gateway.Config{}, func(event string, payload []byte) string {
		mu.Lock()
		defer mu.Unlock()
		if binaryAnswer {
			return "" // answered below as a BINARY_ACK
		}
		return `{"content":[],"isError":false}`
	})
	// Agent -> gateway: a BINARY_EVENT with one attachment.
	ch := o.agent.emitFrame("451-/smcp,", `["client:tool_call",`+
		toolCall("b1", `{"img":{"_placeholder":true,"num":0}}`, 5)+`]`)
	o.agent.writeBinary([]byte{0, 1, 2, 3})
	got := o.agent.wait(ch, 5*time.Second)
	if !bytes.Contains(got, []byte(`"code":400`)) || !bytes.Contains(got, []byte("binary attachments")) ||
		!bytes.Contains(got, []byte("arg0.params.img")) {
		t.Fatalf("binary event: %s", got)
	}
	if r := o.lastReceived(); r != nil {
		t.Fatalf("the computer received %s", r)
	}

	// Computer -> gateway: a BINARY_ACK.
	mu.Lock()
	binaryAnswer = true
	mu.Unlock()
	o.pc.setOnEvent(nil) // events now queue in o.pc.events
	ch = o.agent.emit("client:tool_call", toolCall("b2", `{}`, 5))
	// Wait for this call itself: another event (a notification) may be
	// queued first, and the ack id read below must be the call's.
	for got := false; !got; {
		select {
		case ev := <-o.pc.events:
			got = bytes.Contains(ev, []byte(`"req_id":"b2"`))
		case <-time.After(5 * time.Second):
			t.Fatal("the computer got no call")
		}
	}
	o.pc.write(`461-/smcp,` + pcAckID(t, o) + `[{"content":[{"type":"image","data":{"_placeholder":true,"num":0}}]}]`)
	o.pc.writeBinary([]byte{9, 9})
	got = o.agent.wait(ch, 5*time.Second)
	if !bytes.Contains(got, []byte(`"isError":true`)) || !bytes.Contains(got, []byte("binary attachments")) ||
		!bytes.Contains(got, []byte(`"a2c_error_code":500`)) {
		t.Fatalf("binary answer: %s", got)
	}
}

// pcAckID is the ack id of the last event the computer got.
func pcAckID(t *testing.T, o *relayOffice) string {
	t.Helper()
	return fmt.Sprint(o.pc.lastEventID.Load())
}

// TestConnectBytesBothWays: CallTool with params_json reaches the computer
// with params as the caller's bytes, and result_json is the computer's
// answer as it sent it, for every case of byteCases, over the Connect
// protocol (HTTP/1.1) and gRPC (h2c).
func TestConnectBytesBothWays(t *testing.T) {
	connectBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOffice(t, gateway.Config{}, answer)
	})
}

// connectBytesBothWays runs TestConnectBytesBothWays against the agent's
// gateway (o.gw) of the office that start makes.
func connectBytesBothWays(t *testing.T, start func(answer func(event string, payload []byte) string) *relayOffice) {
	answers := map[string]string{}
	var mu sync.Mutex
	o := start(func(event string, payload []byte) string {
		var m struct {
			ReqID string `json:"req_id"`
		}
		_ = json.Unmarshal(payload, &m)
		mu.Lock()
		defer mu.Unlock()
		return answers[m.ReqID]
	})
	// The Connect caller acts as the office's agent: the raw one leaves.
	if got := o.agent.wait(o.agent.emit("server:leave_office", `{"office_id":"o"}`), 5*time.Second); string(got) != "[true,null]" {
		t.Fatalf("leave: %s", got)
	}
	h2c := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	h2c.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	clients := map[string]smcpv1connect.AgentServiceClient{
		"connect": smcpv1connect.NewAgentServiceClient(http.DefaultClient, o.gw.URL),
		"grpc":    smcpv1connect.NewAgentServiceClient(h2c, o.gw.URL, connect.WithGRPC()),
	}
	i := 0
	for proto, cl := range clients {
		for name, c := range byteCases {
			i++
			reqID := fmt.Sprintf("c%d", i)
			answer := `{"content":[{"type":"text","text":"ok"}],"isError":false,"structuredContent":` + c + `}`
			mu.Lock()
			answers[reqID] = answer
			mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t",
				ReqId: reqID, Timeout: 5, ParamsJson: []byte(c)})
			cancel()
			if err != nil {
				t.Errorf("%s %s: %v", proto, name, err)
				continue
			}
			if string(res.GetResultJson()) != answer {
				t.Errorf("%s %s: result_json\n%.300s\nwant\n%.300s", proto, name, res.GetResultJson(), answer)
			}
			// protojson refuses lone surrogates: result then says so, and
			// result_json (checked above) still has the answer.
			if res.GetResult().GetIsError() != (name == "lone surrogate") {
				t.Errorf("%s %s: result %v", proto, name, res.GetResult())
			}
			got := o.lastReceived()
			if !bytes.Contains(got, []byte(`,"params":`+c+`,`)) {
				t.Errorf("%s %s: the computer got\n%.300s\nwithout params\n%.300s", proto, name, got, c)
			}
		}
	}
	// params_json that is not a JSON object is refused before routing.
	for _, bad := range []string{`[1]`, `{"x":NaN}`, `{"n":1e400}`, `{"a":1}x`} {
		_, err := clients["connect"].CallTool(context.Background(), &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc",
			ToolName: "t", Timeout: 5, ParamsJson: []byte(bad)})
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("params_json %s: %v, want InvalidArgument", bad, err)
		}
	}
}
