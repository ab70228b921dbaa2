package gateway_test

import (
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A token without a name claim may not act under a name a key of the ring
// holds (bob's), on the Connect API (ListRoom, CancelToolCall) and MCP, as
// a key without a name may not; under a free name it may. Before, both
// calls as bob answered 200.
func TestTokensWithoutANameMayNotUseKeyBoundNames(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	iss := tokentest.New(t, tokenAudience, key)
	v, err := tokens.NewVerifier(tokens.Config{
		Issuer: iss.URL, Audience: tokenAudience, OfficesClaim: "smcp_offices", RolesClaim: "smcp_roles",
		RefreshInterval: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ring, err := core.NewKeyRing(
		core.Key{Key: computerKey, ID: "computers", Roles: []string{smcp.RoleComputer}},
		core.Key{Key: "bob-key-for-token-name-tests-51c0", ID: "bob", Roles: []string{smcp.RoleAgent}, Name: "bob"},
	)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: tokens.Authenticator{Keys: ring, Tokens: v}})
	dialComputerWithKey(t, g.URL, computerKey, "pc-a", "A")
	token := tokentest.Sign(t, key, iss.Claims("sub-anyone", map[string]any{
		"smcp_offices": []string{"A"}, "smcp_roles": []string{smcp.RoleAgent},
	}))
	ctx := ctxT(t)
	as := func(name string) map[string]func() error {
		h := connecttest.Headers("Authorization", "Bearer "+token, "x-smcp-agent", name)
		calls := map[string]func() error{}
		for _, grpc := range []bool{false, true} {
			c := rpcClient(t, g.URL, grpc, h)
			proto := map[bool]string{false: "connect", true: "grpc"}[grpc]
			calls[proto+" ListRoom"] = func() error {
				_, err := c.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "A"})
				return err
			}
			calls[proto+" CancelToolCall"] = func() error {
				_, err := c.CancelToolCall(ctx, &smcpv1.CancelToolCallRequest{OfficeId: "A", ReqId: "r-1"})
				return err
			}
		}
		return calls
	}
	for what, call := range as("bob") {
		if err := call(); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s as bob with an unnamed token: %v, want PermissionDenied", what, err)
		}
	}
	for what, call := range as("carol") {
		if err := call(); err != nil {
			t.Errorf("%s as carol with an unnamed token: %v", what, err)
		}
	}
	for name, want := range map[string]int{"bob": http.StatusForbidden, "carol": http.StatusOK} {
		status, _ := mcpInitialize(t, g.URL, "A", http.Header{"Authorization": {"Bearer " + token}, "X-Smcp-Agent": {name}})
		if status != want {
			t.Errorf("MCP initialize as %s with an unnamed token: %d, want %d", name, status, want)
		}
	}
}
