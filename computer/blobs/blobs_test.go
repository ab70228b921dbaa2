package blobs

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func newService(t *testing.T, opts Options) *Service {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok || e.Code != smcp.CodeBlobNotAccessible {
		t.Fatalf("error = %v, want a 4018", err)
	}
	r, _ := e.Details["reason"].(string)
	return r
}

func TestHandleRoundTripAndForgery(t *testing.T) {
	a, _ := NewSigner()
	b, _ := NewSigner()
	ref := Ref{Kind: KindSkill, Name: "mcp:srv:x", RelPath: "a/b.png"}
	h := a.Mint(ref)
	got, err := a.Open(h)
	if err != nil || got != ref {
		t.Fatalf("Open(Mint) = %+v, %v", got, err)
	}
	if _, err := b.Open(h); err == nil {
		t.Fatal("another computer's key opened the handle")
	}
	// Every single-character change is refused.
	for i := range h {
		for _, c := range []byte{'A', '_', '.', '0'} {
			if h[i] == c {
				continue
			}
			alt := h[:i] + string(c) + h[i+1:]
			if r, err := a.Open(alt); err == nil {
				t.Fatalf("altered handle %q opened as %+v", alt, r)
			}
		}
	}
	// A handle naming another file, signed with a guessed key, is refused.
	forged := (&Signer{}).Mint(Ref{Kind: KindSkill, Name: "x", RelPath: ".skillenv"})
	if _, err := a.Open(forged); err == nil {
		t.Fatal("forged handle accepted")
	}
}

// FuzzOpenHandle: no input panics the decoder, and only minted handles open.
func FuzzOpenHandle(f *testing.F) {
	s := &Signer{key: [32]byte{1, 2, 3}}
	f.Add(s.Mint(Ref{Kind: KindResult, ID: "0123456789abcdef0123456789abcdef"}))
	f.Add(s.Mint(Ref{Kind: KindSkill, Name: "a", RelPath: "SKILL.md"}))
	f.Add("a2cb1..")
	f.Add("a2cb1.AA.AA")
	f.Fuzz(func(t *testing.T, h string) {
		r, err := s.Open(h)
		if err != nil {
			return
		}
		if s.Mint(r) != h {
			t.Fatalf("Open accepted %q, which is not the handle of %+v", h, r)
		}
	})
}

func drain(t *testing.T, s *Service, handle string, chunk int64) ([]byte, *smcpv1.GetBlobRet) {
	t.Helper()
	var out bytes.Buffer
	var last *smcpv1.GetBlobRet
	for off := int64(0); ; {
		ret, err := s.GetBlob(handle, off, chunk)
		if err != nil {
			t.Fatalf("GetBlob at %d: %v", off, err)
		}
		if ret.GetChunkOffset() != off {
			t.Fatalf("chunk_offset = %d, want %d", ret.GetChunkOffset(), off)
		}
		b, err := base64.StdEncoding.DecodeString(ret.GetBlob())
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		off += int64(len(b))
		last = ret
		if ret.GetEof() != (off == ret.GetTotalSize()) {
			t.Fatalf("eof = %v at %d of %d", ret.GetEof(), off, ret.GetTotalSize())
		}
		if ret.GetEof() {
			return out.Bytes(), last
		}
		if len(b) == 0 {
			t.Fatal("empty chunk before eof")
		}
	}
}

func TestSidebandToolResultDrainedIntact(t *testing.T) {
	s := newService(t, Options{})
	big := make([]byte, 20<<20)
	rand.Read(big)
	small := []byte("tiny png")
	res := map[string]any{
		"content": []any{
			map[string]any{"type": "text", "text": "here"},
			map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(big)},
			map[string]any{"type": "image", "mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(small)},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///x.bin", "mimeType": "application/x-foo",
				"blob": base64.StdEncoding.EncodeToString(big[:40<<10])}, "_meta": map[string]any{"keep": 1}},
		},
		"isError": false,
	}
	out, err := s.Sideband(res)
	if err != nil {
		t.Fatal(err)
	}
	items := out["content"].([]any)
	img := items[1].(map[string]any)
	if img["data"] != "" || img["mimeType"] != "image/png" {
		t.Fatalf("large image kept inline: %.80v", img)
	}
	meta := img["_meta"].(map[string]any)
	sum := sha256.Sum256(big)
	if meta["a2c_total_size"] != len(big) || meta["a2c_sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("meta = %v", meta)
	}
	if items[2].(map[string]any)["data"] == "" {
		t.Fatal("a small image was moved out")
	}
	emb := items[3].(map[string]any)
	if emb["resource"].(map[string]any)["blob"] != "" || emb["_meta"].(map[string]any)["keep"] != 1 || emb["_meta"].(map[string]any)["a2c_blob_handle"] == nil {
		t.Fatalf("embedded resource = %.200v", emb)
	}

	got, last := drain(t, s, meta["a2c_blob_handle"].(string), 0)
	gs := sha256.Sum256(got)
	if !bytes.Equal(got, big) || last.GetSha256() != hex.EncodeToString(gs[:]) || last.GetMimeType() != "image/png" {
		t.Fatalf("drained %d bytes, sha %s; want %d bytes, sha %s", len(got), last.GetSha256(), len(big), meta["a2c_sha256"])
	}
	// Resumable and parallel: an absolute offset reads the same bytes.
	ret, err := s.GetBlob(meta["a2c_blob_handle"].(string), 5<<20+7, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := base64.StdEncoding.DecodeString(ret.GetBlob())
	if !bytes.Equal(b, big[5<<20+7:5<<20+1007]) {
		t.Fatal("chunk at an absolute offset differs")
	}
	// Chunks never exceed the cap, whatever the agent asks.
	ret, _ = s.GetBlob(meta["a2c_blob_handle"].(string), 0, 64<<20)
	if b, _ := base64.StdEncoding.DecodeString(ret.GetBlob()); len(b) != DefaultChunk {
		t.Fatalf("chunk of %d bytes, want the cap %d", len(b), DefaultChunk)
	}
}

func TestGetBlobRefusals(t *testing.T) {
	s := newService(t, Options{SpoolBytes: 3 << 20, InlineBudget: 1 << 10})
	put := func() string {
		res := map[string]any{"content": []any{map[string]any{"type": "audio", "mimeType": "audio/wav",
			"data": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("a"), 1<<20))}}}
		out, err := s.Sideband(res)
		if err != nil {
			t.Fatal(err)
		}
		return out["content"].([]any)[0].(map[string]any)["_meta"].(map[string]any)["a2c_blob_handle"].(string)
	}
	first := put()
	if _, err := s.GetBlob(first, 0, 0); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{-1, 1<<20 + 1} {
		if _, err := s.GetBlob(first, off, 0); reasonOf(t, err) != ReasonRange {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
	if ret, err := s.GetBlob(first, 1<<20, 0); err != nil || !ret.GetEof() || ret.GetBlob() != "" {
		t.Fatalf("offset == total_size = %+v, %v; want an empty eof chunk", ret, err)
	}
	for _, h := range []string{"", "nonsense", first + "x", strings.Replace(first, "a2cb1.", "a2cb2.", 1)} {
		if _, err := s.GetBlob(h, 0, 0); reasonOf(t, err) != ReasonInvalidHandle {
			t.Fatalf("handle %q: %v", h, err)
		}
	}
	// The spool holds 3 MiB: three more items evict the first.
	put()
	put()
	put()
	if n, b := s.Spool().Len(); n != 3 || b != 3<<20 {
		t.Fatalf("spool holds %d items, %d bytes", n, b)
	}
	if _, err := s.GetBlob(first, 0, 0); reasonOf(t, err) != ReasonGone {
		t.Fatalf("evicted item: %v", err)
	}
	// Skill handles: the opener's verdict now decides.
	verdict := (*smcp.Error)(nil)
	s.opts.Skills = func(name, rel string) (*Content, *smcp.Error) {
		if verdict != nil {
			return nil, verdict
		}
		return &Content{MIME: "image/png", Size: 3, SHA256: "x", R: strings.NewReader("abc")}, nil
	}
	h := s.MintSkill("my-skill", "a.png")
	if ret, err := s.GetBlob(h, 0, 0); err != nil || ret.GetBlob() != base64.StdEncoding.EncodeToString([]byte("abc")) || !ret.GetEof() {
		t.Fatalf("skill blob = %+v, %v", ret, err)
	}
	for _, tc := range []struct {
		e    *smcp.Error
		want string
	}{
		{smcp.Errorf(smcp.CodeMCPServerNotFound, "gone"), ReasonGone},
		{smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "x").WithDetails(map[string]any{"reason": "not_found"}), ReasonGone},
		{smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "x").WithDetails(map[string]any{"reason": "traversal"}), ReasonForbidden},
		{smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "x").WithDetails(map[string]any{"reason": "forbidden"}), ReasonForbidden},
	} {
		verdict = tc.e
		if _, err := s.GetBlob(h, 0, 0); reasonOf(t, err) != tc.want {
			t.Fatalf("opener %v: %v, want %s", tc.e, err, tc.want)
		}
	}
}

func TestSidebandRefusesItemsOverTheCap(t *testing.T) {
	s := newService(t, Options{MaxSize: 64 << 10})
	res := map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png",
		"data": base64.StdEncoding.EncodeToString(make([]byte, 65<<10))}}}
	if _, err := s.Sideband(res); err == nil {
		t.Fatal("an item over the cap was spooled")
	}
}
