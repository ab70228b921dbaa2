package gateway_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// BenchmarkToolCallRelay measures a tool call relayed agent -> gateway ->
// computer -> gateway -> agent over loopback Socket.IO (WebSocket), with
// calls in flight from GOMAXPROCS*4 goroutines of one agent. Allocations are
// those of the whole process (agent, gateway and computer).
func BenchmarkToolCallRelay(b *testing.B) {
	g := startGateway(b, gateway.Config{})
	dialComputer(b, g.URL, "pc", "o")
	a := dialAgent(b, g.URL, "alice", "o")
	params, _ := structpb.NewStruct(map[string]any{"text": "hello"})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := a.CallTool(ctx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Params: params, Timeout: 30})
			if err != nil || res.GetIsError() {
				b.Errorf("call: %v %v", res, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
