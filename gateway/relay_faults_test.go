package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestBadAnswersFailOneCallOnly: a 375-digit integer, NaN, invalid JSON and
// an answer over the answer limit each fail their own call, with a clear
// error, while a slow call on the same computer completes and the computer
// stays joined. An answer over the request limit but under the answer limit
// is relayed.
func TestBadAnswersFailOneCallOnly(t *testing.T) {
	const answerLimit = 3 << 20
	big := func(n int) string { return `{"content":[{"type":"text","text":"` + strings.Repeat("x", n) + `"}]}` }
	okAnswer := `{"content":[{"type":"text","text":"slow done"}],"isError":false}`
	answers := map[string]string{
		"slow":    "slow:" + okAnswer,
		"digits":  `{"content":[],"n":` + strings.Repeat("7", 375) + `}`,
		"nan":     `{"content":[],"x":NaN}`,
		"invalid": `{"content":[}`,
		"over":    big(answerLimit + 100),
		"2mib":    big(2 << 20),
		"after":   okAnswer,
		"cfg-nan": `{"servers":NaN}`,
	}
	o := newRelayOffice(t, gateway.Config{Core: core.Config{MaxAnswerBytes: answerLimit}},
		func(event string, payload []byte) string {
			var m struct {
				ReqID string `json:"req_id"`
			}
			_ = json.Unmarshal(payload, &m)
			return answers[m.ReqID]
		})
	slow := o.agent.emit("client:tool_call", toolCall("slow", `{}`, 10))
	for _, id := range []string{"digits", "nan", "invalid", "over"} {
		got := o.agent.wait(o.agent.emit("client:tool_call", toolCall(id, `{}`, 10)), 10*time.Second)
		if !bytes.Contains(got, []byte(`"isError":true`)) || !bytes.Contains(got, []byte(`"a2c_error_code":500`)) ||
			!bytes.Contains(got, []byte(`computer \"pc\" sent an answer the gateway cannot relay`)) {
			t.Errorf("%s: agent got %.300s", id, got)
		}
	}
	got := o.agent.wait(o.agent.emit("client:get_config", `{"agent":"ag","req_id":"cfg-nan","computer":"pc"}`), 5*time.Second)
	if !bytes.HasPrefix(got, []byte(`[{"code":500,`)) || !bytes.Contains(got, []byte("cannot relay")) {
		t.Errorf("get_config with NaN: %s", got)
	}
	got = o.agent.wait(o.agent.emit("client:tool_call", toolCall("2mib", `{}`, 10)), 10*time.Second)
	if string(got) != "["+answers["2mib"]+"]" {
		t.Errorf("2 MiB answer (over the request limit, under the answer limit) not relayed: %d bytes", len(got))
	}
	if got := o.agent.wait(slow, 10*time.Second); string(got) != "["+okAnswer+"]" {
		t.Errorf("slow call: %s", got)
	}
	if got := o.agent.wait(o.agent.emit("client:tool_call", toolCall("after", `{}`, 10)), 5*time.Second); string(got) != "["+okAnswer+"]" {
		t.Errorf("call after the bad answers: %s", got)
	}
}

// TestRequestLimitOnConnect: a Connect CallTool whose params exceed the
// request limit Socket.IO applies is refused and never reaches the computer.
func TestRequestLimitOnConnect(t *testing.T) {
	o := newRelayOffice(t, gateway.Config{}, func(string, []byte) string { return `{"content":[]}` })
	// The raw agent leaves: the Connect caller acts as the office's agent.
	if got := o.agent.wait(o.agent.emit("server:leave_office", `{"office_id":"o"}`), 5*time.Second); string(got) != "[true,null]" {
		t.Fatalf("leave: %s", got)
	}
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, o.gw.URL)
	small, _ := structpb.NewStruct(map[string]any{"a": 1})
	ctx0, cancel0 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel0()
	if _, err := cl.CallTool(ctx0, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t", Params: small, Timeout: 5}); err != nil {
		t.Fatalf("small call: %v", err)
	}
	o.mu.Lock()
	o.received = nil
	o.mu.Unlock()
	params, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("y", 2<<20)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "t", Params: params, Timeout: 5})
	if code := connect.CodeOf(err); code != connect.CodeResourceExhausted && code != connect.CodeInvalidArgument {
		t.Fatalf("2 MiB params: %v, want ResourceExhausted or InvalidArgument", err)
	}
	if r := o.lastReceived(); r != nil {
		t.Fatalf("the computer received %.100s", r)
	}
}

// TestTimedOutCallsFreeTheirSlots: 1,100 calls that time out (more than the
// computer's --max-pending many times over) leave the computer reachable;
// the late answers of half of them are ignored and free no slot twice.
func TestTimedOutCallsFreeTheirSlots(t *testing.T) {
	t.Parallel()
	const maxPending = 16
	o := newRelayOffice(t, gateway.Config{Core: core.Config{RequestTimeout: 30 * time.Millisecond, MaxPending: maxPending}},
		func(event string, payload []byte) string {
			var m struct {
				ReqID string `json:"req_id"`
			}
			_ = json.Unmarshal(payload, &m)
			switch {
			case strings.HasPrefix(m.ReqID, "late-"):
				return `slow:{"servers":{},"inputs":[]}`
			case strings.HasPrefix(m.ReqID, "never-"):
				return ""
			}
			return `{"servers":{},"inputs":[]}`
		})
	get := func(reqID string) <-chan []byte {
		return o.agent.emit("client:get_config", `{"agent":"ag","req_id":"`+reqID+`","computer":"pc"}`)
	}
	for batch := 0; batch < 1100/maxPending+1; batch++ {
		var chs []<-chan []byte
		for i := range maxPending {
			kind := "never-"
			if i%2 == 0 {
				kind = "late-"
			}
			chs = append(chs, get(kind+strconv.Itoa(batch*maxPending+i)))
		}
		for _, ch := range chs {
			if got := o.agent.wait(ch, 5*time.Second); !bytes.HasPrefix(got, []byte(`[{"code":408,`)) {
				t.Fatalf("batch %d: %s, want 408", batch, got)
			}
		}
	}
	// The late answers of the last batches land now, and are ignored.
	time.Sleep(1200 * time.Millisecond)
	if got := o.agent.wait(get("ok"), 5*time.Second); string(got) != `[{"servers":{},"inputs":[]}]` {
		t.Fatalf("after 1,100 timeouts: %s", got)
	}
	// The bound still holds exactly: of maxPending+1 calls at once, one is
	// refused (a slot freed twice would let all through). Tool calls with a
	// deadline of seconds, not get_config's 30 ms: on a loaded machine the
	// first calls could time out, and free their slots, before the last
	// one is read.
	var chs []<-chan []byte
	for i := range maxPending + 1 {
		chs = append(chs, o.agent.emit("client:tool_call", toolCall("never-x"+strconv.Itoa(i), `{}`, 3)))
	}
	refused := 0
	for _, ch := range chs {
		if got := o.agent.wait(ch, 10*time.Second); bytes.HasPrefix(got, []byte(`[{"code":429,`)) {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d of %d calls refused with 429, want 1", refused, maxPending+1)
	}
}

// TestClusterBadAnswerFailsItsCall: a malformed answer read on the
// computer's node still fails its one call on the agent's node (the
// computer's node answers with the reason), and the next call succeeds.
func TestClusterBadAnswerFailsItsCall(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 2)
	pc := dialRaw(t, nodes[1].URL, func(array []byte, reply func([]byte)) {
		switch {
		case bytes.Contains(array, []byte(`"req_id":"nan"`)):
			reply([]byte(`[{"content":[],"x":NaN}]`))
		case bytes.HasPrefix(array, []byte(`["client:`)):
			reply([]byte(`[{"content":[],"isError":false}]`))
		}
	})
	pc.join("computer", "pc", "o")
	ag := dialRaw(t, nodes[0].URL, nil)
	ag.join("agent", "ag", "o")
	var got []byte
	testwait.Until(t, "the computer is seen from the agent's node", func() bool {
		got = ag.wait(ag.emit("client:tool_call", toolCall("nan", `{}`, 5)), 10*time.Second)
		return !bytes.Contains(got, []byte(`"code":404`))
	})
	if !bytes.Contains(got, []byte(`"isError":true`)) || !bytes.Contains(got, []byte("cannot relay")) {
		t.Fatalf("cross-node NaN answer: %s", got)
	}
	if got := ag.wait(ag.emit("client:tool_call", toolCall("ok", `{}`, 5)), 10*time.Second); string(got) != `[{"content":[],"isError":false}]` {
		t.Fatalf("next call: %s", got)
	}
}
