package rpc_test

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// BenchmarkCallTool measures one CallTool round trip per protocol: client →
// gateway → Socket.IO computer → gateway → client, on loopback.
//
//	go test -run '^$' -bench CallTool -benchmem ./gateway/rpc/
func BenchmarkCallTool(b *testing.B) {
	g := startGateway(b)
	startComputer(b, g, "pc-bench", officeA)
	params, _ := structpb.NewStruct(map[string]any{"text": "hello"})
	req := &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-bench", ToolName: "echo", Params: params}
	for _, p := range protocols {
		b.Run(p.name, func(b *testing.B) {
			cl := newClient(b, g, p, "x-api-key", keyAgent)
			ctx := b.Context()
			// Client, gateway and computer share the process: allocations
			// per call are all three's (BenchmarkHandlerCallTool has the
			// gateway's alone).
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cl.CallTool(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
