package blobs

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// wireOf is an answer as the computer sends it: a proto message through
// smcp.ToWire, anything else through encoding/json (sioclient's encode).
func wireOf(t *testing.T, v any) string {
	t.Helper()
	var b []byte
	var err error
	if m, ok := v.(proto.Message); ok {
		b, err = smcp.ToWire(m)
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// client:get_blob's answer, byte for byte: fields in the order of
// PROTOCOL-0.4.md §5.7, sizes and offsets as JSON numbers, empty fields
// present.
func TestGetBlobWire(t *testing.T) {
	s := newService(t, Options{})
	s.opts.Skills = func(name, rel string) (*Content, *smcp.Error) {
		return &Content{MIME: "image/png", Size: 3, SHA256: "ab", R: strings.NewReader("abc")}, nil
	}
	h := s.MintSkill("my-skill", "a.png")
	ret, err := s.GetBlob(h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := wireOf(t, ret)
	hj, _ := json.Marshal(h)
	want := `{"blob_handle":` + string(hj) + `,"mime_type":"image/png","total_size":3,"sha256":"ab","chunk_offset":0,"eof":true,"blob":"YWJj","req_id":""}`
	if got != want {
		t.Fatalf("wire\n got %s\nwant %s", got, want)
	}
	ret, err = s.GetBlob(h, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"blob_handle":` + string(hj) + `,"mime_type":"image/png","total_size":3,"sha256":"ab","chunk_offset":3,"eof":true,"blob":"","req_id":""}`
	if got := wireOf(t, ret); got != want {
		t.Fatalf("wire at the end\n got %s\nwant %s", got, want)
	}
}
