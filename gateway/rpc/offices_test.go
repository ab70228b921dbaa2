package rpc_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestListOffices lists the offices through a live gateway with real
// Socket.IO computers: a key sees only the offices it may enter, listing
// holds no office (another agent may take it right after), and a key that
// may not act as an agent, or none at all, is refused.
func TestListOffices(t *testing.T) {
	g := startGateway(t)
	startComputer(t, g, "pc-a", officeA)
	startComputer(t, g, "pc-b2", officeB)
	startComputer(t, g, "pc-b1", officeB)
	startComputer(t, g, "pc-c", "office-c")
	ctx := testContext(t)

	names := func(res *smcpv1.ListOfficesResponse) []string {
		var out []string
		for _, o := range res.GetOffices() {
			s := o.GetOfficeId() + ":"
			for _, c := range o.GetComputers() {
				s += " " + c
			}
			out = append(out, s)
		}
		return out
	}
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{keyAgent, []string{"office-a: pc-a", "office-b: pc-b1 pc-b2"}},
		{keyOfficeB, []string{"office-b: pc-b1 pc-b2"}},
	} {
		for _, p := range protocols {
			cl := newClient(t, g, p, "x-api-key", tc.key, "x-smcp-agent", "lister")
			res, err := cl.ListOffices(ctx, &smcpv1.ListOfficesRequest{})
			if err != nil {
				t.Fatalf("%s %s: %v", tc.key, p.name, err)
			}
			if got := names(res); !slices.Equal(got, tc.want) {
				t.Fatalf("%s %s: got %q, want %q", tc.key, p.name, got, tc.want)
			}
		}
	}

	// Listing held nothing: another agent name may use the office at once.
	other := newClient(t, g, protocols[0], "x-api-key", keyAgent, "x-smcp-agent", "someone-else")
	if _, err := other.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeA}); err != nil {
		t.Fatalf("office held after ListOffices: %v", err)
	}

	pcKey := newClient(t, g, protocols[0], "x-api-key", keyComputer)
	_, err := pcKey.ListOffices(ctx, &smcpv1.ListOfficesRequest{})
	wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)
	noKey := newClient(t, g, protocols[0])
	_, err = noKey.ListOffices(ctx, &smcpv1.ListOfficesRequest{})
	wantCode(t, err, connect.CodeUnauthenticated, smcp.CodeUnauthenticated)
}

// TestOperatorViewsOperatorsOnly: the operator views name every principal
// and office, so any key but an operator's is refused (403) on every
// protocol, before anything is read; an operator's key reads them (what a
// gateway without metrics or audit does not keep, it says so).
func TestOperatorViewsOperatorsOnly(t *testing.T) {
	const keyOperator = "k-operator"
	g := startGateway(t, func(c *gateway.Config) {
		ring, err := core.NewKeyRing(core.Key{Key: keyAgent, ID: "agent", Roles: []string{smcp.RoleAgent}, Offices: []string{officeA, officeB}},
			core.Key{Key: keyComputer, ID: "computer", Roles: []string{smcp.RoleComputer}},
			core.Key{Key: keyOperator, ID: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		c.Auth = ring
	})
	startComputer(t, g, "pc-a", officeA)
	ctx := testContext(t)
	for _, p := range protocols {
		cl := newClient(t, g, p, "x-api-key", keyAgent)
		_, err := cl.ListAudit(ctx, &smcpv1.ListAuditRequest{})
		wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)
		_, err = cl.ListConnections(ctx, &smcpv1.ListConnectionsRequest{})
		wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)
		_, err = cl.ListQuotas(ctx, &smcpv1.ListQuotasRequest{})
		wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)
		_, err = cl.GetFigures(ctx, &smcpv1.GetFiguresRequest{})
		wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)
		_, err = cl.ListSignIns(ctx, &smcpv1.ListSignInsRequest{})
		wantCode(t, err, connect.CodePermissionDenied, smcp.CodeForbidden)

		op := newClient(t, g, p, "x-api-key", keyOperator)
		conns, err := op.ListConnections(ctx, &smcpv1.ListConnectionsRequest{Office: officeA})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if cs := conns.GetConnections(); len(cs) != 1 || cs[0].GetKind() != "computer" || cs[0].GetName() != "pc-a" ||
			cs[0].GetPrincipal() != "computer" || cs[0].GetSince() == "" {
			t.Fatalf("%s: connections of office-a: %v", p.name, cs)
		}
		audit, err := op.ListAudit(ctx, &smcpv1.ListAuditRequest{})
		if err != nil || audit.GetEnabled() {
			t.Fatalf("%s: audit of a gateway without one: %v, %v", p.name, audit, err)
		}
		_, err = op.GetFigures(ctx, &smcpv1.GetFiguresRequest{})
		if connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Fatalf("%s: figures without metrics: %v", p.name, err)
		}
	}
}
