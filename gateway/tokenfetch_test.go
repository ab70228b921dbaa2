package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/tokens"
	"github.com/smcpgw/smcp-gateway/gateway/tokens/tokentest"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// The repro of the token fetch bypass, through the gateway: gRPC calls
// over h2c with forged tokens (key ids the issuer never had), each stream
// reset while the gateway fetches the issuer's keys. The issuer is asked
// at most once for discovery and once for its JWKS within the refresh
// interval. Before, each reset cancelled its fetch, which then did not
// count: 60 tokens made 59 discovery and 60 JWKS fetches.
func TestTokenFetchBoundHoldsUnderGRPCStreamResets(t *testing.T) {
	key := tokentest.NewKey(t, "k1", jose.RS256)
	stray := tokentest.NewKey(t, "stray", jose.RS256)
	iss := tokentest.New(t, tokenAudience, key)
	v, err := tokens.NewVerifier(tokens.Config{Issuer: iss.URL, Audience: tokenAudience, RefreshInterval: time.Hour,
		FetchTimeout: 2 * testwait.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: tokens.Authenticator{Tokens: v}})
	iss.Hold()
	const forged = 60
	for i := range forged {
		k := *stray
		k.ID = fmt.Sprintf("forged-%d", i)
		token := tokentest.Sign(t, &k, iss.Claims("mallory", nil))
		client := rpcClient(t, g.URL, true, connecttest.Headers("Authorization", "Bearer "+token))
		ctx, cancel := context.WithCancel(context.Background())
		answered := make(chan error, 1)
		go func() {
			_, err := client.ListOffices(ctx, &smcpv1.ListOfficesRequest{})
			answered <- err
		}()
		testwait.Until(t, "a fetch held at the issuer", func() bool { return iss.Waiting() > 0 })
		cancel() // RST_STREAM
		if err := <-answered; connect.CodeOf(err) != connect.CodeCanceled {
			t.Fatalf("call %d: %v, want it cancelled while the keys are fetched", i, err)
		}
	}
	if d, j := iss.DiscoveryFetches(), iss.JWKSFetches(); d > 1 || j > 1 {
		t.Fatalf("%d forged tokens with reset streams made %d discovery and %d JWKS fetches, want at most 1 each", forged, d, j)
	}
	iss.Release() // the held fetch's call ends, and the gateway stops without waiting for it
}
