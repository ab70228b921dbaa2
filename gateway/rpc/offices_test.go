package rpc_test

import (
	"slices"
	"testing"

	"connectrpc.com/connect"

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
