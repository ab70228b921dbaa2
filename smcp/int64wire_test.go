package smcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Blob offsets and sizes are JSON numbers on the wire, as the SDKs type
// them, and come back intact.
func TestBlobIntegersAreNumbers(t *testing.T) {
	for _, m := range []proto.Message{
		&smcpv1.GetBlobReq{Agent: "a", ReqId: "r", Computer: "pc", BlobHandle: "h", ChunkOffset: proto.Int64(262144), MaxChunkBytes: proto.Int64(262144)},
		&smcpv1.GetBlobRet{BlobHandle: "h", TotalSize: 1 << 40, ChunkOffset: 262144, Sha256: "00", Blob: "QQ=="},
		&smcpv1.PutBlobReq{Computer: "pc", ChunkOffset: 524288, TotalSize: proto.Int64(600000), Sha256: proto.String("00"), Blob: "QQ=="},
		&smcpv1.PutBlobRet{UploadId: "u", ChunkOffset: 524288, TotalSize: proto.Int64(600000), LandingPath: proto.String("/l/x")},
		&smcpv1.GetSkillRet{Name: "s", RelPath: "SKILL.md", TotalSize: 12, Body: proto.String("<a> & b")},
	} {
		b, err := smcp.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"chunk_offset", "max_chunk_bytes", "total_size"} {
			if v, ok := obj[k]; ok {
				if _, isNum := v.(float64); !isNum {
					t.Errorf("%T: %s is %T in %s", m, k, v, b)
				}
			}
		}
		back := m.ProtoReflect().New().Interface()
		if err := smcp.Unmarshal(b, back); err != nil || !proto.Equal(back, m) {
			t.Errorf("%T: round trip %v: %v", m, back, err)
		}
	}
	b, _ := smcp.Marshal(&smcpv1.GetSkillRet{Body: proto.String("<a> & b")})
	if !containsRaw(b, `"body":"<a> & b"`) {
		t.Errorf("body escaped: %s", b)
	}
}

func containsRaw(b []byte, s string) bool { return strings.Contains(string(b), s) }

// A chunk's blob is written and read as it is, in the message's field
// order; a blob that is not plain base64 (escapes, a quote, non-ASCII)
// still crosses intact through protojson, and a wire blob with escapes is
// unescaped.
func TestBlobFieldWire(t *testing.T) {
	for _, blob := range []string{"", "QUJD", `a"b\c` + "\n\u2028é", "<&>"} {
		for _, m := range []proto.Message{
			&smcpv1.GetBlobRet{BlobHandle: "h", MimeType: "image/png", TotalSize: 3, Sha256: "00", ChunkOffset: 0, Eof: true, Blob: blob, ReqId: "r"},
			&smcpv1.PutBlobReq{Agent: "a", ReqId: "r", Computer: "pc", UploadId: proto.String("u"), ChunkOffset: 3, Blob: blob},
		} {
			b, err := smcp.ToWire(m)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b) {
				t.Fatalf("%T: not JSON: %s", m, b)
			}
			back := m.ProtoReflect().New().Interface()
			if err := smcp.Unmarshal(b, back); err != nil || !proto.Equal(back, m) {
				t.Errorf("%T blob %q: %s came back as %v (%v)", m, blob, b, back, err)
			}
		}
	}
	b, _ := smcp.ToWire(&smcpv1.GetBlobRet{BlobHandle: "h", Blob: "QUJD", ReqId: "r"})
	if want := `{"blob_handle":"h","mime_type":"","total_size":0,"sha256":"","chunk_offset":0,"eof":false,"blob":"QUJD","req_id":"r"}`; string(b) != want {
		t.Errorf("wire form\n%s\nwant\n%s", b, want)
	}
	var ret smcpv1.GetBlobRet
	if err := smcp.Unmarshal([]byte(`{"blob":"Q\u0055JD", "chunk_offset": 5}`), &ret); err != nil || ret.GetBlob() != "QUJD" || ret.GetChunkOffset() != 5 {
		t.Errorf("escaped blob: %v %v", &ret, err)
	}
	if err := smcp.Unmarshal([]byte(`{"blob":"QUJD","blob":"QUJD"}`), &ret); err == nil {
		t.Error("a duplicate blob key was accepted")
	}
}
