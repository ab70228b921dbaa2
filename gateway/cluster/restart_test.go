package cluster_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smcpgw/smcp-gateway/gateway/cluster"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestCallsAfterRedisRestarts: redis-server restarts under two nodes; the
// inbox's PubSub subscribes again, and cross-node calls are answered again
// within 10 s.
func TestCallsAfterRedisRestarts(t *testing.T) {
	rd := systest.RedisProcess(t)
	opts, err := redis.ParseURL(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	nodes := startNodes(t, rdb, 2, core.Config{}, time.Second, false)
	joinAs(t, nodes[1], "pc-sid", smcp.RoleComputer, "pc", &computerConn{answer: echoBack})
	pc := core.Member{Node: "n1", SID: "pc-sid"}
	if got := call(t, nodes[0].calls, pc, `"before"`); got != `"before"` {
		t.Fatalf("answer %s", got)
	}
	rd.Stop()
	rd.Start(t)
	i := 0
	testwait.Within(t, 10*time.Second, "a cross-node call answered after the restart", func() bool {
		i++
		want := fmt.Sprintf(`"after-%d"`, i)
		done := make(chan json.RawMessage, 1)
		nodes[0].calls.Request(pc, smcp.EventToolCall, json.RawMessage(want), time.Second, func(raw json.RawMessage, err error) {
			if err != nil {
				raw = nil
			}
			done <- raw
		})
		select {
		case raw := <-done:
			return string(raw) == want
		case <-time.After(2 * time.Second):
			return false
		}
	})
}

// call makes one call through calls to computer to and returns its answer.
func call(t *testing.T, calls *cluster.Calls, to core.Member, payload string) string {
	t.Helper()
	done := make(chan string, 1)
	calls.Request(to, smcp.EventToolCall, json.RawMessage(payload), 10*time.Second, func(raw json.RawMessage, err error) {
		if err != nil {
			t.Errorf("call: %v", err)
		}
		done <- string(raw)
	})
	select {
	case got := <-done:
		return got
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}
