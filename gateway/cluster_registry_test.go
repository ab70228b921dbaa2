package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// muteProxy stands between the gateway and Redis; muted, it still forwards
// the commands but drops the replies: a Redis that stopped answering.
type muteProxy struct {
	ln    net.Listener
	muted atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newMuteProxy(t *testing.T, upstream string) *muteProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &muteProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer p.wg.Done(); p.replies(c, up); _ = c.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// replies copies up's replies to c unless muted.
func (p *muteProxy) replies(c, up net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 && !p.muted.Load() {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestClusterRegistryUnansweredFailsFast: when Redis stops answering, a
// stateless call's lease claim fails with "cluster registry unavailable"
// once the registry's own ClaimTimeout (set in gateway.Config) has passed,
// not after go-redis's ReadTimeout (3 s) nor the caller's deadline: the
// core passes the caller's context and the gateway's Redis client lets
// the registry's deadline reach the socket.
func TestClusterRegistryUnansweredFailsFast(t *testing.T) {
	const claimTimeout = 500 * time.Millisecond
	mr := miniredis.RunT(t)
	proxy := newMuteProxy(t, mr.Addr())
	node := startGateway(t, gateway.Config{Redis: "redis://" + proxy.ln.Addr().String(), NodeID: "n0",
		// Below the claim bound, as the flags require: the first node of a
		// cluster settles the registry for a TTL (joins wait meanwhile).
		HeartbeatTTL: 400 * time.Millisecond, Logger: testLogger,
		RedisRegistry: cluster.RegistryOptions{Timeout: 300 * time.Millisecond, ClaimTimeout: claimTimeout}})
	// Runs before the gateway stops: it shuts down against a Redis that answers.
	t.Cleanup(func() { proxy.muted.Store(false) })
	api := smcpv1connect.NewAgentServiceClient(http.DefaultClient, node.URL,
		connecttest.Headers(rpc.AgentHeader, "alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := &smcpv1.CallToolRequest{OfficeId: "o", Computer: "pc", ToolName: "echo", Timeout: 30, ReqId: "r-1"}
	// Answered: no such computer, after a claim and a release (once the
	// new registry has settled).
	testwait.Until(t, "registry settled", func() bool {
		_, err := api.CallTool(ctx, req)
		return err != nil && strings.Contains(err.Error(), "computer not found")
	})
	proxy.muted.Store(true)
	start := time.Now()
	_, err := api.CallTool(ctx, req)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "cluster registry unavailable") {
		t.Fatalf("muted Redis: want cluster registry unavailable, got %v", err)
	}
	if took < claimTimeout || took > 2500*time.Millisecond {
		t.Fatalf("muted Redis: failed after %v, want its ClaimTimeout %v and well before go-redis's 3 s", took, claimTimeout)
	}
	t.Logf("muted Redis: failed after %v: %v", took, err)
}
