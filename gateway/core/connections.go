package core

import (
	"cmp"
	"slices"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// The kinds of a Connection.
const (
	// ConnAgent and ConnComputer are Socket.IO sessions that joined an
	// office.
	ConnAgent    = "agent"
	ConnComputer = "computer"
	// ConnSession is a Socket.IO session in no office.
	ConnSession = "session"
	// ConnSeat is a stateless caller holding an office's agent seat
	// (TakeSeat): an MCP session or an RPC stream when it lapses, else one
	// call in flight.
	ConnSeat = "seat"
	// ConnWatch is a watcher of an office's notifications (an RPC
	// WatchOffice stream, an MCP session's listen stream).
	ConnWatch = "watch"
)

// Connection is one long-lived thing attached to this node, for the
// operator's view of who is connected. JSON, because nodes of a cluster
// publish theirs to each other.
type Connection struct {
	Kind   string `json:"kind"`
	Office string `json:"office,omitempty"`
	// Name is the agent's or computer's name ("" for a watcher or a
	// session in no office).
	Name string `json:"name,omitempty"`
	// Principal is the caller's Principal.ID.
	Principal string `json:"principal,omitempty"`
	// Front is the front end (FrontSocketIO, FrontRPC, FrontMCP,
	// FrontConsole; "" for a watcher, which any of them opens).
	Front string `json:"front,omitempty"`
	// Protocol is the SMCP profile of a Socket.IO session, or the wire
	// protocol of a seat ("connect", "grpc").
	Protocol string `json:"protocol,omitempty"`
	// Lapses marks a seat held as a lease that lapses unless renewed (an
	// MCP session, an RPC stream), rather than for one call.
	Lapses bool `json:"lapses,omitempty"`
	// Since is when it attached, joined or took the seat (Unix ms).
	Since int64  `json:"since"`
	Node  string `json:"node,omitempty"`
}

// Connections lists what is attached to this node: Socket.IO sessions
// (joined or not), seats held by stateless callers, and watchers, sorted
// by office, kind and since. It only reads the hub's memory.
func (h *Hub) Connections() []Connection {
	node := h.cfg.Node
	h.mu.Lock()
	out := make([]Connection, 0, len(h.sessions))
	for _, s := range h.sessions {
		c := Connection{Kind: ConnSession, Principal: s.principal.ID, Front: s.front,
			Protocol: s.proto.Version.String(), Since: s.attached, Node: node}
		if s.officeID != "" {
			c.Office, c.Name, c.Kind = s.officeID, s.name, ConnComputer
			if s.role == smcp.RoleAgent {
				c.Kind, c.Since = ConnAgent, s.since
			}
		}
		out = append(out, c)
	}
	for id, o := range h.offices {
		for l := range o.leases {
			out = append(out, Connection{Kind: ConnSeat, Office: id, Name: l.name, Principal: l.principal.ID,
				Front: l.front, Protocol: l.wire, Lapses: l.leaseMS > 0, Since: l.since, Node: node})
		}
		for w := range o.watchers {
			out = append(out, Connection{Kind: ConnWatch, Office: id, Principal: w.principal.ID, Since: w.since, Node: node})
		}
	}
	h.mu.Unlock()
	SortConnections(out)
	return out
}

// SortConnections orders cs by office, kind, since and name.
func SortConnections(cs []Connection) {
	slices.SortFunc(cs, func(a, b Connection) int {
		return cmp.Or(cmp.Compare(a.Office, b.Office), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Since, b.Since),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Node, b.Node))
	})
}
