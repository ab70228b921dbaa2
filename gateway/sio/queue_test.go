package sio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// gatedRegistry is a MemRegistry whose claims, listings and computer lookups
// for one office wait until the gate opens (or their context ends), as a
// registry across the network does when it is slow.
type gatedRegistry struct {
	*core.MemRegistry
	office string
	// ops, when set, are the operations gated ("claim", "members",
	// "computer"); the others pass.
	ops map[string]bool
	// claimFirst applies a claim before waiting: a claim whose answer is
	// lost (the caller gave up) although the registry applied it.
	claimFirst bool
	gate       chan struct{}
	once       sync.Once
	entered    chan string // the operation that started waiting
	left       chan error  // what a waiting operation returned with
}

func newGatedRegistry(office string) *gatedRegistry {
	return &gatedRegistry{MemRegistry: core.NewMemRegistry(), office: office, gate: make(chan struct{}),
		entered: make(chan string, 64), left: make(chan error, 64)}
}

// open lets every waiting and later operation through.
func (r *gatedRegistry) open() { r.once.Do(func() { close(r.gate) }) }

func (r *gatedRegistry) wait(ctx context.Context, op, office string) error {
	if office != r.office || (r.ops != nil && !r.ops[op]) {
		return nil
	}
	r.entered <- op
	select {
	case <-r.gate:
		r.left <- nil
		return nil
	case <-ctx.Done():
		r.left <- ctx.Err()
		return ctx.Err()
	}
}

func (r *gatedRegistry) Claim(ctx context.Context, m core.Member) error {
	if r.claimFirst {
		if err := r.MemRegistry.Claim(ctx, m); err != nil {
			return err
		}
		return r.wait(ctx, "claim", m.OfficeID)
	}
	if err := r.wait(ctx, "claim", m.OfficeID); err != nil {
		return err
	}
	return r.MemRegistry.Claim(ctx, m)
}

func (r *gatedRegistry) Members(ctx context.Context, officeID string) ([]core.Member, error) {
	if err := r.wait(ctx, "members", officeID); err != nil {
		return nil, err
	}
	return r.MemRegistry.Members(ctx, officeID)
}

func (r *gatedRegistry) Computer(ctx context.Context, officeID, name string) (core.Member, bool, error) {
	if err := r.wait(ctx, "computer", officeID); err != nil {
		return core.Member{}, false, err
	}
	return r.MemRegistry.Computer(ctx, officeID, name)
}

func (r *gatedRegistry) waitEntered(t *testing.T, want string) {
	t.Helper()
	select {
	case op := <-r.entered:
		if op != want {
			t.Fatalf("registry: %s waits, want %s", op, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("registry: no %s reached it", want)
	}
}

// startGateway serves a hub over reg on loopback.
func startGateway(t testing.TB, reg core.Registry, cfg Config) (*core.Hub, *Server, string) {
	t.Helper()
	return startHub(t, core.New(core.Config{Registry: reg}), cfg)
}

func startHub(t testing.TB, hub *core.Hub, cfg Config) (*core.Hub, *Server, string) {
	t.Helper()
	srv := New(hub, core.AllowAll{}, cfg)
	mux := http.NewServeMux()
	mux.Handle(srv.Path(), srv.Handler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return hub, srv, "ws" + strings.TrimPrefix(hs.URL, "http") + "/socket.io/?EIO=4&transport=websocket"
}

// rawConn is a Socket.IO client written frame by frame: the test sends exact
// packets (acks of calls included) and sees every packet the gateway sends.
type rawConn struct {
	t      *testing.T
	c      *ws.Conn
	wmu    sync.Mutex
	frames chan string
	done   chan struct{}
}

func dialRawConn(t *testing.T, url string) *rawConn {
	t.Helper()
	c, _, err := ws.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawConn{t: t, c: c, frames: make(chan string, 256), done: make(chan struct{})}
	go func() { // ends when c is closed (below or by close), which waits for it
		defer close(r.done)
		for {
			_, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if string(b) == "2" { // Engine.IO ping
				r.send("3")
				continue
			}
			if strings.HasPrefix(string(b), `42/smcp,["notify:`) {
				continue // office notifications: not what these tests look at
			}
			r.frames <- string(b)
		}
	}()
	t.Cleanup(r.close)
	if f := r.next(); !strings.HasPrefix(f, "0{") {
		t.Fatalf("Engine.IO open: %s", f)
	}
	r.send("40/smcp,")
	if f := r.next(); !strings.HasPrefix(f, "40/smcp,") {
		t.Fatalf("namespace connect: %s", f)
	}
	return r
}

func (r *rawConn) send(s string) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_ = r.c.WriteMessage(ws.TextMessage, []byte(s))
}

func (r *rawConn) close() {
	_ = r.c.Close()
	<-r.done
}

// next is the next packet from the gateway; the test fails after 5 s.
func (r *rawConn) next() string {
	r.t.Helper()
	select {
	case f := <-r.frames:
		return f
	case <-time.After(5 * time.Second):
		r.t.Fatal("no packet from the gateway in 5 s")
		return ""
	}
}

// none checks that the gateway sends nothing for a while.
func (r *rawConn) none(d time.Duration) {
	r.t.Helper()
	select {
	case f := <-r.frames:
		r.t.Fatalf("unexpected packet: %s", f)
	case <-time.After(d):
	}
}

func (r *rawConn) expect(want string) {
	r.t.Helper()
	if got := r.next(); got != want {
		r.t.Fatalf("got %s, want %s", got, want)
	}
}

func (r *rawConn) join(id, role, name, office string) {
	r.send(`42/smcp,` + id + `["server:join_office",{"role":"` + role + `","name":"` + name + `","office_id":"` + office + `"}]`)
}

var eventID = regexp.MustCompile(`^42/smcp,(\d+)\[`)

// request reads the next packet, a client: event for this computer, and
// returns its ack id.
func (r *rawConn) request(event string) string {
	r.t.Helper()
	f := r.next()
	m := eventID.FindStringSubmatch(f)
	if m == nil || !strings.Contains(f, `"`+event+`"`) {
		r.t.Fatalf("got %s, want a %s request", f, event)
	}
	return m[1]
}

// TestSlowJoinDoesNotStallPackets: while a computer's join waits on the
// registry, (a) another computer's answers to an agent's tool calls flow, and
// (b) the joining computer's own packets that do not depend on the join are
// processed: its answer to a tool call in flight and an event answered at
// once. An event that does depend on the join waits for it, and the acks
// come in order. Agent and computers are Socket.IO connections.
func TestSlowJoinDoesNotStallPackets(t *testing.T) {
	reg := newGatedRegistry("slow")
	t.Cleanup(reg.open) // before the server closes (cleanups run last first)
	_, _, url := startGateway(t, reg, Config{})

	other := dialRawConn(t, url)
	other.join("1", "computer", "pc1", "o")
	other.expect(`43/smcp,1[true,null]`)
	x := dialRawConn(t, url)
	x.join("1", "computer", "pcx", "o")
	x.expect(`43/smcp,1[true,null]`)
	agent := dialRawConn(t, url)
	agent.join("1", "agent", "ag", "o")
	agent.expect(`43/smcp,1[true,null]`)

	agent.send(`42/smcp,2["client:tool_call",{"agent":"ag","req_id":"r1","computer":"pcx","tool_name":"t","params":{},"timeout":30}]`)
	xCall := x.request(smcp.EventToolCall)

	// x moves to office "slow": the registry holds its claim.
	x.join("2", "computer", "pcx", "slow")
	reg.waitEntered(t, "claim")

	// (b) x's answer to the call in flight is processed meanwhile.
	x.send(`43/smcp,` + xCall + `[{"content":[],"isError":false,"from":"pcx"}]`)
	agent.expect(`43/smcp,2[{"content":[],"isError":false,"from":"pcx"}]`)
	// (b) so is an event that does not depend on the join.
	x.send(`42/smcp,3["no:such_event",{}]`)
	x.expect(`43/smcp,3[{"code":400,"message":"unknown event \"no:such_event\""}]`)
	// An event that depends on the join (x is in "slow" only once it is
	// done) waits for it.
	x.send(`42/smcp,4["server:update_tool_list",{"computer":"pcx"}]`)

	// (a) the other computer's answers flow.
	agent.send(`42/smcp,3["client:tool_call",{"agent":"ag","req_id":"r2","computer":"pc1","tool_name":"t","params":{},"timeout":30}]`)
	otherCall := other.request(smcp.EventToolCall)
	other.send(`43/smcp,` + otherCall + `[{"content":[],"isError":false,"from":"pc1"}]`)
	agent.expect(`43/smcp,3[{"content":[],"isError":false,"from":"pc1"}]`)

	x.none(100 * time.Millisecond) // nothing more while the join waits
	reg.open()
	x.expect(`43/smcp,2[true,null]`)
	x.expect(`43/smcp,4[]`)
}

// TestJoinThenLeaveApplyInOrder: a leave sent right after a join, before its
// ack, is applied after the join, however long the join waits.
func TestJoinThenLeaveApplyInOrder(t *testing.T) {
	reg := newGatedRegistry("slow")
	t.Cleanup(reg.open)
	_, _, url := startGateway(t, reg, Config{})
	x := dialRawConn(t, url)
	x.join("1", "agent", "ag", "slow")
	x.send(`42/smcp,2["server:leave_office",{"office_id":"slow"}]`)
	reg.waitEntered(t, "claim")
	x.none(100 * time.Millisecond)
	reg.open()
	x.expect(`43/smcp,1[true,null]`)
	x.expect(`43/smcp,2[true,null]`)
	if ms, _ := reg.Members(context.Background(), "slow"); len(ms) != 0 {
		t.Fatalf("after join and leave the office has %v", ms)
	}
}

// TestQueueIsBounded: events waiting behind a slow join beyond
// MaxQueuedEvents are refused at once, in their event's ack format, and the
// queued ones then run in order.
func TestQueueIsBounded(t *testing.T) {
	reg := newGatedRegistry("slow")
	t.Cleanup(reg.open)
	_, _, url := startGateway(t, reg, Config{MaxQueuedEvents: 2})
	x := dialRawConn(t, url)
	x.join("1", "agent", "ag", "slow")
	reg.waitEntered(t, "claim") // running, not queued
	x.send(`42/smcp,2["server:list_room",{"office_id":"slow"}]`)
	x.send(`42/smcp,3["client:get_config",{"agent":"ag","req_id":"r","computer":"pc"}]`)
	x.send(`42/smcp,4["server:list_room",{"office_id":"slow"}]`)
	x.expect(`43/smcp,4[{"code":429,"message":"too many events of this connection waiting for the office registry (limit 2): retry once the earlier ones are answered"}]`)
	x.join("5", "agent", "ag", "slow")
	x.expect(`43/smcp,5[false,"too many events of this connection waiting for the office registry (limit 2): retry once the earlier ones are answered"]`)
	reg.open()
	x.expect(`43/smcp,1[true,null]`)
	x.expect(`43/smcp,2[{"sessions":[{"sid":"` + sidOf(t, reg) + `","name":"ag","role":"agent","office_id":"slow"}],"req_id":""}]`)
	x.expect(`43/smcp,3[{"code":404,"message":"computer not found in this office"}]`)
}

// sidOf is the sid of the only member of the gated office.
func sidOf(t *testing.T, reg *gatedRegistry) string {
	t.Helper()
	ms, err := reg.MemRegistry.Members(context.Background(), reg.office)
	if err != nil || len(ms) != 1 {
		t.Fatalf("members %v %v", ms, err)
	}
	return ms[0].SID
}

// stuckGoroutines lists the goroutines of the connection's worker and of
// registry operations still waiting.
func stuckGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("sio.(*worker).run")) || bytes.Contains(g, []byte("sio.(*gatedRegistry).wait")) {
			out = append(out, string(g))
		}
	}
	return out
}

func waitNoneStuck(t *testing.T) {
	t.Helper()
	var stuck []string
	if !testwait.Poll(5*time.Second, func() bool { stuck = stuckGoroutines(); return len(stuck) == 0 }) {
		t.Fatalf("goroutines left:\n%s", strings.Join(stuck, "\n\n"))
	}
}

// TestDisconnectDuringStuckJoin: a connection that closes while its join
// waits on the registry stops its worker: the registry call is cancelled,
// no goroutine is left, the session is gone, and a claim the registry had
// applied is released (the name can join again).
func TestDisconnectDuringStuckJoin(t *testing.T) {
	reg := newGatedRegistry("slow")
	reg.claimFirst = true
	t.Cleanup(reg.open)
	hub, _, url := startGateway(t, reg, Config{})
	x := dialRawConn(t, url)
	x.join("1", "computer", "pcx", "slow")
	reg.waitEntered(t, "claim")
	x.send(`42/smcp,2["server:list_room",{"office_id":"slow"}]`) // queued behind it
	x.close()

	select {
	case err := <-reg.left:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the stuck claim returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck claim was not cancelled by the disconnect")
	}
	testwait.Until(t, "the session to end with its connection", func() bool { return hub.Stats().Sessions == 0 })
	waitNoneStuck(t)
	select {
	case op := <-reg.entered:
		t.Fatalf("the queued %s ran after the disconnect", op)
	default:
	}
	reg.open()
	y := dialRawConn(t, url)
	y.join("1", "computer", "pcx", "slow")
	y.expect(`43/smcp,1[true,null]`)
}

// farPeers is another node holding computer "far": it answers every request.
type farPeers struct{ wg sync.WaitGroup }

func (p *farPeers) Request(_ core.Member, _ string, _ json.RawMessage, _ time.Duration, done func(json.RawMessage, error)) func() {
	p.wg.Go(func() { done(json.RawMessage(`{"from":"far"}`), nil) }) // answers arrive on their own goroutine
	return nil
}

func (p *farPeers) Publish(core.Notification, string) {}

// TestRemoteLookupDoesNotStallPackets: in a cluster, a call to a computer of
// another node waits for the registry to find it; the caller's other packets
// are processed meanwhile, and the call is answered once it is found.
func TestRemoteLookupDoesNotStallPackets(t *testing.T) {
	reg := newGatedRegistry("o")
	reg.ops = map[string]bool{"computer": true}
	t.Cleanup(reg.open)
	hub := core.New(core.Config{Registry: reg, Node: "n1"})
	peers := &farPeers{}
	hub.SetPeers(peers)
	t.Cleanup(peers.wg.Wait)
	if err := reg.MemRegistry.Claim(context.Background(), core.Member{OfficeID: "o", Role: smcp.RoleComputer, Name: "far", SID: "far-sid", Node: "n2"}); err != nil {
		t.Fatal(err)
	}
	_, _, url := startHub(t, hub, Config{})
	a := dialRawConn(t, url)
	a.join("1", "agent", "ag", "o")
	a.expect(`43/smcp,1[true,null]`)
	// The join's worker may still be winding down after its ack: the call
	// would then queue behind it, as it should, and not be the call this
	// test is about, one sent while nothing else is pending.
	waitNoneStuck(t)
	a.send(`42/smcp,2["client:get_config",{"agent":"ag","req_id":"r","computer":"far"}]`)
	reg.waitEntered(t, "computer")
	a.send(`42/smcp,3["no:such_event",{}]`)
	a.expect(`43/smcp,3[{"code":400,"message":"unknown event \"no:such_event\""}]`)
	reg.open()
	a.expect(`43/smcp,2[{"from":"far"}]`)
}

// TestPipelinedEventsKeepTheirOrder: joins, updates, listings and leaves sent
// without waiting for their acks are applied and answered in the order sent,
// while the worker starts and stops between them and the events that need
// no registry run at once whenever nothing is queued.
func TestPipelinedEventsKeepTheirOrder(t *testing.T) {
	_, _, url := startGateway(t, core.NewMemRegistry(), Config{})
	x := dialRawConn(t, url)
	const rounds = 50
	for i := range rounds {
		id := 4 * i
		x.join(strconv.Itoa(id+1), "computer", "pc", "o")
		x.send(`42/smcp,` + strconv.Itoa(id+2) + `["server:update_tool_list",{"computer":"pc"}]`)
		x.send(`42/smcp,` + strconv.Itoa(id+3) + `["server:list_room",{"office_id":"o"}]`)
		x.send(`42/smcp,` + strconv.Itoa(id+4) + `["server:leave_office",{"office_id":"o"}]`)
	}
	for i := range rounds {
		id := 4 * i
		x.expect(`43/smcp,` + strconv.Itoa(id+1) + `[true,null]`)
		x.expect(`43/smcp,` + strconv.Itoa(id+2) + `[]`)
		if f := x.next(); !strings.HasPrefix(f, `43/smcp,`+strconv.Itoa(id+3)+`[{"sessions":[{"sid":"`) || !strings.Contains(f, `"name":"pc","role":"computer","office_id":"o"}]`) {
			t.Fatalf("round %d: list_room answered %s", i, f)
		}
		x.expect(`43/smcp,` + strconv.Itoa(id+4) + `[true,null]`)
	}
}
