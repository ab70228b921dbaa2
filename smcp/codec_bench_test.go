package smcp

import (
	"encoding/json"
	"fmt"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func benchMessages(b *testing.B) map[string]proto.Message {
	params, err := structpb.NewStruct(map[string]any{"a": 40, "b": 2, "path": "/data/reports/2026.xlsx", "flags": []any{"x", "y"}})
	if err != nil {
		b.Fatal(err)
	}
	finder := &smcpv1.GetFinderRet{TotalCount: 240, ReqId: "req-6"}
	for i := range 20 {
		finder.Documents = append(finder.Documents, &smcpv1.DPEDocumentSummary{
			DocRef: fmt.Sprintf("rpt-%02d", i), Uri: fmt.Sprintf("dpe://com.example.docs/rpt-%02d", i),
			FileUri: fmt.Sprintf("file:///data/reports/rpt-%02d.xlsx", i), FileType: "xlsx",
			Title: fmt.Sprintf("Quarterly report %d", i), PageCount: int32(i + 1), Keywords: []string{"finance", "q1"},
			Summary: new("Revenue and operations"), Server: "docs", LastModified: new("2026-01-15T08:30:00Z"),
		})
	}
	return map[string]proto.Message{
		"ToolCallReq": &smcpv1.ToolCallReq{Agent: "agent-1", ReqId: "req-7", Computer: "computer-1", ToolName: "add", Params: params, Timeout: 30},
		"CallToolResult": &smcpv1.CallToolResult{
			Content: []*structpb.Struct{{Fields: map[string]*structpb.Value{
				"type": structpb.NewStringValue("text"), "text": structpb.NewStringValue("The sum is 42."),
			}}},
			IsError: new(false),
			Meta:    &structpb.Struct{Fields: map[string]*structpb.Value{"trace_id": structpb.NewStringValue("t-1")}},
		},
		"GetFinderRet20": finder,
	}
}

func BenchmarkCodec(b *testing.B) {
	for _, name := range []string{"ToolCallReq", "CallToolResult", "GetFinderRet20"} {
		m := benchMessages(b)[name]
		wire, err := Marshal(m)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("Marshal/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				if _, err := Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Unmarshal/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(wire)))
			for b.Loop() {
				out := m.ProtoReflect().New().Interface()
				if err := Unmarshal(wire, out); err != nil {
					b.Fatal(err)
				}
			}
		})
		var v any
		if err := json.Unmarshal(wire, &v); err != nil {
			b.Fatal(err)
		}
		b.Run("FromWire/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out := m.ProtoReflect().New().Interface()
				if err := FromWire(v, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
