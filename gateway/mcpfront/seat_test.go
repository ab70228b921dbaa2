package mcpfront

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// stallingRegistry is the hub's own MemRegistry whose claims of one-call
// seats (leases) wait until their context ends, as a cluster registry's may
// (a dead holder's heartbeat, a registry settling): it shows which context a
// claim waits with.
type stallingRegistry struct {
	core.Registry
	claiming chan struct{}
	claimed  chan error
	// end releases a claim still waiting when the test ends.
	end chan struct{}
}

func (r *stallingRegistry) Claim(ctx context.Context, m core.Member) error {
	if !m.Lease || m.LeaseMS > 0 {
		return r.Registry.Claim(ctx, m)
	}
	r.claiming <- struct{}{}
	select {
	case <-ctx.Done():
	case <-r.end:
		return context.Canceled
	}
	r.claimed <- ctx.Err()
	return ctx.Err()
}

// TestSeatClaimEndsWithRequest: a 2026-07-28 request's seat is claimed with
// the request's context, so a client that leaves while the claim waits ends
// the wait (with context.Background, as before, the claim waited for good).
func TestSeatClaimEndsWithRequest(t *testing.T) {
	reg := &stallingRegistry{Registry: core.NewMemRegistry(), claiming: make(chan struct{}, 1), claimed: make(chan error, 1),
		end: make(chan struct{})}
	hub := core.New(core.Config{Registry: reg})
	s := New(hub, core.AllowAll{}, Options{})
	defer s.Close()
	mux := http.NewServeMux()
	s.Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reqCtx, leave := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, srv.URL+"/mcp/A",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", statelessProtocol)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
		}
		done <- err
	}()
	select {
	case <-reg.claiming:
	case <-ctx.Done():
		t.Fatal("the request's seat was never claimed")
	}
	leave() // the client goes away while the claim waits
	select {
	case err := <-reg.claimed:
		if err != context.Canceled {
			t.Errorf("claim ended with %v, want context.Canceled (the request's end)", err)
		}
	case <-ctx.Done():
		close(reg.end)
		t.Fatal("the seat claim still waits after its client left")
	}
	<-done
}
