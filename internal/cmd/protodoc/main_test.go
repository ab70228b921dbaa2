package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// A small file with a service, a message and an enum: the comments land
// under their headings, types link to their sections, comment text stays
// literal Markdown, and an image without comments is refused.
func TestRender(t *testing.T) {
	// Source info paths: 4 = message_type, 2 = field, 5 = enum_type,
	// 2 = value, 6 = service, 2 = method.
	loc := func(comment string, path ...int32) *descriptorpb.SourceCodeInfo_Location {
		return &descriptorpb.SourceCodeInfo_Location{Path: path, Span: []int32{0, 0, 1}, LeadingComments: proto.String(comment)}
	}
	file := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("smcp/v9/x.proto"),
		Package: proto.String("smcp.v9"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("PingRequest"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("office_id"), Number: proto.Int32(1), JsonName: proto.String("office_id"),
				Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(), Label: descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum(),
			}, {
				Name: proto.String("mood"), Number: proto.Int32(2), JsonName: proto.String("mood"),
				Type: descriptorpb.FieldDescriptorProto_TYPE_ENUM.Enum(), TypeName: proto.String(".smcp.v9.Mood"),
				Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			}},
		}},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name:  proto.String("Mood"),
			Value: []*descriptorpb.EnumValueDescriptorProto{{Name: proto.String("MOOD_UNSPECIFIED"), Number: proto.Int32(0)}},
		}},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("PingService"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name: proto.String("Ping"), InputType: proto.String(".smcp.v9.PingRequest"), OutputType: proto.String(".smcp.v9.PingRequest"),
				ServerStreaming: proto.Bool(true),
			}},
		}},
		SourceCodeInfo: &descriptorpb.SourceCodeInfo{Location: []*descriptorpb.SourceCodeInfo_Location{
			loc(" PingRequest asks for\n a pong.\n\n Second paragraph.\n", 4, 0),
			loc(" Offices, \"<id>\" each | one per line.\n", 4, 0, 2, 0),
			loc(" Mood is a mood.\n", 5, 0),
			loc(" Nothing yet.\n", 5, 0, 2, 0),
			loc(" PingService pings.\n", 6, 0),
			loc(" Ping streams *pongs*.\n", 6, 0, 2, 0),
		}},
	}
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{file}}
	raw, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(bytes.NewReader(raw), &out); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"### smcp.v9.PingService\n\nPingService pings.\n",
		"#### Ping\n\n`POST /smcp.v9.PingService/Ping`: [PingRequest](#pingrequest) → stream [PingRequest](#pingrequest)\n\nPing streams \\*pongs\\*.\n",
		"### PingRequest\n\nPingRequest asks for a pong.\n\nSecond paragraph.\n",
		"| office_id = 1 | `office_id` | repeated string | Offices, \"&lt;id&gt;\" each \\| one per line. |\n",
		"| mood = 2 | `mood` | [Mood](#mood) |  |\n",
		"### Mood\n\nMood is a mood.\n",
		"| MOOD_UNSPECIFIED | 0 | Nothing yet. |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q:\n%s", want, md)
		}
	}

	file.SourceCodeInfo = nil
	raw, err = proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(bytes.NewReader(raw), &out); err == nil || !strings.Contains(err.Error(), "no source info") {
		t.Errorf("an image without comments: %v", err)
	}
}
