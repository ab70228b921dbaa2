package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// These tests run the cross-node calls of hubs sharing one Redis (each hub
// a node, with its registry, its heartbeat and its Peers), the sessions'
// front ends being computerConn: what a computer is sent, what it answers
// and what the core gives up are seen there.

// computerConn is a computer's front end: it records the requests it is
// sent and answers them with answer (nil: never; the request is held).
type computerConn struct {
	answer func(event string, payload json.RawMessage) (json.RawMessage, error)

	mu        sync.Mutex
	payloads  []string
	held      map[int]func(json.RawMessage, error)
	notes     []string // event and wire JSON of each notification
	forgotten atomic.Int64
}

func (c *computerConn) Notify(n core.Notification) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n.Event+" "+string(n.Wire))
}

// noted counts the notifications that contain sub.
func (c *computerConn) noted(sub string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for _, n := range c.notes {
		if strings.Contains(n, sub) {
			k++
		}
	}
	return k
}

func (c *computerConn) Request(event string, payload json.RawMessage, done func(json.RawMessage, error)) func() {
	c.mu.Lock()
	c.payloads = append(c.payloads, string(payload))
	n := len(c.payloads)
	if c.answer == nil {
		if c.held == nil {
			c.held = map[int]func(json.RawMessage, error){}
		}
		c.held[n] = done
	}
	c.mu.Unlock()
	if c.answer != nil {
		go func() { done(c.answer(event, payload)) }() // answers come on the connection's goroutine
	}
	return func() {
		c.mu.Lock()
		delete(c.held, n)
		c.mu.Unlock()
		c.forgotten.Add(1)
	}
}

func (c *computerConn) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.payloads...)
}

// countingRegistry counts the computer lookups.
type countingRegistry struct {
	core.Registry
	lookups atomic.Int64
}

func (r *countingRegistry) Computer(ctx context.Context, office, name string) (core.Member, bool, error) {
	r.lookups.Add(1)
	return r.Registry.Computer(ctx, office, name)
}

// testNode is one hub of the cluster under test.
type testNode struct {
	hub   *core.Hub
	reg   *countingRegistry
	node  *cluster.Node
	calls *cluster.Peers
	// stop ends the heartbeat (nil when it does not run).
	stop func()
}

// startNodes starts n nodes on rdb (named n0, n1...) with config cfg
// (Registry and Node are set here); their heartbeats run (TTL ttl) when beat
// is set.
func startNodes(t *testing.T, rdb redis.UniversalClient, n int, cfg core.Config, ttl time.Duration, beat bool) []*testNode {
	return startNamed(t, rdb, "n", n, cfg, ttl, beat)
}

func startNamed(t *testing.T, rdb redis.UniversalClient, prefix string, n int, cfg core.Config, ttl time.Duration, beat bool) []*testNode {
	t.Helper()
	nodes := make([]*testNode, 0, n)
	for i := range n {
		tn := &testNode{reg: &countingRegistry{Registry: cluster.NewRegistry(rdb, cluster.RegistryOptions{})}}
		c := cfg
		c.Registry, c.Node = tn.reg, fmt.Sprintf("%s%d", prefix, i)
		tn.hub = core.New(c)
		tn.node = cluster.NewNode(rdb, tn.reg.Registry.(*cluster.Registry), tn.hub, ttl, nil)
		tn.calls = cluster.NewPeers(rdb, tn.hub, tn.node.Health(), nil)
		tn.node.OnNodeGone(tn.calls.NodeGone)
		tn.hub.SetPeers(tn.calls)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := tn.node.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tn.calls.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		t.Cleanup(tn.calls.Stop)
		if beat {
			run, stop := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { tn.node.Run(run) })
			tn.stop = func() { stop(); wg.Wait() }
			t.Cleanup(tn.stop)
		}
		nodes = append(nodes, tn)
	}
	return nodes
}

func miniClient(t *testing.T) *redis.Client {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

var v02 = core.Protocol{Version: smcp.V02}

func joinAs(t *testing.T, n *testNode, sid, role, name string, conn core.Conn) *core.Session {
	t.Helper()
	s, err := n.hub.Attach(sid, &core.Principal{ID: "test"}, conn, v02)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Join(&smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: "o"}); err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	return s
}

func parse(t *testing.T, event, payload string) *core.Request {
	t.Helper()
	r, err := core.ParseRequest(event, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func echoBack(_ string, payload json.RawMessage) (json.RawMessage, error) { return payload, nil }

// forEachRedis runs f on miniredis and on a real redis-server.
func forEachRedis(t *testing.T, f func(t *testing.T, rdb *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) { f(t, miniClient(t)) })
	t.Run("redis-server", func(t *testing.T) { f(t, realRedis(t)) })
}

// TestCallsCrossNodesAsBytes: a call to a computer of another node reaches
// it as the agent's bytes and its answer comes back as the computer's,
// bad answers fail their call with the computer node's reason, and the
// computer's location is asked of the registry once, not per call.
func TestCallsCrossNodesAsBytes(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb *redis.Client) {
		nodes := startNodes(t, rdb, 2, core.Config{}, time.Second, false)
		// Keys out of order, an integer past 2^53, a lone surrogate escape,
		// spaces: all changed by a decode and re-encode.
		odd := `{ "z":1,"agent":"alice","req_id":"r1","computer":"pc","big":12345678901234567890,"s":"\ud800" ,"a":[ ]}`
		answer := `{"z" : 9007199254740993, "b":"\udfff"}`
		pc := &computerConn{answer: func(_ string, payload json.RawMessage) (json.RawMessage, error) {
			if string(payload) == odd {
				return json.RawMessage(answer), nil
			}
			return nil, &core.BadAnswerError{Reason: "not JSON: binary attachment"}
		}}
		ac := &computerConn{}
		agent := joinAs(t, nodes[0], "a-sid", smcp.RoleAgent, "alice", ac)
		joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", pc)
		// Its enter drops the location the agent's node has: counted
		// after it, the lookups are those of the calls.
		testwait.Within(t, 10*time.Second, "the agent told pc entered", func() bool { return ac.noted(`"computer":"pc"`) == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := agent.Route(ctx, parse(t, smcp.EventGetConfig, odd))
		if err != nil || string(got) != answer {
			t.Fatalf("answer %q, %v; want %q", got, err, answer)
		}
		if reqs := pc.requests(); len(reqs) != 1 || reqs[0] != odd {
			t.Fatalf("computer got %q, want %q", reqs, odd)
		}
		_, err = agent.Route(ctx, parse(t, smcp.EventGetConfig, `{"agent":"alice","req_id":"r2","computer":"pc"}`))
		if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeInternal || !strings.Contains(e.Message, "binary attachment") {
			t.Fatalf("bad answer: %v, want a 500 with the computer node's reason", err)
		}
		for i := range 20 {
			if _, err := agent.Route(ctx, parse(t, smcp.EventGetConfig, fmt.Sprintf(`{"agent":"alice","req_id":"x%d","computer":"pc"}`, i))); err == nil {
				continue
			} else if _, ok := smcp.AsError(err); !ok {
				t.Fatal(err)
			}
		}
		if n := nodes[0].reg.lookups.Load(); n != 1 {
			t.Fatalf("the registry was asked %d times for 22 calls, want once", n)
		}
	})
}

// TestCallsCancelReachesComputerNode: a call its caller gives up (its
// context ends) is forgotten on the computer's node too, and the late
// answer is dropped; a call past its deadline is answered 408 on the
// caller's node and forgotten on the computer's.
func TestCallsCancelReachesComputerNode(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb *redis.Client) {
		nodes := startNodes(t, rdb, 2, core.Config{RequestTimeout: 500 * time.Millisecond}, time.Second, false)
		pc := &computerConn{} // holds every request
		joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", pc)
		agent := joinAs(t, nodes[0], "a-sid", smcp.RoleAgent, "alice", &computerConn{})

		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := agent.Route(ctx, parse(t, smcp.EventGetConfig, `{"agent":"alice","req_id":"c1","computer":"pc"}`))
			errc <- err
		}()
		testwait.Within(t, 10*time.Second, "the call at the computer", func() bool { return len(pc.requests()) == 1 })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
		testwait.Within(t, 10*time.Second, "the computer's node forgetting the call", func() bool { return pc.forgotten.Load() == 1 })

		start := time.Now()
		_, err := agent.Route(context.Background(), parse(t, smcp.EventGetConfig, `{"agent":"alice","req_id":"d1","computer":"pc"}`))
		if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeTimeout {
			t.Fatalf("call past its deadline: %v, want 408", err)
		}
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Fatalf("answered after %v, before its deadline", d)
		}
		testwait.Within(t, 10*time.Second, "the computer's node forgetting the timed-out call", func() bool { return pc.forgotten.Load() == 2 })
	})
}

// TestCallsToDeadNodeAnsweredAtLapse: the calls in flight to a computer
// whose node stops beating are answered (computer gone) once its heartbeat
// lapses and the caller's node reaps it, long before their deadline; the
// next call is refused (404) without reaching the dead node.
func TestCallsToDeadNodeAnsweredAtLapse(t *testing.T) {
	rdb := realRedis(t) // keys expire on their own
	// Not shorter: on a loaded machine a heartbeat late by two thirds of a
	// TTL is taken for Redis standing still, and nobody is reaped while
	// the registry settles after that.
	const ttl = 2 * time.Second
	nodes := startNodes(t, rdb, 1, core.Config{}, ttl, true)
	dead := startNamed(t, rdb, "dead", 1, core.Config{}, ttl, true)[0]
	pc := &computerConn{}
	joinAs(t, dead, "pc-sid", smcp.RoleComputer, "pc", pc)
	agent := joinAs(t, nodes[0], "a-sid", smcp.RoleAgent, "alice", &computerConn{})

	const calls = 5
	answers := make(chan json.RawMessage, calls)
	for i := range calls {
		r := parse(t, smcp.EventToolCall, fmt.Sprintf(`{"agent":"alice","req_id":"t%d","computer":"pc","tool_name":"x","params":{},"timeout":600}`, i))
		agent.Go(r, func(raw json.RawMessage, err error) {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			answers <- raw
		})
	}
	testwait.Within(t, 10*time.Second, "the calls at the computer", func() bool { return len(pc.requests()) == calls })
	dead.stop() // the node stops beating, its calls still held
	start := time.Now()
	for range calls {
		select {
		case raw := <-answers:
			if !strings.Contains(string(raw), "left the office") {
				t.Fatalf("answer %s, want the computer gone", raw)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("calls to the dead node not answered within 60 s (deadline 10 min)")
		}
	}
	t.Logf("calls answered %v after the node stopped beating (TTL %v)", time.Since(start).Round(time.Millisecond), ttl)
	_, err := agent.Route(context.Background(), parse(t, smcp.EventGetConfig, `{"agent":"alice","req_id":"after","computer":"pc"}`))
	if e, ok := smcp.AsError(err); !ok || e.Code != smcp.CodeNotFound {
		t.Fatalf("call after the node died: %v, want 404", err)
	}
}

// TestCallsFollowAComputerThatMoves: a computer that leaves one node and
// joins another is called on the new one: its leave and enter drop the
// location the caller's node had, which asks the registry again.
func TestCallsFollowAComputerThatMoves(t *testing.T) {
	nodes := startNodes(t, miniClient(t), 3, core.Config{}, time.Second, false)
	echo := func(name string) *computerConn {
		return &computerConn{answer: func(string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"` + name + `"`), nil
		}}
	}
	ac := &computerConn{}
	agent := joinAs(t, nodes[0], "a-sid", smcp.RoleAgent, "alice", ac)
	first := joinAs(t, nodes[1], "pc-1", smcp.RoleComputer, "pc", echo("n1"))
	entered := func(k int) {
		t.Helper()
		testwait.Within(t, 10*time.Second, "the agent told pc entered", func() bool {
			return ac.noted(smcp.NotifyEnterOffice+` {"office_id":"o","computer":"pc"`) == k
		})
	}
	entered(1)
	call := func(id string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := agent.Route(ctx, parse(t, smcp.EventGetConfig, `{"agent":"alice","req_id":"`+id+`","computer":"pc"}`))
		if err != nil {
			t.Fatalf("call %s: %v", id, err)
		}
		return string(got)
	}
	for i := range 3 {
		if got := call(fmt.Sprint("a", i)); got != `"n1"` {
			t.Fatalf("answered by %s", got)
		}
	}
	if err := first.Leave("o"); err != nil {
		t.Fatal(err)
	}
	joinAs(t, nodes[2], "pc-2", smcp.RoleComputer, "pc", echo("n2"))
	entered(2)
	if got := call("b"); got != `"n2"` {
		t.Fatalf("after the move answered by %s", got)
	}
	if n := nodes[0].reg.lookups.Load(); n != 2 {
		t.Fatalf("registry asked %d times, want 2 (once per place)", n)
	}
}

// TestStopPublishesWhatIsQueued: the notifications a node's hub published
// before its Peers stop (the leave_office of the sessions a stopping node
// closes) reach the other nodes: Stop sends what is queued first.
func TestStopPublishesWhatIsQueued(t *testing.T) {
	nodes := startNodes(t, miniClient(t), 2, core.Config{}, time.Second, false)
	pc := &computerConn{}
	joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", pc)
	agent := joinAs(t, nodes[0], "a-sid", smcp.RoleAgent, "alice", &computerConn{})
	const n = 200
	for i := range n {
		if err := agent.CancelToolCall(&smcpv1.AgentCallData{Agent: "alice", ReqId: fmt.Sprint("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	nodes[0].calls.Stop()
	testwait.Within(t, 30*time.Second, "every cancel at the computer", func() bool { return pc.noted(smcp.NotifyToolCallCancel) == n })
}
