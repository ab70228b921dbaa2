package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// watchKeys serves ring's keys file with its Watch until the test ends.
func watchKeys(t *testing.T, ring *core.KeyRing) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ring.Watch(ctx, testLogger, nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// putBlobStream opens a PutBlob stream with the stock connect-go client,
// over HTTP/1.1 or (gRPC) h2c, as the key.
func putBlobStream(t *testing.T, ctx context.Context, base string, grpc bool, key string) *connect.ClientStreamForClient[smcpv1.PutBlobRequest, smcpv1.PutBlobResponse] {
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	opts := []connect.ClientOption{connecttest.Headers("x-api-key", key)}
	if grpc {
		tr.Protocols.SetUnencryptedHTTP2(true)
		opts = append(opts, connect.WithGRPC())
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return connect.NewClient[smcpv1.PutBlobRequest, smcpv1.PutBlobResponse](&http.Client{Transport: tr},
		base+smcpv1connect.AgentServicePutBlobProcedure, opts...).CallClientStream(ctx)
}

// revocationBound is what the issue promises: a revoked key's connections
// and streams end within a second of the keys file's change.
const revocationBound = time.Second

// A key removed from the keys file while it holds a Socket.IO connection,
// an MCP session and upload streams (gRPC over h2c, Connect over HTTP/1.1) that wait for
// their client's next message: all of them end within a second, the
// streams with Unauthenticated; its next request is refused with 401 on
// both front ends. A key left unchanged keeps its connection, without a
// reconnect. No restart.
func TestKeysFileRevocationEndsConnectionsAndStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	const both = "keys:\n  - {key: doomed-key, id: doomed}\n  - {key: kept-key, id: kept}\n"
	if err := os.WriteFile(path, []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := core.LoadKeyRing(path)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring})
	watchKeys(t, ring)
	ctx := ctxT(t)

	doomed, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "doomed-key", NoReconnect: true, Logger: testLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer doomed.Close()
	if err := doomed.JoinOffice(ctx, smcp.RoleAgent, "doomed", "o1"); err != nil {
		t.Fatal(err)
	}
	kept, err := agent.Dial(ctx, sioclient.Options{Version: smcp.ProtocolVersion, URL: g.URL, APIKey: "kept-key", Logger: testLogger}, "kept")
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if err := kept.Join(ctx, "o2"); err != nil {
		t.Fatal(err)
	}
	keptSID := kept.Conn().ID()

	// An MCP session of each key (2025-11-25), with the go-sdk client.
	mcpSession := func(key, office string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/" + office, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: headerTransport{"x-api-key", key}}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	mcpSession("doomed-key", "o3")
	keptMCP := mcpSession("kept-key", "o4")
	if n := g.MCP.Sessions(); n != 2 {
		t.Fatalf("%d MCP sessions, want 2", n)
	}

	// Each upload holds an office's agent seat once its header is read,
	// then waits for data that never comes.
	streams := map[string]chan error{}
	for office, grpc := range map[string]bool{"o-grpc": true, "o-connect": false} {
		up := putBlobStream(t, ctx, g.URL, grpc, "doomed-key")
		hdr := &smcpv1.PutBlobHeader{OfficeId: office, Computer: "pc", TotalSize: 10,
			Sha256: "0000000000000000000000000000000000000000000000000000000000000000"}
		if err := up.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Header{Header: hdr}}); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		conn, err := up.Conn()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			// The answer, read while the request stays open.
			ended <- conn.Receive(&smcpv1.PutBlobResponse{})
			_, _ = up.CloseAndReceive()
		}()
		streams[office] = ended
		other := rpcClient(t, g.URL, false, connecttest.Headers("x-api-key", "kept-key", "x-smcp-agent", "other"))
		testwait.Until(t, "the upload holds "+office, func() bool {
			_, err := other.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: office})
			return err != nil
		})
	}

	if err := os.WriteFile(path+".new", []byte("keys:\n  - {key: kept-key, id: kept}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(revocationBound)
	select {
	case <-doomed.Done():
	case <-deadline:
		t.Fatal("the revoked key's Socket.IO connection outlived the reload by a second")
	}
	for office, ended := range streams {
		select {
		case err := <-ended:
			if connect.CodeOf(err) != connect.CodeUnauthenticated {
				t.Errorf("%s: the upload ended with %v, want Unauthenticated", office, err)
			}
		case <-deadline:
			t.Fatalf("%s: the revoked key's upload outlived the reload by a second", office)
		}
	}

	testwait.Within(t, revocationBound, "the revoked key's MCP session to end", func() bool { return g.MCP.Sessions() == 1 })
	if _, err := keptMCP.ListTools(ctx, nil); err != nil {
		t.Errorf("the unchanged key's MCP session: %v", err)
	}

	_, err = sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "doomed-key", NoReconnect: true, Logger: testLogger})
	wantCode(t, err, smcp.CodeUnauthenticated)
	_, err = rpcClient(t, g.URL, true, connecttest.Headers("x-api-key", "doomed-key")).
		ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o-grpc"})
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("the revoked key's next RPC: %v, want Unauthenticated", err)
	}

	if _, err := kept.ListRoom(ctx); err != nil {
		t.Fatalf("the unchanged key's connection: %v", err)
	}
	if !kept.Conn().Connected() || kept.Conn().ID() != keptSID {
		t.Fatal("the unchanged key's connection was cut by the reload")
	}
}

// A keys file that does not check is refused whole: the keys in force
// stay, the connections of every key go on, and the gateway logs why.
func TestKeysFileBadReloadKeepsTheKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(path, []byte("keys:\n  - {key: the-key, id: one}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ring, err := core.LoadKeyRing(path)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gateway.Config{Auth: ring})
	var logs testwait.Buffer
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ring.Watch(wctx, slog.New(slog.NewTextHandler(&logs, nil)), nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	ctx := ctxT(t)
	a, err := agent.Dial(ctx, sioclient.Options{Version: smcp.ProtocolVersion, URL: g.URL, APIKey: "the-key", Logger: testLogger}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	sid := a.Conn().ID()
	// The first entry is good, the second has no key: nothing of the file
	// is applied, not even the removal of the-key.
	if err := os.WriteFile(path, []byte("keys:\n  - {key: new-key, id: two}\n  - {id: three}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the refusal logged", func() bool { return strings.Contains(logs.String(), "level=ERROR") })
	for _, want := range []string{"keys file not reloaded", "path=" + path, "entry 1 has an empty key"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if _, err := a.ListRoom(ctx); err != nil || a.Conn().ID() != sid {
		t.Fatalf("the connection did not go on: %v", err)
	}
	if _, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: "new-key", NoReconnect: true, Logger: testLogger}); err == nil {
		t.Fatal("a key of the refused file was admitted")
	}
}

// expiringAuth admits every caller with a credential that expires ttl
// after it is authenticated, and keeps the last expiry given.
type expiringAuth struct {
	ttl     time.Duration
	expires atomic.Int64 // UnixNano
}

func (a *expiringAuth) Authenticate(context.Context, string) (*core.Principal, error) {
	expires := time.Now().Add(a.ttl)
	a.expires.Store(expires.UnixNano())
	return &core.Principal{ID: "token:alice", Expires: expires}, nil
}

// A Socket.IO connection ends when its credential expires, not only when
// its key is revoked; the gateway logs why. On long-polling too, where the
// client learns of the close only from the CLOSE packet answering its
// pending poll. The credential's life is counted from its authentication,
// not from the test's start: under load the gateway's start alone may
// outlast a short one.
func TestSocketIOConnectionEndsAtExpiry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		transports []string
	}{
		{"polling", []string{sioclient.TransportPolling}},
		{"polling first", sioclient.TransportsPollingFirst},
		{"websocket", sioclient.TransportsWebSocketOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testwait.Buffer
			auth := &expiringAuth{ttl: time.Second}
			g := startGateway(t, gateway.Config{Auth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			ctx := ctxT(t)
			c, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, NoReconnect: true, Transports: tc.transports, Logger: testLogger})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.JoinOffice(ctx, smcp.RoleAgent, "alice", "o"); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, "the connection ended at its expiry", func() bool {
				select {
				case <-c.Done():
					return true
				default:
					return false
				}
			})
			if time.Now().Before(time.Unix(0, auth.expires.Load())) {
				t.Fatal("the connection ended before its credential expired")
			}
			testwait.Until(t, "the reason logged", func() bool {
				return strings.Contains(logs.String(), "its credential ended") && strings.Contains(logs.String(), "the token has expired")
			})
		})
	}
}
