package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrNodeGone answers the calls in flight to a node found dead (or
// leaving).
var ErrNodeGone = errors.New("core: the computer's node is gone")

// MemBus carries calls and notifications between the hubs of one process,
// as gateway/cluster's Peers does between the nodes of a cluster over
// Redis: the Peers of a hub alone (New connects each hub to a bus of its
// own, where there is nobody to reach), and of hubs connected as the nodes
// of one cluster in a process (gateway/core/peerstest runs both
// implementations through one suite).
//
// Hubs on one bus share one Registry and have distinct Config.Node ids.
type MemBus struct {
	mu   sync.Mutex
	hubs map[string]*Hub // by node id
	// calls in flight, by id: a call to a node dropped is answered at once.
	calls  map[uint64]memCall
	nextID uint64
	// queue holds the notifications published and not yet delivered, in
	// order; delivering tells whether a goroutine delivers them (one at a
	// time: the order of Publish calls is the order of delivery).
	queue      []memNote
	delivering bool
	wg         sync.WaitGroup
}

type memCall struct {
	node string
	done func(json.RawMessage, error)
}

type memNote struct {
	from   string
	n      Notification
	except string
}

// NewMemBus makes an empty bus.
func NewMemBus() *MemBus {
	return &MemBus{hubs: map[string]*Hub{}, calls: map[uint64]memCall{}}
}

// Connect makes h a node of the bus and returns its Peers (for
// Hub.SetPeers). A node id is connected once.
func (b *MemBus) Connect(h *Hub) (Peers, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.hubs[h.Node()]; ok {
		return nil, fmt.Errorf("core: node %q already on the bus", h.Node())
	}
	b.hubs[h.Node()] = h
	return memPeers{b: b, h: h}, nil
}

// Drop takes node off the bus as a cluster reaps a dead node: the calls in
// flight to it are answered with ErrNodeGone, its members are released in
// the registry, and their offices on the other nodes are told they left
// (Hub.Reap). The hub itself is left as it is, as a node that stopped
// answering.
func (b *MemBus) Drop(ctx context.Context, node string) error {
	b.mu.Lock()
	dead := b.hubs[node]
	delete(b.hubs, node)
	var gone []memCall
	for id, c := range b.calls {
		if c.node == node {
			gone = append(gone, c)
			delete(b.calls, id)
		}
	}
	others := make([]*Hub, 0, len(b.hubs))
	for _, h := range b.hubs {
		others = append(others, h)
	}
	b.mu.Unlock()
	if dead == nil {
		return fmt.Errorf("core: node %q not on the bus", node)
	}
	for _, h := range others {
		h.ForgetNode(node)
	}
	for _, c := range gone {
		c.done(nil, ErrNodeGone)
	}
	if len(others) == 0 {
		return nil
	}
	reaper := others[0]
	for _, m := range dead.Held() {
		removed, err := reaper.cfg.Registry.Release(ctx, m)
		if err != nil {
			return fmt.Errorf("core: release %s %q of node %q: %w", m.Role, m.Name, node, err)
		}
		if removed {
			reaper.Reap(m)
		}
	}
	return nil
}

// Close waits until the notifications published are delivered.
func (b *MemBus) Close() { b.wg.Wait() }

// memPeers is h's Peers on bus b.
type memPeers struct {
	b *MemBus
	h *Hub
}

// Request implements Peers: the computer's hub serves the call at once.
func (p memPeers) Request(to Member, event string, payload json.RawMessage, _ time.Duration, done func(json.RawMessage, error)) (forget func()) {
	b := p.b
	b.mu.Lock()
	target := b.hubs[to.Node]
	if target == nil {
		b.mu.Unlock()
		done(nil, ErrNodeGone)
		return nil
	}
	b.nextID++
	id := b.nextID
	b.calls[id] = memCall{node: to.Node, done: done}
	b.mu.Unlock()
	serveForget, err := target.Serve(to.SID, event, payload, func(raw json.RawMessage, err error) {
		if c, ok := b.take(id); ok {
			c.done(raw, err)
		}
	})
	if err != nil {
		if c, ok := b.take(id); ok {
			c.done(nil, err)
		}
		return nil
	}
	return func() {
		if _, ok := b.take(id); ok && serveForget != nil {
			serveForget()
		}
	}
}

// take removes call id from the calls in flight; false when it is not
// there (answered, given up, or its node dropped).
func (b *MemBus) take(id uint64) (memCall, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.calls[id]
	delete(b.calls, id)
	return c, ok
}

// Publish implements Peers. It only queues n: one goroutine at a time
// delivers the queue, since the publishing hub holds its lock and the
// receiving hubs take theirs. A hub alone on its bus publishes nothing.
func (p memPeers) Publish(n Notification, exceptSID string) {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.hubs) < 2 {
		return
	}
	b.queue = append(b.queue, memNote{from: p.h.Node(), n: n, except: exceptSID})
	if !b.delivering {
		b.delivering = true
		b.wg.Go(b.deliver)
	}
}

// deliver hands the notifications queued to every hub but their sender's
// until none is left.
func (b *MemBus) deliver() {
	var to []*Hub
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.delivering = false
			b.mu.Unlock()
			return
		}
		note := b.queue[0]
		b.queue[0] = memNote{}
		b.queue = b.queue[1:]
		to = to[:0]
		for node, h := range b.hubs {
			if node != note.from {
				to = append(to, h)
			}
		}
		b.mu.Unlock()
		for _, h := range to {
			h.Deliver(note.n, note.except)
		}
	}
}
