package core

import (
	"context"
	"slices"
	"strings"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// ListOffices lists the offices p may enter that have a member (an agent or
// a computer that joined), sorted by id, each with its joined agent, the name
// of the one-call agents holding it (ActAsAgent) and its computers. p must
// allow the agent role: the list is an agent's view of the gateway.
//
// On one node this is the whole gateway. In a cluster it is the offices
// this node knows (a member, a lease or a watcher here) and those of
// elsewhere (the offices the other nodes know, as they last said), each
// with its membership across nodes read from the registry.
func (h *Hub) ListOffices(ctx context.Context, p *Principal, elsewhere ...string) ([]*smcpv1.OfficeSummary, error) {
	if !p.AllowsRole(smcp.RoleAgent) {
		return nil, smcp.Errorf(smcp.CodeForbidden, "this key may not act as %s", smcp.RoleAgent)
	}
	h.mu.Lock()
	out := make([]*smcpv1.OfficeSummary, 0, len(h.offices))
	for id, o := range h.offices {
		if !p.AllowsOffice(id) {
			continue
		}
		sum := &smcpv1.OfficeSummary{OfficeId: id, RpcAgent: o.leaseName}
		if o.agent != nil {
			sum.Agent = o.agent.name
		}
		for name := range o.computers {
			sum.Computers = append(sum.Computers, name)
		}
		out = append(out, sum)
	}
	h.mu.Unlock()
	for _, id := range elsewhere {
		if id != "" && p.AllowsOffice(id) && !slices.ContainsFunc(out, func(s *smcpv1.OfficeSummary) bool { return s.OfficeId == id }) {
			out = append(out, &smcpv1.OfficeSummary{OfficeId: id})
		}
	}
	// Membership may span nodes: the registry has it, not this hub. The
	// lock is not held over the network.
	for _, sum := range out {
		if err := h.fillFromRegistry(ctx, sum); err != nil {
			return nil, err
		}
	}
	out = slices.DeleteFunc(out, func(s *smcpv1.OfficeSummary) bool {
		return s.Agent == "" && len(s.Computers) == 0
	})
	for _, s := range out {
		slices.Sort(s.Computers)
	}
	slices.SortFunc(out, func(a, b *smcpv1.OfficeSummary) int { return strings.Compare(a.OfficeId, b.OfficeId) })
	return out, nil
}

// fillFromRegistry replaces sum's agent and computers with the registry's.
func (h *Hub) fillFromRegistry(ctx context.Context, sum *smcpv1.OfficeSummary) error {
	ms, err := h.cfg.Registry.Members(ctx, sum.OfficeId)
	if err != nil {
		h.logRegistry("registry members", err, "office", sum.OfficeId)
		return smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	}
	sum.Agent, sum.Computers = "", nil
	sum.Version = officeVersion(ms)
	for _, m := range ms {
		if m.Role == smcp.RoleAgent {
			sum.Agent = m.Name
		} else {
			sum.Computers = append(sum.Computers, m.Name)
		}
	}
	return nil
}

// OfficeVersion is the protocol profile officeID speaks, MAJOR.MINOR: that
// of its members, "" while it has none. p must allow the agent role and the
// office. It reads the registry (in a cluster, Redis).
func (h *Hub) OfficeVersion(ctx context.Context, p *Principal, officeID string) (string, error) {
	if !p.AllowsRole(smcp.RoleAgent) || !p.AllowsOffice(officeID) {
		return "", smcp.Errorf(smcp.CodeForbidden, "this key may not act in office %q", officeID)
	}
	ms, err := h.cfg.Registry.Members(ctx, officeID)
	if err != nil {
		h.log.Error("registry members", "office", officeID, "err", err)
		return "", smcp.Errorf(smcp.CodeInternal, "cluster registry unavailable")
	}
	return officeVersion(ms), nil
}

// officeVersion is the version of an office's members: the registries admit
// only members of one version (Registry.Claim), leases carry none.
func officeVersion(ms []Member) string {
	for _, m := range ms {
		if m.Version != "" {
			return m.Version
		}
	}
	return ""
}
