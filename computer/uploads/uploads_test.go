package uploads

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func chunk(id string, off int64, eof bool, b []byte) *smcpv1.PutBlobReq {
	r := &smcpv1.PutBlobReq{Agent: "a", ReqId: "r", Computer: "c", ChunkOffset: off, Eof: eof, Blob: base64.StdEncoding.EncodeToString(b)}
	if id != "" {
		r.UploadId = proto.String(id)
	}
	return r
}

func firstChunk(total int64, sum, hint string, eof bool, b []byte) *smcpv1.PutBlobReq {
	r := chunk("", 0, eof, b)
	r.TotalSize, r.Sha256 = proto.Int64(total), proto.String(sum)
	if hint != "" {
		r.NameHint = proto.String(hint)
	}
	return r
}

func reason(t *testing.T, err error) string {
	t.Helper()
	e, ok := smcp.AsError(err)
	if !ok || e.Code != smcp.CodeBlobWriteFailed {
		t.Fatalf("error = %v, want a 4019", err)
	}
	r, _ := e.Details["reason"].(string)
	return r
}

// files lists the root's entries.
func files(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestUpload20MiBLands(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Options{Root: dir})
	data := make([]byte, 20<<20)
	rand.Read(data)
	const step = 256 << 10
	ret, err := m.Put("a", firstChunk(int64(len(data)), hexSum(data), "../../etc/passwd", false, data[:step]))
	if err != nil {
		t.Fatal(err)
	}
	id := ret.UploadID
	for off := step; off < len(data); off += step {
		end := min(off+step, len(data))
		if ret, err = m.Put("a", chunk(id, int64(off), end == len(data), data[off:end])); err != nil {
			t.Fatalf("chunk at %d: %v", off, err)
		}
	}
	// The name in the landing root, never the host's path.
	if ret.LandingPath != id+"-passwd" || ret.SHA256 != hexSum(data) || *ret.TotalSize != int64(len(data)) {
		t.Fatalf("ret = %+v", ret)
	}
	got, err := os.ReadFile(filepath.Join(dir, ret.LandingPath))
	if err != nil || hexSum(got) != hexSum(data) {
		t.Fatalf("landed file differs (%v)", err)
	}
	if fs := files(t, dir); len(fs) != 1 {
		t.Fatalf("root holds %v, want only the landed file", fs)
	}
	if m.InProgress() != 0 {
		t.Fatal("upload still in progress")
	}
}

func TestUploadRefusals(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, Options{Root: dir, MaxSize: 1 << 20, MaxConcurrent: 2})
	data := []byte("hello world")
	sum := hexSum(data)
	start := func() string {
		t.Helper()
		ret, err := m.Put("a", firstChunk(int64(len(data)), sum, "", false, data[:5]))
		if err != nil {
			t.Fatal(err)
		}
		return ret.UploadID
	}
	check := func(what string, err error, want string) {
		t.Helper()
		if got := reason(t, err); got != want {
			t.Fatalf("%s: reason %s, want %s (%v)", what, got, want, err)
		}
	}
	_, err := m.Put("a", firstChunk(2<<20, sum, "", false, data))
	check("oversized declaration", err, ReasonTooLarge)
	_, err = m.Put("a", firstChunk(0, sum, "", true, nil))
	check("total_size 0", err, ReasonInvalidDeclaration)
	_, err = m.Put("a", firstChunk(11, "xyz", "", true, data))
	check("bad sha256", err, ReasonInvalidDeclaration)
	r := chunk("", 0, true, data)
	_, err = m.Put("a", r)
	check("no declaration", err, ReasonInvalidDeclaration)
	_, err = m.Put("a", chunk("0123456789abcdef0123456789abcdef", 0, false, data))
	check("unknown upload", err, ReasonInvalidUpload)

	id := start()
	_, err = m.Put("a", chunk(id, 7, true, data[7:]))
	check("out of order", err, ReasonRange)
	_, err = m.Put("a", chunk(id, 5, true, data[5:]))
	check("after a refusal the upload is gone", err, ReasonInvalidUpload)

	id = start()
	_, err = m.Put("b", chunk(id, 5, true, data[5:]))
	check("another agent's upload", err, ReasonInvalidUpload)
	rd := chunk(id, 5, true, data[5:])
	rd.Sha256 = proto.String(sum)
	_, err = m.Put("a", rd)
	check("repeated declaration", err, ReasonInvalidDeclaration)

	id = start()
	_, err = m.Put("a", chunk(id, 5, true, []byte(" WORLD")))
	check("wrong sha256", err, ReasonIntegrity)
	id = start()
	_, err = m.Put("a", chunk(id, 5, true, []byte(" world and more")))
	check("past total_size", err, ReasonRange)
	id = start()
	_, err = m.Put("a", chunk(id, 5, true, []byte(" w")))
	check("short at eof", err, ReasonRange)

	a, b := start(), start()
	_, err = m.Put("a", firstChunk(int64(len(data)), sum, "", false, data[:5]))
	check("third concurrent upload", err, ReasonBusy)
	for _, id := range []string{a, b} {
		if _, err := m.Put("a", chunk(id, 5, true, data[5:])); err != nil {
			t.Fatal(err)
		}
	}
	// Refused uploads leave nothing; the two finished ones landed.
	fs := files(t, dir)
	if len(fs) != 2 || strings.HasSuffix(fs[0], ".part") || strings.HasSuffix(fs[1], ".part") {
		t.Fatalf("root holds %v", fs)
	}
}

func TestNoLandingRootRefusesAll(t *testing.T) {
	m := newManager(t, Options{})
	_, err := m.Put("a", firstChunk(1, hexSum([]byte("x")), "x", true, []byte("x")))
	if reason(t, err) != ReasonForbidden {
		t.Fatal(err)
	}
}

func TestAbandonedUploadsAreCollected(t *testing.T) {
	dir := t.TempDir()
	orphan := filepath.Join(dir, "0123456789abcdef0123456789abcdef.part")
	keep := filepath.Join(dir, "notes.part")
	for _, f := range []string{orphan, keep} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, Options{Root: dir, IdleTimeout: 200 * time.Millisecond})
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatal("an orphaned .part of an earlier process was kept")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatal("a file that is not an upload's .part was removed")
	}
	ret, err := m.Put("a", firstChunk(10, hexSum(make([]byte, 10)), "x", false, make([]byte, 4)))
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, ret.UploadID+".part")
	if _, err := os.Stat(part); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 20*time.Second, "the idle upload discarded", func() bool {
		_, err := os.Stat(part)
		return os.IsNotExist(err) && m.InProgress() == 0
	})
	_, err = m.Put("a", chunk(ret.UploadID, 4, true, make([]byte, 6)))
	if reason(t, err) != ReasonInvalidUpload {
		t.Fatal(err)
	}
}

// TestSecondManagerKeepsAnUploadInProgress: a second computer starting on
// the same landing root removes the orphans of earlier processes but not
// the .part of the first one's upload in progress, which then lands.
func TestSecondManagerKeepsAnUploadInProgress(t *testing.T) {
	dir := t.TempDir()
	first := newManager(t, Options{Root: dir})
	data := make([]byte, 10)
	rand.Read(data)
	ret, err := first.Put("a", firstChunk(10, hexSum(data), "x", false, data[:4]))
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(dir, "0123456789abcdef0123456789abcdef.part")
	if err := os.WriteFile(orphan, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	newManager(t, Options{Root: dir})
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatal("an orphaned .part was kept")
	}
	if _, err := os.Stat(filepath.Join(dir, ret.UploadID+".part")); err != nil {
		t.Fatalf("the first computer's upload in progress: %v", err)
	}
	ret, err = first.Put("a", chunk(ret.UploadID, 4, true, data[4:]))
	if err != nil || ret.SHA256 != hexSum(data) {
		t.Fatalf("the first computer's upload after the second started: %+v %v", ret, err)
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"../../etc/passwd": "passwd",
		`..\..\x.txt`:      "x.txt",
		"report (1).pdf":   "report__1_.pdf",
		".bashrc":          "bashrc",
		"..":               "",
		"a..b":             "a.b",
		"-rf":              "rf",
		"été.png":          "t_.png",
		"":                 "",
		"/":                "",
	} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := SanitizeName(strings.Repeat("a", 300) + ".png"); len(got) > maxHintLen || !strings.HasSuffix(got, ".png") {
		t.Errorf("long hint = %q", got)
	}
}

// A landing root with a quota refuses, at its first chunk and before a
// byte is written, the upload that would take it over: landed files count
// at their size, an upload in progress at its declared size, and what the
// user removes frees room. The file quota likewise.
func TestLandingQuota(t *testing.T) {
	root := t.TempDir()
	m := newManager(t, Options{Root: root, QuotaBytes: 100 << 10, QuotaFiles: 3})
	data := make([]byte, 40<<10)
	_, _ = rand.Read(data)
	// 40 KiB landed.
	ret, err := m.Put("a", firstChunk(int64(len(data)), hexSum(data), "one.bin", true, data))
	if err != nil {
		t.Fatal(err)
	}
	landed := ret.LandingPath
	// 40 KiB in progress (declared 40, 10 written).
	started, err := m.Put("a", firstChunk(int64(len(data)), hexSum(data), "two.bin", false, data[:10<<10]))
	if err != nil {
		t.Fatal(err)
	}
	// 40 + 40 + 21 KiB is over 100 KiB: refused, nothing written.
	before := files(t, root)
	big := data[:21<<10]
	_, err = m.Put("a", firstChunk(int64(len(big)), hexSum(big), "three.bin", true, big))
	if got := reason(t, err); got != ReasonTooLarge || !strings.Contains(err.Error(), "quota is 102400") || !strings.Contains(err.Error(), "--landing-quota-bytes") {
		t.Fatalf("over the byte quota: %v", err)
	}
	if e, _ := smcp.AsError(err); e.Details["quota_bytes"] != int64(100<<10) || e.Details["used_bytes"] != int64(80<<10) {
		t.Errorf("details %v", e.Details)
	}
	if after := files(t, root); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("files %v, before the refusal %v", after, before)
	}
	// 20 KiB fits: a third file.
	small := data[:20<<10]
	if _, err := m.Put("a", firstChunk(int64(len(small)), hexSum(small), "three.bin", true, small)); err != nil {
		t.Fatalf("within the quota: %v", err)
	}
	// A fourth file is over the file quota, however small.
	_, err = m.Put("a", firstChunk(1, hexSum(data[:1]), "four.bin", true, data[:1]))
	if got := reason(t, err); got != ReasonTooLarge || !strings.Contains(err.Error(), "--landing-quota-files") {
		t.Fatalf("over the file quota: %v", err)
	}
	// Removing a landed file makes room; the upload in progress finishes.
	if err := os.Remove(filepath.Join(root, landed)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Put("a", firstChunk(1, hexSum(data[:1]), "four.bin", true, data[:1])); err != nil {
		t.Fatalf("after a removal: %v", err)
	}
	if _, err := m.Put("a", chunk(started.UploadID, 10<<10, true, data[10<<10:])); err != nil {
		t.Fatalf("the upload in progress: %v", err)
	}
}
