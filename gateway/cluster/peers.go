package cluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Peers carries what crosses nodes, over Redis pub/sub: the calls of
// agents on this node to computers on other nodes and theirs to this
// node's computers, and the office notifications. It is the hub's
// core.Peers in a cluster (core.MemBus is the in-process one; both pass
// gateway/core/peerstest).
//
// A call is one message published to the computer's node's own channel
// (inboxChannel), its answer one message back to the caller's, matched by
// call id: two PUBLISH a call (the socket.io Redis adapter, which carried
// them before, took five Redis commands and two node-wide broadcasts,
// docs/BENCHMARKS.md, "Cross-node calls"). A notification is one message
// on the channel every node subscribes to (notifyChannel): one PUBLISH
// whatever the number of nodes; the sender drops its own.
//
// Frames are a binary header and the payload bytes as they came, so the
// computer gets the agent's bytes, the agent the computer's, and a member
// on another node a notification's wire JSON as the hub encoded it. One
// goroutine publishes every frame of the node in the order it was handed
// (outbox), and a node receives another's frames on a channel in the order
// they were sent (on one Redis both channels are read on one subscription).
//
// On a Redis Cluster both channels are sharded (SPUBLISH, SSUBSCRIBE): an
// inbox lives on the primary of its slot, so the calls between nodes spread
// over the primaries, where plain PUBLISH would go to every node of the
// Redis Cluster. Each channel is then read on its own subscription (a
// sharded subscription is to one slot's primary).
//
// Redis pub/sub delivers at most once: a frame lost (Redis restarting, or
// not yet subscribed to again) is never sent again. A call then ends at
// the hub's deadline, as a computer that does not answer; a node that dies
// has its calls answered when it is reaped (NodeGone); a notification lost
// is lost (the registry, which list_room reads, heals on its own: see
// Node).
type Peers struct {
	rdb    redis.UniversalClient
	hub    *core.Hub
	node   string
	log    *slog.Logger
	health *Health
	out    *outbox

	mu     sync.Mutex
	nextID uint64
	// Calls are kept by value: a record less to allocate a call.
	pending map[uint64]outCall
	served  map[servedKey]inCall
	// inboxes holds the inbox channel name of each node called or calling,
	// built once rather than once a frame, and held as the interface value
	// go-redis takes its arguments as (a string made one allocates).
	inboxes map[string]any
	// notify is notifyChannel as an interface value (see inboxes).
	notify any

	// sharded: on a Redis Cluster (see above).
	sharded bool
	// subs are the subscriptions (on a Redis Cluster one per channel, each
	// replaced when its primary drops it: see resubscribe); guarded by mu,
	// as is stopped (Stop closed them: a new one is not kept).
	subs    []*redis.PubSub
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// callSlack makes the transport's own expiry of a call come after the
// hub's deadline, which therefore decides (same answers as on one node);
// the expiry only frees the state of calls nobody gave up.
const callSlack = time.Second

// sweepEvery is how often expired calls are freed.
const sweepEvery = time.Second

// maxBatch bounds the frames of one pipelined publish.
const maxBatch = 256

// publishTimeout bounds one pipelined publish.
const publishTimeout = 5 * time.Second

const (
	frameCall   = 1
	frameAnswer = 2
	frameCancel = 3
	frameNotify = 4
)

const (
	answerOK        = 0
	answerBad       = 1 // core.BadAnswerError: the body is the reason
	answerNoSession = 2 // core.ErrNoSession
	answerFailed    = 3 // the computer's request failed: the body says why
	answerRefused   = 4 // core.RefusedError: the body is its flat error
)

// ErrNodeGone answers the calls in flight to a node found dead.
var ErrNodeGone = core.ErrNodeGone

// errExpired frees a call past its deadline (the hub answered it already).
var errExpired = errors.New("cluster: call expired")

type outCall struct {
	node    string
	done    func(json.RawMessage, error)
	expires time.Time
}

type servedKey struct {
	from string
	id   uint64
}

type inCall struct {
	forget  func()
	expires time.Time
}

func inboxChannel(node string) string { return prefix + "node:{" + node + "}:calls" }

// notifyChannel carries the notifications of every node to every node.
const notifyChannel = prefix + "notify"

// NewPeers makes the link of hub's node to the other nodes. Start it
// before the node serves.
func NewPeers(rdb redis.UniversalClient, hub *core.Hub, health *Health, log *slog.Logger) *Peers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if health == nil {
		health = NewHealth(log)
	}
	// Ids start anywhere: a node restarted under the same id must not take
	// a late answer to its former self's call for one of its own.
	c := &Peers{rdb: rdb, hub: hub, node: hub.Node(), log: log, health: health, nextID: rand.Uint64(), pending: map[uint64]outCall{}, served: map[servedKey]inCall{},
		inboxes: map[string]any{}, notify: any(notifyChannel)}
	c.sharded = IsCluster(rdb)
	c.out = newOutbox(rdb, health, c.sendFailed, c.sharded)
	return c
}

// Start subscribes to the node's channel and to the notifications (it
// returns once both subscriptions are confirmed, so that no call sent to
// the node, nor any notification published, after it is missed) and runs
// the receiving, publishing and sweeping goroutines until Stop.
func (c *Peers) Start(ctx context.Context) error {
	var subs []*redis.PubSub
	if c.sharded {
		for _, ch := range []string{inboxChannel(c.node), notifyChannel} {
			sub, err := subscribed(ctx, c.rdb.SSubscribe(ctx, ch), "ssubscribe", ch)
			if err != nil {
				for _, s := range subs {
					_ = s.Close()
				}
				return err
			}
			subs = append(subs, sub)
		}
	} else {
		sub, err := subscribed(ctx, c.rdb.Subscribe(ctx, inboxChannel(c.node), notifyChannel), "subscribe", inboxChannel(c.node), notifyChannel)
		if err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	run, cancel := context.WithCancel(context.Background())
	c.subs, c.cancel = subs, cancel
	c.wg.Go(func() { defer close(c.out.done); c.out.run(run) })
	for i, sub := range subs {
		c.wg.Go(func() { c.receive(run, i, sub) })
	}
	c.wg.Go(func() { c.sweep(run) })
	return nil
}

// subscribed waits for sub's confirmation of each channel (kind: the
// confirmation's).
func subscribed(ctx context.Context, sub *redis.PubSub, kind string, channels ...string) (*redis.PubSub, error) {
	for confirmed := 0; confirmed < len(channels); {
		msg, err := sub.Receive(ctx)
		if err != nil {
			_ = sub.Close()
			return nil, fmt.Errorf("cluster: %s to %v: %w", kind, channels, err)
		}
		if s, ok := msg.(*redis.Subscription); ok && s.Kind == kind {
			confirmed++
		}
	}
	return sub, nil
}

// Stop publishes the frames queued, ends the goroutines and answers the
// calls still awaited with ErrNodeGone (this node is leaving).
func (c *Peers) Stop() {
	if c.cancel == nil {
		return
	}
	// The frames queued go out first: the leave notifications of the
	// sessions this node closed as it stops are among them.
	close(c.out.closing)
	<-c.out.done
	c.cancel()
	c.cancel = nil
	c.mu.Lock()
	subs := c.subs
	c.stopped = true
	c.mu.Unlock()
	for _, sub := range subs {
		_ = sub.Close()
	}
	c.wg.Wait()
	c.mu.Lock()
	pending := c.pending
	c.pending = map[uint64]outCall{}
	c.served = map[servedKey]inCall{}
	c.mu.Unlock()
	for _, p := range pending {
		p.done(nil, ErrNodeGone)
	}
}

// Request implements core.Peers' Request.
func (c *Peers) Request(to core.Member, event string, payload json.RawMessage, deadline time.Duration, done func(json.RawMessage, error)) (forget func()) {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = outCall{node: to.Node, done: done, expires: time.Now().Add(deadline + callSlack)}
	inbox := c.inboxLocked(to.Node)
	c.mu.Unlock()

	f := c.out.buffer(1 + 8 + 4 + 3*binary.MaxVarintLen16 + len(c.node) + len(to.SID) + len(event) + len(payload))
	b := append(f.b, frameCall)
	b = binary.BigEndian.AppendUint64(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(min(deadline.Milliseconds(), 1<<32-1)))
	b = appendString(b, c.node)
	b = appendString(b, to.SID)
	b = appendString(b, event)
	f.b = append(b, payload...)
	c.out.push(outFrame{channel: inbox, frame: f, call: id, isCall: true})
	return func() {
		if _, ok := c.take(id); !ok {
			return // answered, or failed, already
		}
		f := c.out.buffer(1 + 8 + binary.MaxVarintLen16 + len(c.node))
		f.b = appendString(binary.BigEndian.AppendUint64(append(f.b, frameCancel), id), c.node)
		c.out.push(outFrame{channel: inbox, frame: f})
	}
}

// Publish implements core.Peers' Publish: n goes to every other node,
// whose members of the office (but the session exceptSID) and watchers
// get it. It only queues the frame: the hub publishes under its lock.
func (c *Peers) Publish(n core.Notification, exceptSID string) {
	f := c.out.buffer(1 + 4*binary.MaxVarintLen16 + len(c.node) + len(exceptSID) + len(n.Event) + len(n.OfficeID) + len(n.Wire))
	b := append(f.b, frameNotify)
	b = appendString(b, c.node)
	b = appendString(b, exceptSID)
	b = appendString(b, n.Event)
	b = appendString(b, n.OfficeID)
	f.b = append(b, n.Wire...)
	c.out.push(outFrame{channel: c.notify, frame: f})
}

// inboxLocked returns node's inbox channel; c.mu is held.
func (c *Peers) inboxLocked(node string) any {
	ch, ok := c.inboxes[node]
	if !ok {
		ch = any(inboxChannel(node))
		c.inboxes[node] = ch
	}
	return ch
}

// take removes call id from the calls awaited; false when it is not there.
func (c *Peers) take(id uint64) (outCall, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	return p, ok
}

// NodeGone answers at once the calls in flight to node, found dead, forgets
// the calls it sent here, and drops its computers' locations.
func (c *Peers) NodeGone(node string) {
	var gone []outCall
	c.mu.Lock()
	for id, p := range c.pending {
		if p.node == node {
			gone = append(gone, p)
			delete(c.pending, id)
		}
	}
	delete(c.inboxes, node)
	var forgets []func()
	for k, s := range c.served {
		if k.from == node {
			delete(c.served, k)
			if s.forget != nil {
				forgets = append(forgets, s.forget)
			}
		}
	}
	c.mu.Unlock()
	c.hub.ForgetNode(node)
	for _, f := range forgets {
		f()
	}
	for _, p := range gone {
		p.done(nil, ErrNodeGone)
	}
	if len(gone) > 0 {
		c.log.Warn("calls to a dead node answered", "node", node, "calls", len(gone))
	}
}

// receive handles the frames sent to this node on sub, subscription i,
// until ctx ends.
func (c *Peers) receive(ctx context.Context, i int, sub *redis.PubSub) {
	for {
		msg, err := sub.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// go-redis dials again and subscribes again on the next read.
			c.health.Failed("cross-node traffic", err)
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			if err := c.handle(frameOf(m.Payload)); err != nil {
				c.log.Warn("cross-node frame dropped", "err", err)
			}
		case *redis.Subscription:
			if m.Kind == "sunsubscribe" {
				if sub = c.resubscribe(ctx, i, m.Channel); sub == nil {
					return
				}
			}
		}
	}
}

// resubscribe replaces sharded subscription i, which its primary dropped
// (SUNSUBSCRIBE: the slot of channel moved, or the primary became a
// replica in a switchover, while the connection stays up), with one on
// the slot's primary now, and returns it (nil: ctx ended, or Stop). go-redis
// would keep the connection to the former primary and hear nothing more.
func (c *Peers) resubscribe(ctx context.Context, i int, channel string) *redis.PubSub {
	c.log.Warn("cross-node channel dropped by its Redis primary: subscribing again", "channel", channel)
	for ctx.Err() == nil {
		if cc, ok := c.rdb.(*redis.ClusterClient); ok {
			cc.ReloadState(ctx) // the slot's primary changed
		}
		sub, err := subscribed(ctx, c.rdb.SSubscribe(ctx, channel), "ssubscribe", channel)
		if err != nil {
			c.health.Failed("cross-node traffic", err)
			if !sleep(ctx, 100*time.Millisecond) {
				return nil
			}
			continue
		}
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			_ = sub.Close()
			return nil
		}
		old := c.subs[i]
		c.subs[i] = sub
		c.mu.Unlock()
		_ = old.Close()
		return sub
	}
	return nil
}

// frameOf is the frame in payload, received, as bytes that alias the
// string rather than copy it: nothing downstream writes into the
// json.RawMessage it carries (the payload and the answer are only read,
// then written to a socket or handed to a caller).
func frameOf(payload string) []byte {
	return unsafe.Slice(unsafe.StringData(payload), len(payload))
}

// handle handles frame b, which must never be written to: the strings
// read from it alias its bytes (readString).
func (c *Peers) handle(b []byte) error {
	if len(b) > 0 && b[0] == frameNotify {
		return c.deliver(b[1:])
	}
	if len(b) < 9 {
		return fmt.Errorf("frame of %d bytes", len(b))
	}
	kind, id, b := b[0], binary.BigEndian.Uint64(b[1:9]), b[9:]
	switch kind {
	case frameAnswer:
		if len(b) < 1 {
			return errors.New("answer without status")
		}
		p, ok := c.take(id)
		if !ok {
			return nil // given up, or expired
		}
		status, body := b[0], b[1:]
		switch status {
		case answerOK:
			p.done(json.RawMessage(body), nil)
		case answerBad:
			p.done(nil, &core.BadAnswerError{Reason: string(body)})
		case answerNoSession:
			p.done(nil, core.ErrNoSession)
		case answerRefused:
			p.done(nil, refusedFrom(p.node, body))
		default:
			p.done(nil, fmt.Errorf("cluster: node %s: %s", p.node, body))
		}
		return nil
	case frameCancel:
		from, _, err := readString(b)
		if err != nil {
			return fmt.Errorf("cancel: %w", err)
		}
		c.mu.Lock()
		s := c.served[servedKey{from, id}]
		delete(c.served, servedKey{from, id})
		c.mu.Unlock()
		if s.forget != nil {
			s.forget()
		}
		return nil
	case frameCall:
		return c.serve(id, b)
	}
	return fmt.Errorf("frame kind %d", kind)
}

// deliver hands a notification of another node to the hub; b is the
// frame after its kind. The node's own come back too: they are dropped.
func (c *Peers) deliver(b []byte) error {
	from, b, err := readString(b)
	if err != nil {
		return fmt.Errorf("notification: %w", err)
	}
	if from == c.node {
		return nil
	}
	except, b, err := readString(b)
	if err != nil {
		return fmt.Errorf("notification: %w", err)
	}
	event, b, err := readString(b)
	if err != nil {
		return fmt.Errorf("notification: %w", err)
	}
	office, wire, err := readString(b)
	if err != nil {
		return fmt.Errorf("notification: %w", err)
	}
	n, err := core.NotificationFromWire(event, office, json.RawMessage(wire))
	if err != nil {
		return fmt.Errorf("notification from node %s: %w", from, err)
	}
	c.hub.Deliver(n, except)
	return nil
}

// serve hands a call of another node to the computer session it names.
func (c *Peers) serve(id uint64, b []byte) error {
	if len(b) < 4 {
		return errors.New("call without deadline")
	}
	deadline := time.Duration(binary.BigEndian.Uint32(b)) * time.Millisecond
	from, b, err := readString(b[4:])
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	sid, b, err := readString(b)
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	event, payload, err := readString(b)
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	key := servedKey{from, id}
	c.mu.Lock()
	c.served[key] = inCall{expires: time.Now().Add(deadline + callSlack)}
	inbox := c.inboxLocked(from)
	c.mu.Unlock()
	forget, err := c.hub.Serve(sid, event, json.RawMessage(payload), func(raw json.RawMessage, err error) {
		c.mu.Lock()
		_, awaited := c.served[key]
		delete(c.served, key)
		c.mu.Unlock()
		if awaited {
			c.answer(inbox, id, raw, err)
		}
	})
	c.mu.Lock()
	s, awaited := c.served[key]
	if err != nil {
		delete(c.served, key)
	} else if awaited {
		s.forget = forget
		c.served[key] = s
	}
	c.mu.Unlock()
	switch {
	case err != nil:
		c.answer(inbox, id, nil, err)
	case !awaited && forget != nil:
		forget() // given up (or expired) before the computer had it
	}
	return nil
}

// answer sends the answer of call id to the calling node's inbox.
func (c *Peers) answer(inbox any, id uint64, raw json.RawMessage, err error) {
	status, body := byte(answerOK), []byte(raw)
	if err != nil {
		status, body = failedAnswer(err)
	}
	f := c.out.buffer(10 + len(body))
	b := append(f.b, frameAnswer)
	b = binary.BigEndian.AppendUint64(b, id)
	b = append(b, status)
	b = append(b, body...)
	f.b = b
	c.out.push(outFrame{channel: inbox, frame: f})
}

// failedAnswer is the status and body of an answer that is err (kept
// apart from answer: its errors.As target escapes, an allocation each
// answer if made there).
func failedAnswer(err error) (byte, []byte) {
	var bad *core.BadAnswerError
	switch {
	case errors.As(err, &bad):
		return answerBad, []byte(bad.Reason)
	case errors.Is(err, core.ErrNoSession):
		return answerNoSession, nil
	}
	var refused *core.RefusedError
	if errors.As(err, &refused) {
		if b, jerr := json.Marshal(refused.Wire.Wire()); jerr == nil {
			return answerRefused, b
		}
	}
	return answerFailed, []byte(err.Error())
}

// refusedFrom is the core.RefusedError of node's answerRefused body, so
// that the caller gets the flat error the computer's node refused with.
func refusedFrom(node string, body []byte) error {
	var w struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("cluster: node %s: refused, unreadably: %w", node, err)
	}
	e := smcp.Errorf(w.Code, "%s", w.Message)
	e.Details = w.Details
	return &core.RefusedError{Wire: e}
}

// sendFailed answers call id, whose frame could not be published.
func (c *Peers) sendFailed(id uint64, err error) {
	if p, ok := c.take(id); ok {
		p.done(nil, fmt.Errorf("cluster: send call to node %s: %w", p.node, err))
	}
}

// sweep frees the calls past their expiry until ctx ends.
func (c *Peers) sweep(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var expired []outCall
			var forgets []func()
			c.mu.Lock()
			for id, p := range c.pending {
				if now.After(p.expires) {
					expired = append(expired, p)
					delete(c.pending, id)
				}
			}
			for k, s := range c.served {
				if now.After(s.expires) {
					delete(c.served, k)
					if s.forget != nil {
						forgets = append(forgets, s.forget)
					}
				}
			}
			c.mu.Unlock()
			for _, f := range forgets {
				f()
			}
			for _, p := range expired {
				p.done(nil, errExpired)
			}
		}
	}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readString reads a string of frame b without copying it: frames
// received are Redis payload strings, never written to (handle).
func readString(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return "", nil, errors.New("truncated string")
	}
	s := b[k : k+int(n)]
	return unsafe.String(unsafe.SliceData(s), len(s)), b[k+int(n):], nil
}

// outbox publishes frames in order from one goroutine, many to a
// pipelined round trip: under load a round trip carries the frames that
// queued while the last one was out.
type outbox struct {
	rdb    redis.UniversalClient
	health *Health
	// publish is the command: "spublish" on a Redis Cluster (Peers).
	publish string
	// failed answers a call whose frame was not sent (one function for
	// all rather than a closure a call).
	failed func(call uint64, err error)

	mu    sync.Mutex
	queue []outFrame
	// free holds the buffers of frames published, for the next frames:
	// go-redis is done with a frame once its publish returns.
	free []*frameBuf
	wake chan struct{}
	// closing, closed, has run publish what is queued and return; done is
	// closed when it has.
	closing, done chan struct{}
}

// maxFree bounds the buffers kept for reuse, and maxFreeBytes the size of
// each: a frame of a large payload is left to the collector.
const (
	maxFree      = 2 * maxBatch
	maxFreeBytes = 8 << 10
)

type outFrame struct {
	channel any // the inbox's name, a string (see Peers.inboxes)
	frame   *frameBuf
	call    uint64 // the call a frameCall frame carries
	isCall  bool   // a frameCall: its call fails when it is not sent
}

func newOutbox(rdb redis.UniversalClient, health *Health, failed func(uint64, error), sharded bool) *outbox {
	publish := "publish"
	if sharded {
		publish = "spublish"
	}
	return &outbox{rdb: rdb, health: health, publish: publish, failed: failed, wake: make(chan struct{}, 1),
		closing: make(chan struct{}), done: make(chan struct{})}
}

// frameBuf holds a frame's bytes. go-redis writes it as its bytes
// (encoding.BinaryMarshaler); a pointer made an interface value, it costs no
// allocation where a []byte would cost one a publish.
type frameBuf struct{ b []byte }

// MarshalBinary implements encoding.BinaryMarshaler.
func (f *frameBuf) MarshalBinary() ([]byte, error) { return f.b, nil }

// buffer is an empty buffer for a frame of n bytes.
func (o *outbox) buffer(n int) *frameBuf {
	if n <= maxFreeBytes {
		o.mu.Lock()
		if k := len(o.free); k > 0 {
			f := o.free[k-1]
			o.free[k-1] = nil
			o.free = o.free[:k-1]
			o.mu.Unlock()
			if cap(f.b) < n {
				f.b = make([]byte, 0, max(n, 2*cap(f.b)))
			}
			return f
		}
		o.mu.Unlock()
	}
	return &frameBuf{b: make([]byte, 0, n)}
}

// recycle keeps the buffers of frames published for the next frames.
func (o *outbox) recycle(batch []outFrame) {
	o.mu.Lock()
	for _, f := range batch {
		if len(o.free) == maxFree {
			break
		}
		if c := cap(f.frame.b); c > 0 && c <= maxFreeBytes {
			f.frame.b = f.frame.b[:0]
			o.free = append(o.free, f.frame)
		}
	}
	o.mu.Unlock()
}

func (o *outbox) push(f outFrame) {
	o.mu.Lock()
	o.queue = append(o.queue, f)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) run(ctx context.Context) {
	var batch []outFrame
	for {
		select {
		case <-ctx.Done():
			o.fail(ctx.Err())
			return
		case <-o.closing:
			// One bound for the whole of it: with Redis gone, a stop
			// waits for one publish timeout, not one a batch.
			ctx, cancel := context.WithTimeout(ctx, publishTimeout)
			o.drain(ctx, batch)
			cancel()
			return
		case <-o.wake:
		}
		// Let the goroutines ready to run (connections with calls or
		// answers read) queue their frames first: under load a round trip
		// then carries about 21 frames instead of 14, and round trips are
		// most of the publishing's cost (BenchmarkOutboxSend: 10 to 35 µs
		// of CPU each on the loaded 2-core test machine, a frame in it
		// about 1 µs). With nothing else ready this returns at once.
		runtime.Gosched()
		batch = o.drain(ctx, batch)
	}
}

// drain publishes the frames queued, in batches, until none is; batch is
// a buffer for them, returned for the next drain.
func (o *outbox) drain(ctx context.Context, batch []outFrame) []outFrame {
	for {
		o.mu.Lock()
		n := min(len(o.queue), maxBatch)
		batch = append(batch[:0], o.queue[:n]...)
		rest := copy(o.queue, o.queue[n:])
		clear(o.queue[rest:])
		o.queue = o.queue[:rest]
		o.mu.Unlock()
		if n == 0 {
			return batch
		}
		o.send(ctx, batch)
		o.recycle(batch)
		clear(batch)
	}
}

func (o *outbox) send(ctx context.Context, batch []outFrame) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	var err error
	if len(batch) == 1 {
		err = o.rdb.Do(ctx, o.publish, batch[0].channel, batch[0].frame).Err()
	} else {
		_, err = o.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, f := range batch {
				p.Do(ctx, o.publish, f.channel, f.frame)
			}
			return nil
		})
	}
	if err == nil {
		return
	}
	o.health.Failed("cross-node traffic", err)
	for _, f := range batch {
		if f.isCall {
			o.failed(f.call, err)
		}
	}
}

// fail tells the senders of the frames still queued that they were not
// sent.
func (o *outbox) fail(err error) {
	o.mu.Lock()
	q := o.queue
	o.queue = nil
	o.mu.Unlock()
	for _, f := range q {
		if f.isCall {
			o.failed(f.call, err)
		}
	}
}
