package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestOperatorViewsAcrossNodes: whichever node the console's call reaches,
// the operator views show the whole cluster: the audit records each node
// wrote (merged newest first, filterable), the connections of every node,
// and figures summed over the nodes (each node's given too).
func TestOperatorViewsAcrossNodes(t *testing.T) { operatorViewsAcrossNodes(t, miniRedis(t)) }

// TestOperatorViewsAcrossNodesRedisServer is TestOperatorViewsAcrossNodes
// on a real redis-server.
func TestOperatorViewsAcrossNodesRedisServer(t *testing.T) {
	operatorViewsAcrossNodes(t, systest.RedisServer(t))
}

func operatorViewsAcrossNodes(t *testing.T, redisURL string) {
	nodes := make([]*gateway.Running, 2)
	for i := range nodes {
		nodes[i] = startGateway(t, gateway.Config{Redis: redisURL, NodeID: fmt.Sprintf("n%d", i), HeartbeatTTL: clusterTTL,
			Metrics: true, Audit: gateway.AuditConfig{Sinks: []audit.Sink{audit.NewJSONLines(io.Discard)}}, Logger: testLogger})
	}
	// Office o: agent on n0, computer on n1; office p the other way round.
	dialComputer(t, nodes[1].URL, "pcB", "o")
	dialComputer(t, nodes[0].URL, "pcA", "p")
	alice := dialAgent(t, nodes[0].URL, "alice", "o")
	bob := dialAgent(t, nodes[1].URL, "bob", "p")
	// Reports are posted every 2 s: a few periods, not ctxT's 5 s.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := alice.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pcB", ToolName: "echo", ReqId: "a1", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pcA", ToolName: "missing", ReqId: "b1", Timeout: 30}); err == nil {
		t.Fatal("bob's call of a missing tool answered")
	}
	views := func(i int) smcpv1connect.AgentServiceClient {
		return smcpv1connect.NewAgentServiceClient(http.DefaultClient, nodes[i].URL)
	}

	// The records of both nodes, read on n0: alice's call there, bob's
	// on n1 (its own outcome, the computer's 404).
	var recs *smcpv1.ListAuditResponse
	testwait.Until(t, "n1's records read on n0", func() bool {
		res, err := views(0).ListAudit(ctx, &smcpv1.ListAuditRequest{})
		if err != nil {
			t.Fatal(err)
		}
		recs = res
		return slices.ContainsFunc(recs.Records, func(r *smcpv1.AuditRecord) bool { return r.Node == "n1" && r.Event == "client:tool_call" })
	})
	if !recs.Enabled || !slices.Equal(recs.Nodes, []string{"n0", "n1"}) || recs.Partial != "" {
		t.Fatalf("records read: enabled %t, nodes %v, partial %q", recs.Enabled, recs.Nodes, recs.Partial)
	}
	if !slices.IsSortedFunc(recs.Records, func(a, b *smcpv1.AuditRecord) int { return strings.Compare(b.Time, a.Time) }) {
		t.Fatalf("records not newest first: %v", recs.Records)
	}
	filtered, err := views(0).ListAudit(ctx, &smcpv1.ListAuditRequest{Office: "p", Principal: "insecure", Outcome: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range filtered.Records {
		got = append(got, r.Node+" "+r.Event+" "+r.Agent+"/"+r.Computer)
	}
	if want := []string{"n1 client:tool_call bob/pcA", "n1 join bob/", "n0 join /pcA"}; !slices.Equal(got, want) {
		t.Fatalf("office p: %v, want %v", got, want)
	}

	// n1's connections, read on n0 (as n1 last posted them).
	testwait.Until(t, "n1's connections read on n0", func() bool {
		res, err := views(0).ListConnections(ctx, &smcpv1.ListConnectionsRequest{Office: "o"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range res.Connections {
			got = append(got, c.Kind+" "+c.Name+" "+c.Node)
		}
		return slices.Equal(got, []string{"agent alice n0", "computer pcB n1"})
	})

	// The figures: n1 answers for both nodes, each node's counted once
	// (n0's figures as it last posted them: wait for the post after its call).
	var res *smcpv1.GetFiguresResponse
	var sum float64
	var seen []string
	testwait.Until(t, "both nodes' calls in n1's figures", func() bool {
		var err error
		if res, err = views(1).GetFigures(ctx, &smcpv1.GetFiguresRequest{}); err != nil {
			t.Fatal(err)
		}
		sum, seen = 0, nil
		for _, n := range res.Nodes {
			seen = append(seen, n.Node)
			sum += n.Figures["calls_total"]
		}
		return sum >= 2
	})
	if !slices.Equal(seen, []string{"n0", "n1"}) || res.Figures["calls_total"] != sum {
		t.Fatalf("figures: nodes %v, calls_total %v, nodes' sum %v", seen, res.Figures["calls_total"], sum)
	}
}
