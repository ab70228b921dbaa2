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

// callsOnly is Peers without notifications: the frames of a call are the
// only ones queued (relay).
type callsOnly struct{ *Peers }

func (callsOnly) Publish(core.Notification, string) {}

// Allocation bounds of one cross-node call, both nodes, the Redis client
// left out (docs/BENCHMARKS.md, "Where each path's CPU goes"); each cut
// undone costs one or more. maxCallsAllocs counts the Peers leg alone: the
// caller's Request, the computer node's handling of the call and its
// answer, the caller's handling of the answer, and the two frames made
// strings as go-redis hands them over (one copy each). It was 9 before the
// frames' buffers were reused, the calls' records kept by value and the
// answer's error test moved off the success path. maxRemoteAllocs counts
// the whole call from the agent's Session.Go, the hub's routing to another
// node (goRemote) and its settling on top of the Peers leg; it was 21
// before goRemote kept its state in one value.
const (
	maxCallsAllocs  = 4
	maxRemoteAllocs = 13
)

type allocNodes struct {
	caller, callee *Peers
	agent          *core.Session
}

func startAllocNodes(t *testing.T) allocNodes {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	reg := NewRegistry(rdb, RegistryOptions{})
	agentHub := core.New(core.Config{Node: "a", Registry: reg})
	computerHub := core.New(core.Config{Node: "c", Registry: reg})
	n := allocNodes{caller: NewPeers(rdb, agentHub, nil, nil), callee: NewPeers(rdb, computerHub, nil, nil)}
	agentHub.SetPeers(callsOnly{n.caller})
	computerHub.SetPeers(callsOnly{n.callee})
	join := func(h *core.Hub, sid, role, name string) *core.Session {
		s, err := h.Attach(sid, &core.Principal{ID: "test"}, syncComputer{}, core.Protocol{Version: smcp.V02})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Join(&smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: "o"}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	join(computerHub, "csid", smcp.RoleComputer, "pc")
	n.agent = join(agentHub, "asid", smcp.RoleAgent, "alice")
	return n
}

// relay hands the frame queued by from to to, as the subscriber receives
// it: a string of its own (go-redis makes one a message).
func relay(t *testing.T, from, to *Peers) {
	t.Helper()
	o := from.out
	o.mu.Lock()
	if len(o.queue) != 1 {
		o.mu.Unlock()
		t.Fatalf("%d frames queued, want 1", len(o.queue))
	}
	f := o.queue[0]
	o.queue = o.queue[:0]
	o.mu.Unlock()
	s := string(f.frame.b)
	o.recycle([]outFrame{f}) // as send does once published
	if err := to.handle(frameOf(s)); err != nil {
		t.Fatal(err)
	}
}

// TestCrossNodeCallAllocations counts the allocations of one cross-node
// call's frames on both nodes, Redis left out (see maxCallsAllocs). It
// fails when the call does not come back, or above the bound. Allocations
// are counted, never time.
func TestCrossNodeCallAllocations(t *testing.T) {
	n := startAllocNodes(t)
	to := core.Member{Node: "c", SID: "csid"}
	payload := json.RawMessage(`{"tool_name":"echo","params":{"text":"hi"}}`)
	var got json.RawMessage
	done := answerInto(t, &got)
	call := func() {
		got = nil
		n.caller.Request(to, "client:tool_call", payload, time.Minute, done)
		relay(t, n.caller, n.callee)
		relay(t, n.callee, n.caller)
		if string(got) != string(payload) {
			t.Fatalf("answer %s, want %s", got, payload)
		}
	}
	call()
	per := testing.AllocsPerRun(200, call)
	t.Logf("allocations per cross-node call (both nodes, Redis client left out): %.0f", per)
	if per > maxCallsAllocs {
		t.Fatalf("%.0f allocations per cross-node call, want at most %d", per, maxCallsAllocs)
	}
}

// TestRemoteCallAllocations counts the allocations of a whole cross-node
// call from the agent's Session.Go to its answer, Redis left out (see
// maxRemoteAllocs): it fails above the bound, or when the answer is not
// the computer's bytes.
func TestRemoteCallAllocations(t *testing.T) {
	n := startAllocNodes(t)
	const payload = `{"agent":"alice","req_id":"r1","computer":"pc","tool_name":"echo","params":{"text":"hi"},"timeout":60}`
	r, err := core.ParseRequest(smcp.EventToolCall, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	var got json.RawMessage
	done := answerInto(t, &got)
	call := func() {
		got = nil
		n.agent.Go(r, done)
		relay(t, n.caller, n.callee)
		relay(t, n.callee, n.caller)
		if got == nil {
			t.Fatal("no answer")
		}
	}
	call() // the computer's location, asked of the registry once
	if string(got) != string(r.Payload) {
		t.Fatalf("answer %s, want the computer's echo of %s", got, r.Payload)
	}
	// One call stays in flight, its frame never delivered, as under load:
	// the hub's record of the remote computer lives across the calls
	// counted rather than being made again for each.
	n.agent.Go(r, func(json.RawMessage, error) {})
	n.caller.out.mu.Lock()
	n.caller.out.queue = n.caller.out.queue[:0]
	n.caller.out.mu.Unlock()
	per := testing.AllocsPerRun(200, call)
	t.Logf("allocations per cross-node call from Session.Go (both nodes, Redis client left out): %.0f", per)
	if per > maxRemoteAllocs {
		t.Fatalf("%.0f allocations per cross-node call, want at most %d", per, maxRemoteAllocs)
	}
}

// answerInto is a callback that keeps the answer in *got, failing the test
// on an error.
func answerInto(t *testing.T, got *json.RawMessage) func(json.RawMessage, error) {
	return func(raw json.RawMessage, err error) {
		if err != nil {
			t.Fatal(err)
		}
		*got = raw
	}
}
