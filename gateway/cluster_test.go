package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// clusterTTL is the nodes' heartbeat TTL in tests: short, so that a claim
// refused by a live holder on another node is answered in 300 ms.
const clusterTTL = 600 * time.Millisecond

// startCluster starts n gateway nodes sharing one Redis.
func startCluster(t *testing.T, redisURL string, n int) []*gateway.Running {
	t.Helper()
	nodes := make([]*gateway.Running, n)
	for i := range nodes {
		nodes[i] = startGateway(t, gateway.Config{Redis: redisURL, NodeID: fmt.Sprintf("n%d", i), HeartbeatTTL: clusterTTL, Logger: testLogger})
	}
	return nodes
}

func miniRedis(t *testing.T) string {
	t.Helper()
	m := miniredis.RunT(t)
	return "redis://" + m.Addr()
}

func TestClusterCrossNodeCalls(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 3)
	pcB := dialComputer(t, nodes[1].URL, "pcB", "o")
	pcC := dialComputer(t, nodes[2].URL, "pcC", "o")
	a := dialAgent(t, nodes[0].URL, "alice", "o")
	ctx := ctxT(t)

	for _, pc := range []string{"pcB", "pcC"} {
		res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: pc, ToolName: "echo", ReqId: "r-" + pc, Timeout: 30})
		if err != nil {
			t.Fatal(err, pcB.receivedEvents(), pcC.receivedEvents())
		}
		if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != pc+":r-"+pc {
			t.Fatalf("%s answered %q", pc, got)
		}
		fin, err := a.GetFinder(ctx, &smcpv1.GetFinderReq{Computer: pc, ReqId: "f-" + pc})
		if err != nil {
			t.Fatal(err)
		}
		if fin.GetTotalCount() != 1 || fin.GetDocuments()[0].GetUri() != "dpe://h/d1" || fin.GetReqId() != "f-"+pc {
			t.Fatalf("get_finder from %s: %v", pc, fin)
		}
	}
	// A tool error crosses nodes as the computer's flat error.
	_, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pcB", ToolName: "missing", ReqId: "m", Timeout: 30})
	wantCode(t, err, 404)
	// Unknown computers are refused as on one node.
	_, err = a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "nobody", ToolName: "echo", ReqId: "n", Timeout: 30})
	wantCode(t, err, smcp.CodeNotFound)

	// Concurrent calls stay paired across nodes.
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			pc := []string{"pcB", "pcC"}[i%2]
			id := fmt.Sprintf("c-%03d", i)
			res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: pc, ToolName: "echo", ReqId: id, Timeout: 30})
			if err != nil {
				t.Error(err)
				return
			}
			if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != pc+":"+id {
				t.Errorf("%s answered %q", id, got)
			}
		})
	}
	wg.Wait()
	if n := len(pcC.receivedEvents()) + len(pcB.receivedEvents()); n != 2*2+1+100 {
		t.Fatalf("computers received %d requests", n)
	}
}

// TestClusterSocketIOBytesBothWays is TestSocketIOBytesBothWays with the
// agent on one node and the computer on another: the request crosses the
// nodes' bus as the bytes the agent sent, and the answer as the bytes the
// computer sent (PROTOCOL.md: the payload is forwarded unchanged).
func TestClusterSocketIOBytesBothWays(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 2)
	socketIOBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOfficeOn(t, nodes[0], nodes[1], answer)
	})
}

// TestClusterSocketIOBytesBothWaysRedisServer is
// TestClusterSocketIOBytesBothWays over a real redis-server.
func TestClusterSocketIOBytesBothWaysRedisServer(t *testing.T) {
	nodes := startCluster(t, systest.RedisServer(t), 2)
	socketIOBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOfficeOn(t, nodes[0], nodes[1], answer)
	})
}

// TestClusterConnectBytesBothWaysRedisServer is
// TestClusterConnectBytesBothWays over a real redis-server.
func TestClusterConnectBytesBothWaysRedisServer(t *testing.T) {
	nodes := startCluster(t, systest.RedisServer(t), 2)
	connectBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOfficeOn(t, nodes[0], nodes[1], answer)
	})
}

// TestClusterConnectBytesBothWays is TestConnectBytesBothWays with the
// Connect and gRPC callers on one node and the computer on another.
func TestClusterConnectBytesBothWays(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 2)
	connectBytesBothWays(t, func(answer func(event string, payload []byte) string) *relayOffice {
		return newRelayOfficeOn(t, nodes[0], nodes[1], answer)
	})
}

func TestClusterListRoomAndNotifications(t *testing.T) {
	nodes := startCluster(t, miniRedis(t), 3)
	// A WatchOffice stream on node 0 of an office whose members are all
	// elsewhere, acting as the office's agent (who joins on node 2).
	api := smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[0].URL,
		connecttest.Headers(rpc.AgentHeader, "alice"))
	stream, err := api.WatchOffice(ctxT(t), &smcpv1.WatchOfficeRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	// The stream's headers arrive once the watcher is registered.
	if _, err := stream.Conn(); err != nil {
		t.Fatal(err)
	}
	next := func() string {
		t.Helper()
		if !stream.Receive() {
			t.Fatalf("watch stream ended: %v", stream.Err())
		}
		m := stream.Msg()
		b, _ := protojson.Marshal(m)
		return m.GetEvent() + " " + string(b)
	}
	pcB := dialComputer(t, nodes[1].URL, "pcB", "o")
	a := dialAgent(t, nodes[2].URL, "alice", "o")
	dialComputer(t, nodes[0].URL, "pcA", "o")

	want := []string{"agent alice", "computer pcA", "computer pcB"}
	rows, err := a.ListRoom(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.GetRole()+" "+r.GetName())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("list_room = %v, want %v", got, want)
	}

	// The stream on node 0 carries the joins made on nodes 1 and 2. Joins
	// made on different nodes reach it in no set order (each node publishes
	// its own), so the three are compared as a set.
	seen := []string{next(), next(), next()}
	if !containsEach(seen, `"computer":"pcB"`, `"agent":"alice"`, `"computer":"pcA"`) {
		t.Fatalf("watcher saw %v", seen)
	}
	// pcB on node 1 is told of the agent (node 2) and pcA (node 0).
	testwait.Until(t, "pcB notified", func() bool { return len(pcB.notifications()) == 2 })
	if got := pcB.notifications(); !containsEach(got, "alice", "pcA") {
		t.Fatalf("pcB notified %v", got)
	}
	// A computer leaving on node 1 reaches the agent's room view and the watcher.
	pcB.c.Close()
	if n := next(); !strings.HasPrefix(n, smcp.NotifyLeaveOffice+" ") || !strings.Contains(n, "pcB") {
		t.Fatalf("watcher saw %s", n)
	}
	testwait.Until(t, "pcB gone from list_room", func() bool {
		rows, err := a.ListRoom(ctxT(t))
		return err == nil && len(rows) == 2
	})
}

func TestClusterAgentExclusivityRace(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, miniRedis(t), 3)
	for round := range 10 {
		office := fmt.Sprintf("race-%d", round)
		var wins sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i, g := range nodes {
			c, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: g.URL, Logger: testLogger})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			wins.Go(func() {
				err := c.JoinOffice(context.Background(), smcp.RoleAgent, fmt.Sprintf("agent-%d", i), office)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won++
				} else if !strings.Contains(err.Error(), "already has an agent") {
					t.Errorf("join refused with %v", err)
				}
			})
		}
		wins.Wait()
		if won != 1 {
			t.Fatalf("round %d: %d agents won the office", round, won)
		}
	}
}

// containsEach reports whether each of subs is found in a different
// element of got (len(got) == len(subs)), in any order.
func containsEach(got []string, subs ...string) bool {
	if len(got) != len(subs) {
		return false
	}
	used := make([]bool, len(got))
	for _, sub := range subs {
		found := false
		for i, g := range got {
			if !used[i] && strings.Contains(g, sub) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// TestClusterCrossNodeCallsSentinel: --redis as a Sentinel URL (go-redis's
// failover form) makes the nodes one cluster on the primary the sentinels
// name.
func TestClusterCrossNodeCallsSentinel(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, systest.RedisSentinel(t).URL, 2)
	dialComputer(t, nodes[1].URL, "pcB", "o")
	a := dialAgent(t, nodes[0].URL, "alice", "o")
	res, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pcB", ToolName: "echo", ReqId: "r1", Timeout: 30})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != "pcB:r1" {
		t.Fatalf("pcB answered %q", got)
	}
}

// TestClusterCrossNodeCallsRedisCluster: --redis as a Redis Cluster's
// seeds with --redis-cluster makes the nodes one cluster on its three
// primaries: an agent's calls reach computers of two other nodes and come
// back, and the office lists every member whatever node asks.
func TestClusterCrossNodeCallsRedisCluster(t *testing.T) {
	seeds := systest.RedisCluster(t)
	nodes := make([]*gateway.Running, 3)
	for i := range nodes {
		nodes[i] = startGateway(t, gateway.Config{Redis: seeds, RedisCluster: true, NodeID: fmt.Sprintf("n%d", i),
			HeartbeatTTL: clusterTTL, Logger: testLogger})
	}
	dialComputer(t, nodes[1].URL, "pcB", "o")
	dialComputer(t, nodes[2].URL, "pcC", "o")
	a := dialAgent(t, nodes[0].URL, "alice", "o")
	for _, pc := range []string{"pcB", "pcC"} {
		res, err := a.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: pc, ToolName: "echo", ReqId: "r-" + pc, Timeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.GetContent()[0].GetFields()["text"].GetStringValue(); got != pc+":r-"+pc {
			t.Fatalf("%s answered %q", pc, got)
		}
	}
}

// TestClusterRefusesRedisClusterWithoutFlag: a Redis Cluster reached
// without --redis-cluster (a plain client would follow none of its
// redirections) is refused at start, naming the flag: a lone cluster node,
// a seed of a three-primary cluster, and the cluster URL form (several
// addr= without master_name=).
func TestClusterRefusesRedisClusterWithoutFlag(t *testing.T) {
	seeds := systest.RedisCluster(t)
	seed, _, _ := strings.Cut(seeds, "?")
	for _, url := range []string{systest.RedisClusterNode(t), seed, seeds} {
		_, err := gateway.New(gateway.Config{Auth: core.AllowAll{}, Redis: url})
		if err == nil || !strings.Contains(err.Error(), "--redis-cluster") {
			t.Errorf("gateway on %s: %v, want refused naming --redis-cluster", url, err)
		}
	}
}
