package rpc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
)

// expiringToken authenticates every caller as a token that expires ttl
// after it is presented.
type expiringToken struct{ ttl time.Duration }

func (e expiringToken) Authenticate(context.Context, string) (*core.Principal, error) {
	return &core.Principal{ID: "token:sub", Expires: time.Now().Add(e.ttl)}, nil
}

// TestWatchEndsWithItsToken: a WatchOffice stream does not outlive the
// token that opened it; it ends with Unauthenticated saying so.
func TestWatchEndsWithItsToken(t *testing.T) {
	hub := core.New(core.Config{})
	srv := rpc.New(hub, expiringToken{ttl: 2 * time.Second}, rpc.Options{})
	t.Cleanup(srv.Close)
	mux := http.NewServeMux()
	srv.Mount(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	cl := smcpv1connect.NewAgentServiceClient(ts.Client(), ts.URL, connecttest.Headers("authorization", "Bearer t"))
	stream, err := cl.WatchOffice(testContext(t), &smcpv1.WatchOfficeRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for stream.Receive() {
		t.Fatalf("unexpected message %v", stream.Msg())
	}
	if err := stream.Err(); connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), core.ErrCredentialExpired.Message) {
		t.Fatalf("watch ended with %v; want Unauthenticated: %s", err, core.ErrCredentialExpired.Message)
	}
}
