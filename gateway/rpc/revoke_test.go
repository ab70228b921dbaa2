package rpc_test

import (
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A ReadBlob stream waiting on its computer's next chunk ends with
// Unauthenticated within a second of its key's revocation (a reload of the
// keys without it), on each protocol; the computer, whose key is kept, is
// not disturbed.
func TestReadBlobEndsWhenItsKeyIsRevoked(t *testing.T) {
	ring, err := core.NewKeyRing(
		core.Key{Key: keyAgent, ID: "agent", Roles: []string{smcp.RoleAgent}},
		core.Key{Key: keyComputer, ID: "computer", Roles: []string{smcp.RoleComputer}},
	)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, func(c *gateway.Config) { c.Auth = ring })
	ctx := transferContext(t)
	stall := make(chan struct{}, len(protocols))
	ended := map[string]chan error{}
	var pc *blobComputer
	for i, p := range protocols {
		// One office each: an office holds one agent.
		office := fmt.Sprintf("office-%d", i)
		pc = startBlobComputer(t, g, "pc-04", office, "0.4.0")
		pc.addBlob(t, writeRandomFile(t, t.TempDir(), "data.bin", 1000), "application/octet-stream")
		pc.mu.Lock()
		pc.stall = stall
		pc.mu.Unlock()
		cl := newClient(t, g, p, "x-api-key", keyAgent)
		done := make(chan error, 1)
		go func() {
			// The call returns with the answer's headers: once the first
			// chunk is sent.
			stream, err := cl.ReadBlob(ctx, &smcpv1.ReadBlobRequest{OfficeId: office, Computer: "pc-04", BlobHandle: "h-data.bin"})
			if err != nil {
				done <- err
				return
			}
			for stream.Receive() {
			}
			done <- stream.Err()
			_ = stream.Close()
		}()
		ended[p.name] = done
		<-stall // the stream waits on its computer
	}

	if _, err := ring.Replace(core.Key{Key: keyComputer, ID: "computer", Roles: []string{smcp.RoleComputer}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Second)
	for name, done := range ended {
		select {
		case err := <-done:
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Errorf("%s: the stream ended with %v, want Unauthenticated", name, err)
			}
		case <-deadline:
			t.Fatalf("%s: the revoked key's stream outlived its revocation by a second", name)
		}
	}
	if !pc.c.Connected() {
		t.Fatal("the computer, whose key was kept, was disconnected")
	}
}
