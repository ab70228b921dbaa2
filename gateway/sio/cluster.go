package sio

import (
	"encoding/json"
	"sync"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
)

// notifyEvent carries a notification between nodes (a server-side emit of
// the adapter): event, office id, wire JSON (as a string), sid to skip.
const notifyEvent = "smcp:notify"

func (s *Server) joinCluster() {
	s.publish = newPublisher(s.nsp)
	_ = s.nsp.On(notifyEvent, func(args ...any) {
		if len(args) < 4 {
			return
		}
		event, _ := args[0].(string)
		office, _ := args[1].(string)
		wire, _ := args[2].(string)
		except, _ := args[3].(string)
		n, err := core.NotificationFromWire(event, office, json.RawMessage(wire))
		if err != nil {
			s.log.Warn("notification from another node dropped", "err", err)
			return
		}
		s.hub.Deliver(n, except)
	})
}

// Publish hands n to the other nodes through the adapter (core.Peers'
// Publish): every node delivers it to its members of the office.
func (s *Server) Publish(n core.Notification, exceptSID string) {
	s.publish.push([]any{n.Event, n.OfficeID, string(n.Wire), exceptSID})
}

// publisher sends server-side emits in order from one goroutine, so that
// the hub, which publishes under its lock, never waits for Redis.
type publisher struct {
	nsp    socket.Namespace
	mu     sync.Mutex
	queue  [][]any
	wake   chan struct{}
	closed bool
}

func newPublisher(nsp socket.Namespace) *publisher {
	p := &publisher{nsp: nsp, wake: make(chan struct{}, 1)}
	go p.run()
	return p
}

func (p *publisher) push(args []any) {
	p.mu.Lock()
	if !p.closed {
		p.queue = append(p.queue, args)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) run() {
	for range p.wake {
		for {
			p.mu.Lock()
			batch := p.queue
			p.queue = nil
			closed := p.closed
			p.mu.Unlock()
			for _, args := range batch {
				_ = p.nsp.ServerSideEmit(notifyEvent, args...)
			}
			if closed {
				return
			}
			if len(batch) == 0 {
				break
			}
		}
	}
}

func (p *publisher) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
