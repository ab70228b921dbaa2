package core

// Kinds of Event.
const (
	// EventJoin is a join: a session entering an office
	// (server:join_office) or a seat taken for an MCP session or an RPC
	// stream (TakeSeat with Seat.Lapses); refused too, Err saying why.
	// A seat for one call is recorded as that call (Guard) and only its
	// refusal here.
	EventJoin = "join"
	// EventLeave is a member leaving its office (server:leave_office, its
	// connection closed) or a lapsing seat released.
	EventLeave = "leave"
	// EventEvict is an operator freeing an office's agent seat
	// (Hub.EvictAgent), once per holder: the evicted holder is not also
	// recorded as leaving.
	EventEvict = "evict"
)

// Event is a security event that is not a routed request: a join, a
// leave, an eviction (see Config.Events).
type Event struct {
	Kind string
	// Principal is who joined or left; for EventEvict, the operator.
	Principal *Principal
	// Front and Protocol are as in Call; for EventEvict, the holder's.
	Front, Protocol string
	Office          string
	// Role (smcp.RoleAgent, smcp.RoleComputer) and Name are the member's:
	// for EventEvict, the evicted agent's.
	Role, Name string
	// Err is nil for a join, leave or eviction done, else the refusal (an
	// *smcp.Error).
	Err error
}

// event tells Config.Events about e, if anyone listens. It may run with
// h.mu held: Config.Events must not block.
func (h *Hub) event(e Event) {
	if h.cfg.Events != nil {
		h.cfg.Events(e)
	}
}
