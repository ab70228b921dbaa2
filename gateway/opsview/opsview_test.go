package opsview_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/opsview"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

func records(n int, office string, at time.Time) []audit.Record {
	out := make([]audit.Record, n)
	for i := range out {
		out[i] = audit.Record{Time: at.Add(time.Duration(i) * time.Millisecond), Event: "client:tool_call", Office: office,
			Principal: fmt.Sprintf("p%d", i%2), Outcome: audit.OutcomeOK, RequestID: fmt.Sprintf("%s-%d", office, i),
			Duration: 1500 * time.Microsecond}
	}
	return out
}

func ids(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.RequestID)
	}
	return out
}

// A node keeps its last Size records, read newest first and filtered.
func TestRecentKeepsTheLast(t *testing.T) {
	r := opsview.NewRecent(opsview.RecentOptions{Size: 3, Node: "a"})
	defer func() { _ = r.Close(context.Background()) }()
	now := time.Now()
	if err := r.Write(context.Background(), records(5, "o", now)); err != nil {
		t.Fatal(err)
	}
	got, nodes, partial := r.Read(context.Background(), opsview.Filter{})
	if want := []string{"o-4", "o-3", "o-2"}; !slices.Equal(ids(got), want) || !slices.Equal(nodes, []string{"a"}) || partial != nil {
		t.Fatalf("read %v of %v (%v), want %v", ids(got), nodes, partial, want)
	}
	got, _, _ = r.Read(context.Background(), opsview.Filter{Principal: "p0", Limit: 1})
	if want := []string{"o-4"}; !slices.Equal(ids(got), want) {
		t.Fatalf("p0, one: %v, want %v", ids(got), want)
	}
}

// In a cluster each node reads the others' records from Redis (their
// duration too), merged with its own by time; a node whose Redis fails
// still writes (the audit's other sinks are not held, a required audit
// refuses nothing) and reads its own, saying what it missed.
func TestRecentAcrossNodes(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	defer func() { _ = rdb.Close() }()
	a := opsview.NewRecent(opsview.RecentOptions{Size: 10, Node: "a", Redis: rdb})
	b := opsview.NewRecent(opsview.RecentOptions{Size: 10, Node: "b", Redis: rdb})
	defer func() { _ = a.Close(context.Background()) }()
	defer func() { _ = b.Close(context.Background()) }()
	now := time.Now()
	_ = a.Write(context.Background(), records(2, "x", now))
	_ = b.Write(context.Background(), records(2, "y", now.Add(time.Microsecond)))
	var got []audit.Record
	testwait.Until(t, "b's records read by a", func() bool {
		var partial error
		got, _, partial = a.Read(context.Background(), opsview.Filter{})
		if partial != nil {
			t.Fatal(partial)
		}
		return len(got) == 4
	})
	if want := []string{"y-1", "x-1", "y-0", "x-0"}; !slices.Equal(ids(got), want) {
		t.Fatalf("merged %v, want %v", ids(got), want)
	}
	if got[0].Duration != 1500*time.Microsecond {
		t.Fatalf("duration across Redis: %v", got[0].Duration)
	}

	m.Close() // Redis gone
	if err := a.Write(context.Background(), records(1, "z", now.Add(time.Second))); err != nil {
		t.Fatalf("write with Redis down: %v", err)
	}
	got, nodes, partial := a.Read(context.Background(), opsview.Filter{Office: "z"})
	if partial == nil || !slices.Equal(ids(got), []string{"z-0"}) || !slices.Equal(nodes, []string{"a"}) {
		t.Fatalf("Redis down: read %v of %v, partial %v", ids(got), nodes, partial)
	}
}

// Each node's report is read by the others until it stops (then at once
// not any more) or goes quiet for three periods.
func TestBoard(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	defer func() { _ = rdb.Close() }()
	boardAcrossNodes(t, rdb)
}

// TestBoardRedisCluster is TestBoard on a Redis Cluster of three
// primaries: a report and the index of the nodes are written in one MULTI,
// the reports read with one MGET, all in one slot (before: CROSSSLOT).
func TestBoardRedisCluster(t *testing.T) {
	boardAcrossNodes(t, clusterClient(t))
}

// TestRecentRedisCluster: on a Redis Cluster of three primaries each node
// reads the other's records.
func TestRecentRedisCluster(t *testing.T) {
	rdb := clusterClient(t)
	a := opsview.NewRecent(opsview.RecentOptions{Size: 10, Node: "a", Redis: rdb})
	b := opsview.NewRecent(opsview.RecentOptions{Size: 10, Node: "b", Redis: rdb})
	defer func() { _ = a.Close(context.Background()) }()
	defer func() { _ = b.Close(context.Background()) }()
	now := time.Now()
	_ = a.Write(context.Background(), records(1, "x", now))
	_ = b.Write(context.Background(), records(1, "y", now.Add(time.Microsecond)))
	testwait.Until(t, "b's records read by a", func() bool {
		got, _, partial := a.Read(context.Background(), opsview.Filter{})
		if partial != nil {
			t.Fatal(partial)
		}
		return slices.Equal(ids(got), []string{"y-0", "x-0"})
	})
}

func clusterClient(t *testing.T) goredis.UniversalClient {
	t.Helper()
	rdb, err := cluster.NewClient(systest.RedisCluster(t), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func boardAcrossNodes(t *testing.T, rdb goredis.UniversalClient) {
	board := func(node string, calls float64) *opsview.Board {
		return opsview.NewBoard(opsview.BoardOptions{Node: node, Redis: rdb, Every: 50 * time.Millisecond, Collect: func() opsview.Report {
			return opsview.Report{Figures: map[string]float64{"calls_total": calls},
				Connections: []core.Connection{{Kind: core.ConnComputer, Name: "pc-" + node, Node: node}}}
		}})
	}
	a, b := board("a", 1), board("b", 2)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	nodes := func() []string {
		reports, err := a.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range reports {
			out = append(out, fmt.Sprintf("%s:%v:%s", r.Node, r.Figures["calls_total"], r.Connections[0].Name))
		}
		return out
	}
	testwait.Until(t, "b's report read by a", func() bool { return slices.Equal(nodes(), []string{"a:1:pc-a", "b:2:pc-b"}) })
	stop()
	<-done
	if got := nodes(); !slices.Equal(got, []string{"a:1:pc-a"}) {
		t.Fatalf("after b stopped: %v", got)
	}
}
