package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The room model of 0.5 over the wire (PROTOCOL-0.5.md): the nine
// scenarios of room-model.md's conformance table, as the Python SDK's own
// suite runs them (tests/integration_tests/server/
// test_single_computer_room_conformance.py), with the exact acks and the
// notifications each member gets, in order. "Nothing was broadcast" is not
// a quiet window: the member is sent a notification of its own afterwards
// (a computer's update, an agent's cancel), which must be the next it
// gets, since a session's notifications go out in the hub's order.

// only05 serves the 0.5 draft alone.
var only05 = sio.Config{Protocols: []smcp.Version{smcp.V05}}

// peer05 is a raw Socket.IO session that announced 0.5.0.
type peer05 struct {
	*rawSIO
	name string
}

func dial05(t *testing.T, url string) *peer05 {
	t.Helper()
	return &peer05{rawSIO: dialRawQuery(t, url, "&a2c_version=0.5.0", nil)}
}

// answering makes p answer client:tool_call with "<text>" as a computer
// does; its other events are queued as before.
func (p *peer05) answering(text string) {
	p.setOnEvent(func(array []byte, reply func(ack []byte)) {
		if strings.HasPrefix(string(array), `["client:tool_call"`) {
			reply([]byte(`[{"isError":false,"content":[{"type":"text","text":"` + text + `"}]}]`))
			return
		}
		p.events <- array
	})
}

func (p *peer05) call(event, payload string) string {
	p.t.Helper()
	return string(p.wait(p.emit(event, payload), 10*time.Second))
}

func (p *peer05) join(role, name, office string) string {
	p.t.Helper()
	return p.call(smcp.EventJoinOffice, fmt.Sprintf(`{"role":%q,"name":%q,"office_id":%q}`, role, name, office))
}

func (p *peer05) leave(office string) string {
	p.t.Helper()
	return p.call(smcp.EventLeaveOffice, fmt.Sprintf(`{"office_id":%q}`, office))
}

// toolCall calls computer as agent and returns the ack.
func (p *peer05) toolCall(agent, computer string) string {
	p.t.Helper()
	return p.call(smcp.EventToolCall, fmt.Sprintf(
		`{"agent":%q,"computer":%q,"tool_name":"echo","params":{},"req_id":"r","timeout":5}`, agent, computer))
}

// fire sends a fire-and-forget event (no ack asked).
func (p *peer05) fire(event, payload string) {
	p.write(fmt.Sprintf("42/smcp,[%q,%s]", event, payload))
}

// next is the next event p was sent, as its JSON array.
func (p *peer05) next() string {
	p.t.Helper()
	select {
	case b := <-p.events:
		return string(b)
	case <-time.After(10 * time.Second):
		p.t.Fatal("no event within 10s")
		return ""
	}
}

// mustNext checks that the next event p gets is want (JSON, compared as
// values).
func (p *peer05) mustNext(what, want string) {
	p.t.Helper()
	if got := p.next(); !sameJSON(got, want) {
		p.t.Fatalf("%s: got %s, want %s", what, got, want)
	}
}

// quietAgent checks that agent got nothing since: computer (in its office)
// sends an update, which must be the next event the agent gets.
func quietAgent(t *testing.T, agent, computer *peer05, computerName string) {
	t.Helper()
	computer.fire(smcp.EventUpdateToolList, fmt.Sprintf(`{"computer":%q}`, computerName))
	agent.mustNext("the agent's next event", fmt.Sprintf(`["notify:update_tool_list",{"computer":%q}]`, computerName))
}

// quietComputer checks that computer got nothing since: the agent of its
// office cancels a call, which must be the next event the computer gets.
func quietComputer(t *testing.T, computer, agent *peer05, agentName string) {
	t.Helper()
	agent.fire(smcp.EventToolCallCancel, fmt.Sprintf(`{"agent":%q,"req_id":"barrier"}`, agentName))
	computer.mustNext("the computer's next event", fmt.Sprintf(`["notify:tool_call_cancel",{"agent":%q,"req_id":"barrier"}]`, agentName))
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func mustAck(t *testing.T, what, got, want string) {
	t.Helper()
	if !sameJSON(got, want) {
		t.Fatalf("%s: ack %s, want %s", what, got, want)
	}
}

const emptyAck = `[]`

// roomFull is 0.5's 4101 ack, word for word (the Python SDK's _room_full).
func roomFull(office, role string) string {
	msg := "Room already has a computer"
	if role == smcp.RoleAgent {
		msg = "Room already has an agent"
	}
	return fmt.Sprintf(`[{"code":4101,"message":%q,"details":{"office_id":%q,"role":%q}}]`, msg, office, role)
}

func enter(office, role, name string) string {
	return fmt.Sprintf(`["notify:enter_office",{"office_id":%q,%q:%q}]`, office, role, name)
}

func leave(office, role, name string) string {
	return fmt.Sprintf(`["notify:leave_office",{"office_id":%q,%q:%q}]`, office, role, name)
}

// roomModel05 runs the nine scenarios, and 0.5's other room codes, each on
// a gateway of its own made by start.
func roomModel05(t *testing.T, start func(t *testing.T) *gateway.Running) {
	t.Run("1 second computer is 4101 and nothing is broadcast", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1, c2 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))

		mustAck(t, "C2 joins R1", c2.join("computer", "C2", "R1"), roomFull("R1", "computer"))
		quietAgent(t, a, c1, "C1")
		quietComputer(t, c1, a, "A")
	})
	t.Run("2 second computer of the same name is 4101, not 4105", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1, c2 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "PC joins R1", c1.join("computer", "PC", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "PC"))

		mustAck(t, "another PC joins R1", c2.join("computer", "PC", "R1"), roomFull("R1", "computer"))
		quietAgent(t, a, c1, "PC")
	})
	t.Run("3 idempotent re-join is not broadcast again", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1 := dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))

		mustAck(t, "C1 joins R1 again", c1.join("computer", "C1", "R1"), emptyAck)
		quietAgent(t, a, c1, "C1")
	})
	t.Run("4 refused switch leaves the old office untouched", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a2, c1, c2 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A2 joins R2", a2.join("agent", "A2", "R2"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		mustAck(t, "C2 joins R2", c2.join("computer", "C2", "R2"), emptyAck)
		a2.mustNext("A2", enter("R2", "computer", "C2"))

		mustAck(t, "C2 joins R1", c2.join("computer", "C2", "R1"), roomFull("R1", "computer"))
		quietAgent(t, a2, c2, "C2") // no leave_office in R2
		c3 := dial05(t, url)
		mustAck(t, "C3 joins R2", c3.join("computer", "C3", "R2"), roomFull("R2", "computer"))
		c2.answering("still C2")
		mustAck(t, "A2 calls C2", a2.toolCall("A2", "C2"), `[{"isError":false,"content":[{"type":"text","text":"still C2"}]}]`)
	})
	t.Run("5 rebind is leave then enter, and routes to the new computer", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1, c2 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))
		c2.answering("from C2")

		mustAck(t, "C1 leaves R1", c1.leave("R1"), emptyAck)
		mustAck(t, "C2 joins R1", c2.join("computer", "C2", "R1"), emptyAck)
		a.mustNext("A, first", leave("R1", "computer", "C1"))
		a.mustNext("A, second", enter("R1", "computer", "C2"))
		mustAck(t, "A calls C2", a.toolCall("A", "C2"), `[{"isError":false,"content":[{"type":"text","text":"from C2"}]}]`)
		mustAck(t, "A calls C1", a.toolCall("A", "C1"), `[{"code":404,"message":"computer not found in this office"}]`)
	})
	t.Run("6 switch into an occupied office is 4101 and the computer stays", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1, c2 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		mustAck(t, "C2 joins R2", c2.join("computer", "C2", "R2"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))

		mustAck(t, "C1 joins R2", c1.join("computer", "C1", "R2"), roomFull("R2", "computer"))
		quietAgent(t, a, c1, "C1") // no leave_office in R1
		c1.answering("still C1")
		mustAck(t, "A calls C1", a.toolCall("A", "C1"), `[{"isError":false,"content":[{"type":"text","text":"still C1"}]}]`)
	})
	t.Run("7 second agent is 4101 with the agent role", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, b := dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "B joins R1", b.join("agent", "B", "R1"), roomFull("R1", "agent"))
	})
	t.Run("8 concurrent joins of an empty office have one winner", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		concurrentComputers(t, url, url)
	})
	t.Run("9 switch into an empty office is told to both offices", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, a2, c1 := dial05(t, url), dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "A2 joins R2", a2.join("agent", "A2", "R2"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))

		mustAck(t, "C1 joins R2", c1.join("computer", "C1", "R2"), emptyAck)
		a.mustNext("A", leave("R1", "computer", "C1"))
		a2.mustNext("A2", enter("R2", "computer", "C1"))
		c2 := dial05(t, url)
		mustAck(t, "C2 joins R1", c2.join("computer", "C2", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C2"))
	})
	t.Run("fire and forget", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1 := dial05(t, url), dial05(t, url)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		a.mustNext("A", enter("R1", "computer", "C1"))
		// An update asked to be acked is not (0.5 forbids it); the office
		// hears it under the sender's name, not the payload's.
		upd := c1.emit(smcp.EventUpdateToolList, `{"computer":"someone-else"}`)
		a.mustNext("A", `["notify:update_tool_list",{"computer":"C1"}]`)
		// A refused one (from an agent) is dropped without an ack either.
		bad := a.emit(smcp.EventUpdateConfig, `{"computer":"A"}`)
		// A cancel naming another agent is told as the sender's.
		a.fire(smcp.EventToolCallCancel, `{"agent":"not-A","req_id":"r9"}`)
		c1.mustNext("C1", `["notify:tool_call_cancel",{"agent":"A","req_id":"r9"}]`)
		// Acks of later events come back, those two never did.
		_ = a.call(smcp.EventListRoom, `{"agent":"A","req_id":"q","office_id":"R1"}`)
		mustAck(t, "C1's leave", c1.leave("R1"), emptyAck)
		select {
		case b := <-upd:
			t.Fatalf("update acked: %s", b)
		case b := <-bad:
			t.Fatalf("refused update acked: %s", b)
		default:
		}
	})
	t.Run("room codes", func(t *testing.T) {
		t.Parallel()
		url := start(t).URL
		a, c1 := dial05(t, url), dial05(t, url)
		list := func(office string) string {
			return a.call(smcp.EventListRoom, fmt.Sprintf(`{"agent":"A","req_id":"q","office_id":%q}`, office))
		}
		mustAck(t, "list_room before a join", list("R1"), `[{"code":4103,"message":"Not in any room"}]`)
		mustAck(t, "leave before a join", a.leave("R1"), `[{"code":4103,"message":"Not in any room"}]`)
		mustAck(t, "A joins R1", a.join("agent", "A", "R1"), emptyAck)
		mustAck(t, "C1 joins R1", c1.join("computer", "C1", "R1"), emptyAck)
		mustAck(t, "A joins R2", a.join("agent", "A", "R2"), `[{"code":4106,"message":"Agent already in another room"}]`)
		mustAck(t, "list_room of R2", list("R2"), `[{"code":4104,"message":"Not a member of office \"R2\""}]`)
		mustAck(t, "leave R2", a.leave("R2"), `[{"code":4104,"message":"Not a member of office \"R2\""}]`)
		var ret struct {
			Sessions []struct{ Name, Role, OfficeID string } `json:"sessions"`
			ReqID    string                                  `json:"req_id"`
		}
		var acked []json.RawMessage
		if err := json.Unmarshal([]byte(list("R1")), &acked); err != nil || len(acked) != 1 || json.Unmarshal(acked[0], &ret) != nil {
			t.Fatalf("list_room of R1: %s", acked)
		}
		if len(ret.Sessions) != 2 || ret.Sessions[0].Name != "A" || ret.Sessions[1].Name != "C1" || ret.ReqID != "q" {
			t.Fatalf("list_room of R1: %+v", ret)
		}
		mustAck(t, "a computer's client:get_tools", c1.call(smcp.EventGetTools, `{"agent":"C1","req_id":"x","computer":"C1"}`),
			`[{"code":403,"message":"client:get_tools: only agents may call computers"}]`)
		mustAck(t, "A leaves R1", a.leave("R1"), emptyAck)
		mustAck(t, "A joins R2", a.join("agent", "A", "R2"), emptyAck)
	})
}

// concurrentComputers: two computers join the empty office R1 at once, on
// the gateways at url1 and url2: exactly one empty ack and one 4101, and a
// third computer is refused.
func concurrentComputers(t *testing.T, url1, url2 string) {
	for round := range 5 {
		office := fmt.Sprintf("R%d", round)
		c1, c2 := dial05(t, url1), dial05(t, url2)
		var wg sync.WaitGroup
		acks := make([]string, 2)
		start := make(chan struct{})
		for i, c := range []*peer05{c1, c2} {
			wg.Go(func() {
				<-start
				acks[i] = string(c.wait(c.emit(smcp.EventJoinOffice,
					fmt.Sprintf(`{"role":"computer","name":"C%d","office_id":%q}`, i+1, office)), 10*time.Second))
			})
		}
		close(start)
		wg.Wait()
		won, full := 0, 0
		for _, ack := range acks {
			switch {
			case sameJSON(ack, emptyAck):
				won++
			case sameJSON(ack, roomFull(office, "computer")):
				full++
			default:
				t.Fatalf("round %d: ack %s", round, ack)
			}
		}
		if won != 1 || full != 1 {
			t.Fatalf("round %d: acks %v, want one empty and one 4101", round, acks)
		}
		c3 := dial05(t, url1)
		mustAck(t, "C3 joins", c3.join("computer", "C3", office), roomFull(office, "computer"))
	}
}

func TestRoomModel05(t *testing.T) {
	roomModel05(t, func(t *testing.T) *gateway.Running {
		return startGateway(t, gateway.Config{SIO: only05, Logger: testLogger})
	})
}

func TestRoomModel05Miniredis(t *testing.T) {
	t.Parallel()
	roomModel05(t, func(t *testing.T) *gateway.Running {
		return startGateway(t, gateway.Config{SIO: only05, Redis: miniRedis(t), NodeID: "n0", HeartbeatTTL: clusterTTL, Logger: testLogger})
	})
}

func TestRoomModel05RedisServer(t *testing.T) {
	t.Parallel()
	roomModel05(t, func(t *testing.T) *gateway.Running {
		return startGateway(t, gateway.Config{SIO: only05, Redis: systest.RedisServer(t), NodeID: "n0", HeartbeatTTL: clusterTTL, Logger: testLogger})
	})
}

// Two computers joining one empty 0.5 office through two nodes of a
// cluster: one seat, cluster-wide.
func TestRoomModel05ConcurrentJoinsAcrossNodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		redis func(t *testing.T) string
	}{{"miniredis", miniRedis}, {"redis-server", func(t *testing.T) string { return systest.RedisServer(t) }}} {
		t.Run(c.name, func(t *testing.T) {
			url := c.redis(t)
			n0 := startGateway(t, gateway.Config{SIO: only05, Redis: url, NodeID: "n0", HeartbeatTTL: clusterTTL, Logger: testLogger})
			n1 := startGateway(t, gateway.Config{SIO: only05, Redis: url, NodeID: "n1", HeartbeatTTL: clusterTTL, Logger: testLogger})
			concurrentComputers(t, n0.URL, n1.URL)
		})
	}
}

// One office of each profile on a gateway serving all four: each keeps its
// own join acks and rules (several computers before 0.5, one in 0.5), tool
// calls route in each (from Socket.IO agents and from the typed API), and a
// member of another profile is refused in the form of its own.
func TestFourProfilesSideBySide(t *testing.T) {
	url := startGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V02, smcp.V03, smcp.V04, smcp.V05}},
		Logger: testLogger}).URL
	dialV := func(v smcp.Version) *peer05 {
		return &peer05{rawSIO: dialRawQuery(t, url, "&a2c_version="+v.Full(), nil)}
	}
	for _, v := range []smcp.Version{smcp.V02, smcp.V03, smcp.V04, smcp.V05} {
		office := "o" + v.String()
		done := `[true,null]`
		if v == smcp.V05 {
			done = emptyAck
		}
		a, c1, c2 := dialV(v), dialV(v), dialV(v)
		mustAck(t, v.String()+" agent joins", a.join("agent", "A", office), done)
		mustAck(t, v.String()+" computer joins", c1.join("computer", "C1", office), done)
		a.mustNext(v.String()+" agent", enter(office, "computer", "C1"))
		second := done
		if v == smcp.V05 {
			second = roomFull(office, "computer")
		}
		mustAck(t, v.String()+" second computer joins", c2.join("computer", "C2", office), second)
		c1.answering("C1 of " + v.String())
		mustAck(t, v.String()+" tool call", a.toolCall("A", "C1"),
			`[{"isError":false,"content":[{"type":"text","text":"C1 of `+v.String()+`"}]}]`)
	}
	// The typed API acts in an office of each profile as its one-call agent.
	rpc := smcpv1connect.NewAgentServiceClient(http.DefaultClient, url)
	for _, v := range []smcp.Version{smcp.V02, smcp.V03, smcp.V04, smcp.V05} {
		office := "rpc" + v.String()
		pc := dialV(v)
		pc.answering("RPC in " + v.String())
		done := `[true,null]`
		if v == smcp.V05 {
			done = emptyAck
		}
		mustAck(t, v.String()+" computer joins "+office, pc.join("computer", "PC", office), done)
		res, err := rpc.CallTool(ctxT(t), &smcpv1.CallToolRequest{OfficeId: office, Computer: "PC", ToolName: "echo", Timeout: 5})
		if err != nil || res.GetResult().GetContent()[0].GetFields()["text"].GetStringValue() != "RPC in "+v.String() {
			t.Fatalf("CallTool in %s: %v %v", office, res, err)
		}
	}
	mustAck(t, "0.4 computer in the 0.5 office", dialV(smcp.V04).join("computer", "C9", "o0.5"),
		`[false,"office o0.5 speaks 0.5; this connection speaks 0.4"]`)
	mustAck(t, "0.5 computer in the 0.4 office", dialV(smcp.V05).join("computer", "C9", "o0.4"),
		`[{"code":403,"message":"office o0.4 speaks 0.4; this connection speaks 0.5"}]`)
}
