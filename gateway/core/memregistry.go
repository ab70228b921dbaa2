package core

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// MemRegistry is the Registry of a single node: office membership in this
// process. It applies the join rules exactly as the Redis registry's claim
// script (gateway/cluster) does; the conformance suite in
// gateway/core/registrytest holds both to them. Its one lock is held only
// for map operations.
type MemRegistry struct {
	mu      sync.Mutex
	offices map[string]*memOffice
	// now is the registry's clock, which lapses the leases.
	now func() time.Time
	// spare are agent records removed, for the next claims: a Member is
	// too large to be held in a map, which would copy each one claimed to
	// the heap (one allocation per one-call seat).
	spare []*Member
}

// maxSpare bounds MemRegistry.spare.
const maxSpare = 64

// newAgentLocked is a record holding m, a spare one if any.
func (r *MemRegistry) newAgentLocked(m Member) *Member {
	if n := len(r.spare); n > 0 {
		rec := r.spare[n-1]
		r.spare[n-1] = nil
		r.spare = r.spare[:n-1]
		*rec = m
		return rec
	}
	rec := new(Member) // not &m: m would move to the heap on every call
	*rec = m
	return rec
}

// spareLocked keeps rec, removed from its office, for a later claim.
func (r *MemRegistry) spareLocked(rec *Member) {
	if len(r.spare) < maxSpare {
		*rec = Member{}
		r.spare = append(r.spare, rec)
	}
}

// memOffice mirrors the Redis office hash: agent is the name holding the
// agent slot, agentSID the sid of the (non-lease) agent session, agents the
// holders of the agent slot (a session and one-call leases, by sid) and
// computers the computers by name.
type memOffice struct {
	agent     string
	agentSID  string
	agents    map[string]*Member
	computers map[string]Member
	// lapses holds, by sid, when each lease with a LeaseMS lapses.
	lapses map[string]time.Time
}

// NewMemRegistry makes an empty registry.
func NewMemRegistry() *MemRegistry {
	return &MemRegistry{offices: map[string]*memOffice{}, now: time.Now}
}

var _ Registry = (*MemRegistry)(nil)

// Claim implements Registry: one agent session per office, one-call agents
// (leases) sharing the slot by name, one computer per name (one computer at
// all in an office of a profile with one seat per role: RoomFull). Claiming the
// very record that holds a slot again succeeds.
func (r *MemRegistry) Claim(_ context.Context, m Member) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.offices[m.OfficeID]
	if o == nil {
		o = &memOffice{}
		r.offices[m.OfficeID] = o
	}
	if v := o.version(); m.Version != "" && v != "" && v != m.Version {
		return VersionRefusal(m, v)
	}
	if m.Role == smcp.RoleAgent {
		now := r.now()
		o.lapseLocked(now)
		if cur, ok := o.agents[m.SID]; ok && *cur == m {
			o.renewLocked(m, now) // claimed already: a renewal, or a claim repeated when its answer was lost
			return nil
		}
		if (o.agentSID != "" && (!m.Lease || o.agent != m.Name)) || (o.agent != "" && o.agent != m.Name) {
			holder := o.holderLocked()
			lapses := o.lapses[holder.SID]
			r.gcLocked(m.OfficeID, o)
			if m.SeatPerRole() {
				return RoomFull(m.OfficeID, m.Role)
			}
			return SeatRefusal(m.OfficeID, holder, lapses)
		}
		if o.agents == nil {
			o.agents = map[string]*Member{}
		}
		o.agent = m.Name
		if old := o.agents[m.SID]; old != nil {
			r.spareLocked(old)
		}
		o.agents[m.SID] = r.newAgentLocked(m)
		o.renewLocked(m, now)
		if !m.Lease {
			o.agentSID = m.SID
		}
		return nil
	}
	if cur, taken := o.computers[m.Name]; taken && cur == m {
		return nil
	} else if m.SeatPerRole() && len(o.computers) > 0 {
		return RoomFull(m.OfficeID, m.Role) // the same name too: 4101, never 4105
	} else if taken {
		return smcp.Errorf(smcp.CodeForbidden, "a computer named %q is already in office %q", m.Name, m.OfficeID)
	}
	if o.computers == nil {
		o.computers = map[string]Member{}
	}
	o.computers[m.Name] = m
	return nil
}

// lapseLocked removes the leases that lapsed by now.
func (o *memOffice) lapseLocked(now time.Time) {
	for sid, at := range o.lapses {
		if now.Before(at) {
			continue
		}
		delete(o.lapses, sid)
		delete(o.agents, sid)
		if len(o.agents) == 0 {
			o.agent = ""
		}
	}
}

// renewLocked sets when m lapses, if it is a lease that does.
func (o *memOffice) renewLocked(m Member, now time.Time) {
	if m.LeaseMS <= 0 {
		return
	}
	if o.lapses == nil {
		o.lapses = map[string]time.Time{}
	}
	o.lapses[m.SID] = now.Add(time.Duration(m.LeaseMS) * time.Millisecond)
}

// holderLocked is the holder a refusal names: the agent session, else the
// lease that lapses last (the one that keeps the seat longest).
func (o *memOffice) holderLocked() Member {
	if o.agentSID != "" {
		return *o.agents[o.agentSID]
	}
	var h Member
	for _, m := range o.agents {
		if h.SID == "" || o.lapseOf(*m).After(o.lapseOf(h)) || (o.lapseOf(*m).Equal(o.lapseOf(h)) && m.SID < h.SID) {
			h = *m
		}
	}
	return h
}

// lapseOf orders leases by lapse; one that never lapses comes last.
func (o *memOffice) lapseOf(m Member) time.Time {
	if at, ok := o.lapses[m.SID]; ok {
		return at
	}
	return time.Unix(1<<40, 0)
}

// EvictAgent implements Registry.
func (r *MemRegistry) EvictAgent(_ context.Context, officeID string) ([]Member, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.offices[officeID]
	if o == nil {
		return nil, nil
	}
	o.lapseLocked(r.now())
	out := make([]Member, 0, len(o.agents))
	for _, m := range o.agents {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.SID, b.SID) })
	o.agents, o.agent, o.agentSID, o.lapses = nil, "", "", nil
	r.gcLocked(officeID, o)
	return out, nil
}

// Release implements Registry: only the very record m is removed, so a late
// release cannot remove a newer holder.
func (r *MemRegistry) Release(_ context.Context, m Member) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.offices[m.OfficeID]
	if o == nil {
		return false, nil
	}
	removed := false
	if m.Role == smcp.RoleAgent {
		if cur, ok := o.agents[m.SID]; ok && *cur == m {
			delete(o.agents, m.SID)
			r.spareLocked(cur)
			delete(o.lapses, m.SID)
			removed = true
			if o.agentSID == m.SID {
				o.agentSID = ""
			}
			if len(o.agents) == 0 {
				o.agent = ""
			}
		}
	} else if cur, ok := o.computers[m.Name]; ok && cur == m {
		delete(o.computers, m.Name)
		removed = true
	}
	r.gcLocked(m.OfficeID, o)
	return removed, nil
}

// version is the office's: that of its non-lease members, "" when it has
// none.
func (o *memOffice) version() string {
	if o.agentSID != "" {
		return o.agents[o.agentSID].Version
	}
	for _, c := range o.computers {
		return c.Version
	}
	return ""
}

func (r *MemRegistry) gcLocked(id string, o *memOffice) {
	if len(o.agents) == 0 && len(o.computers) == 0 {
		delete(r.offices, id)
	}
}

// Members implements Registry: the agent session first, then the computers
// by name.
func (r *MemRegistry) Members(_ context.Context, officeID string) ([]Member, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.offices[officeID]
	if o == nil {
		return nil, nil
	}
	out := make([]Member, 0, 1+len(o.computers))
	if o.agentSID != "" {
		out = append(out, *o.agents[o.agentSID])
	}
	start := len(out)
	for _, c := range o.computers {
		out = append(out, c)
	}
	slices.SortFunc(out[start:], func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Computer implements Registry.
func (r *MemRegistry) Computer(_ context.Context, officeID, name string) (Member, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if o := r.offices[officeID]; o != nil {
		m, ok := o.computers[name]
		return m, ok, nil
	}
	return Member{}, false, nil
}
