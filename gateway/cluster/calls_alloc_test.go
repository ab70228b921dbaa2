package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// syncComputer answers every request at once with its payload.
type syncComputer struct{}

func (syncComputer) Notify(core.Notification) {}

func (syncComputer) Request(_ string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	done(payload, nil)
	return func() {}
}

// TestCrossNodeCallAllocations counts the allocations of one cross-node
// call's frames on both nodes, Redis left out: the caller's Request, the
// computer node's handling of the call and its answer, the caller's
// handling of the answer. The frames are made strings as go-redis hands
// them over (one copy each, counted). It logs the figure (go test -v) and
// fails when the call does not come back.
func TestCrossNodeCallAllocations(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	hub := func(node string) *core.Hub {
		return core.New(core.Config{Node: node, Registry: NewRegistry(rdb, RegistryOptions{})})
	}
	agentHub, computerHub := hub("a"), hub("c")
	s, err := computerHub.Attach("csid", &core.Principal{ID: "test"}, syncComputer{}, core.Protocol{Version: smcp.V02})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o"}); err != nil {
		t.Fatal(err)
	}
	caller, callee := NewCalls(rdb, agentHub, nil, nil), NewCalls(rdb, computerHub, nil, nil)
	to := core.Member{Node: "c", SID: "csid"}
	payload := json.RawMessage(`{"tool_name":"echo","params":{"text":"hi"}}`)
	// next takes the one frame queued by o, as the subscriber receives it.
	next := func(o *outbox) string {
		o.mu.Lock()
		defer o.mu.Unlock()
		if len(o.queue) != 1 {
			t.Fatalf("%d frames queued, want 1", len(o.queue))
		}
		f := string(o.queue[0].frame)
		o.queue = o.queue[:0]
		return f
	}
	var got json.RawMessage
	done := func(raw json.RawMessage, err error) {
		if err != nil {
			t.Fatal(err)
		}
		got = raw
	}
	call := func() {
		got = nil
		caller.Request(to, "client:tool_call", payload, time.Minute, done)
		if err := callee.handle(frameOf(next(caller.out))); err != nil {
			t.Fatal(err)
		}
		if err := caller.handle(frameOf(next(callee.out))); err != nil {
			t.Fatal(err)
		}
		if string(got) != string(payload) {
			t.Fatalf("answer %s, want %s", got, payload)
		}
	}
	call()
	t.Logf("allocations per cross-node call (both nodes, Redis client left out): %.0f", testing.AllocsPerRun(200, call))
}
