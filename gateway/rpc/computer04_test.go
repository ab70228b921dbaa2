package rpc_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/gateway"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// blobComputer is a fake computer of protocol 0.4 (sioclient with
// a2c_version 0.4.0, no MCP) that serves skills and blobs from real files:
// client:get_blob reads a file on disk at the asked offset, client:put_blob
// writes a .part file in its landing root with an incremental SHA-256 and
// renames it at eof, refusing it (4019 integrity) when the hash is not the
// declared one. What it received is recorded for the tests to check.
type blobComputer struct {
	name string
	c    *sioclient.Client
	root string // landing root of uploads

	mu        sync.Mutex
	blobs     map[string]*blobFile // by handle
	uploads   map[string]*landing  // by upload_id
	getBlobs  int                  // get_blob requests answered
	putChunks []int                // bytes of each put_blob chunk received
	// corruptAt flips one byte of the chunk served at this offset (-1: none).
	corruptAt int64
	// changeAt declares another sha256 from this offset on (-1: never).
	changeAt int64
	// stall, when set, is told of every get_blob, which then waits until
	// the test ends.
	stall chan struct{}
}

type blobFile struct {
	path      string
	size      int64
	sha, mime string
}

type landing struct {
	f         *os.File
	sum       hash.Hash
	received  int64
	total     int64
	sha, name string
}

// blobChunkCap is the computer's chunk cap (the SDKs' default).
const blobChunkCap = 256 << 10

func startBlobComputer(t testing.TB, g *gateway.Running, name, office, version string) *blobComputer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: g.URL, APIKey: keyComputer, NoReconnect: true, Version: version})
	if err != nil {
		t.Fatalf("computer dial: %v", err)
	}
	t.Cleanup(c.Close)
	bc := &blobComputer{name: name, c: c, root: t.TempDir(), blobs: map[string]*blobFile{}, uploads: map[string]*landing{},
		corruptAt: -1, changeAt: -1}
	t.Cleanup(bc.closeUploads)
	handle := func(event string, h func(payload json.RawMessage) (proto.Message, error)) {
		c.Handle(event, func(_ context.Context, payload json.RawMessage) (any, error) { return h(payload) })
	}
	handle(smcp.EventGetSkills, bc.getSkills)
	handle(smcp.EventGetSkill, bc.getSkill)
	handle(smcp.EventGetResources, bc.getResources)
	handle(smcp.EventGetBlob, bc.getBlob)
	handle(smcp.EventPutBlob, bc.putBlob)
	if err := c.JoinOffice(ctx, smcp.RoleComputer, name, office); err != nil {
		t.Fatalf("computer join: %v", err)
	}
	return bc
}

func (bc *blobComputer) closeUploads() {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	for _, u := range bc.uploads {
		u.f.Close()
	}
}

// addBlob serves the file at path under a new handle.
func (bc *blobComputer) addBlob(t testing.TB, path, mime string) *blobFile {
	t.Helper()
	size, sha := fileSHA256(t, path)
	b := &blobFile{path: path, size: size, sha: sha, mime: mime}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.blobs["h-"+filepath.Base(path)] = b
	return b
}

func (bc *blobComputer) set(f func()) {
	bc.mu.Lock()
	defer bc.mu.Unlock()
	f()
}

// fileSHA256 hashes a file as it is on disk.
func fileSHA256(t testing.TB, path string) (int64, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// writeRandomFile writes size random bytes to a new file in dir.
func writeRandomFile(t testing.TB, dir, name string, size int64) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	return path
}

func decodeReq(payload json.RawMessage, m proto.Message) error {
	if err := smcp.Unmarshal(payload, m); err != nil {
		return smcp.Errorf(smcp.CodeBadRequest, "%v", err)
	}
	return nil
}

var testSkills = []*smcpv1.A2CSkillRef{
	{Name: "pdf-tools", Source: "user", Path: "/home/u/.a2c/skills/pdf-tools", Description: "read PDFs", Tags: []string{"pdf"}},
	{Name: "mcp:docs:search", Source: "mcp:docs", Path: "/srv/docs", Description: "search the docs", Uri: new("skill://docs/search")},
}

func (bc *blobComputer) getSkills(payload json.RawMessage) (proto.Message, error) {
	req := &smcpv1.GetSkillsReq{}
	if err := decodeReq(payload, req); err != nil {
		return nil, err
	}
	return &smcpv1.GetSkillsRet{Skills: testSkills, ReqId: req.GetReqId()}, nil
}

const skillBody = "# PDF tools\n\nUse `pdftotext`.\n"

// getSkill answers pdf-tools: SKILL.md inline, data.bin (the blob
// "h-data.bin", when added) by handle; errors as PROTOCOL-0.4.md §7 C5.
func (bc *blobComputer) getSkill(payload json.RawMessage) (proto.Message, error) {
	req := &smcpv1.GetSkillReq{}
	if err := decodeReq(payload, req); err != nil {
		return nil, err
	}
	rel := req.GetRelPath()
	if rel == "" {
		rel = "SKILL.md"
	}
	switch {
	case strings.ContainsAny(req.GetName(), "/ ") || req.GetName() == "":
		return nil, smcp.Errorf(smcp.CodeInvalidSkillName, "invalid skill name").WithDetails(map[string]any{"name": req.GetName()})
	case req.GetName() != "pdf-tools":
		return nil, smcp.Errorf(smcp.CodeMCPServerNotFound, "skill not found").WithDetails(map[string]any{"name": req.GetName()})
	case strings.Contains(rel, ".."):
		return nil, smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "outside the skill").WithDetails(map[string]any{"reason": "traversal", "rel_path": rel})
	case rel == "SKILL.md":
		sum := sha256.Sum256([]byte(skillBody))
		return &smcpv1.GetSkillRet{Name: req.GetName(), RelPath: rel, MimeType: "text/markdown", TotalSize: int64(len(skillBody)),
			Sha256: hex.EncodeToString(sum[:]), Body: new(skillBody), ReqId: req.GetReqId()}, nil
	}
	bc.mu.Lock()
	b := bc.blobs["h-"+rel]
	bc.mu.Unlock()
	if b == nil {
		return nil, smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "no such file").WithDetails(map[string]any{"reason": "not_found", "rel_path": rel})
	}
	return &smcpv1.GetSkillRet{Name: req.GetName(), RelPath: rel, MimeType: b.mime, TotalSize: b.size, Sha256: b.sha,
		BlobHandle: new("h-" + rel), ReqId: req.GetReqId()}, nil
}

func (bc *blobComputer) getResources(payload json.RawMessage) (proto.Message, error) {
	req := &smcpv1.GetResourcesReq{}
	if err := decodeReq(payload, req); err != nil {
		return nil, err
	}
	switch req.GetMcpServer() {
	case "docs":
		r, _ := structpb.NewStruct(map[string]any{"uri": "file:///srv/docs/a.md", "name": "a.md", "mimeType": "text/markdown"})
		ret := &smcpv1.GetResourcesRet{Resources: []*structpb.Struct{r}, ReqId: req.GetReqId()}
		if req.Cursor == nil {
			ret.NextCursor = new("page-2")
		}
		return ret, nil
	case "tools":
		return nil, smcp.Errorf(smcp.CodeMCPCapabilityNotSupported, "no resources").WithDetails(map[string]any{"capability": "resources"})
	}
	return nil, smcp.Errorf(smcp.CodeMCPServerNotFound, "mcp server %q not found", req.GetMcpServer())
}

func blobRefused(reason, format string, args ...any) error {
	return smcp.Errorf(smcp.CodeBlobNotAccessible, format, args...).WithDetails(map[string]any{"reason": reason})
}

func (bc *blobComputer) getBlob(payload json.RawMessage) (proto.Message, error) {
	req := &smcpv1.GetBlobReq{}
	if err := decodeReq(payload, req); err != nil {
		return nil, err
	}
	bc.mu.Lock()
	b := bc.blobs[req.GetBlobHandle()]
	corruptAt, changeAt, stall := bc.corruptAt, bc.changeAt, bc.stall
	bc.getBlobs++
	bc.mu.Unlock()
	if stall != nil {
		stall <- struct{}{}
		<-bc.c.Done()
		return nil, errors.New("the computer left")
	}
	off := req.GetChunkOffset()
	switch {
	case b == nil:
		return nil, blobRefused("invalid_handle", "unknown blob handle")
	case off < 0 || off > b.size:
		return nil, blobRefused("range", "chunk_offset %d outside 0..%d", off, b.size)
	}
	n := int64(blobChunkCap)
	if req.MaxChunkBytes != nil {
		n = min(n, req.GetMaxChunkBytes())
	}
	n = min(n, b.size-off)
	f, err := os.Open(b.path)
	if err != nil {
		return nil, blobRefused("gone", "%v", err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, blobRefused("gone", "%v", err)
	}
	if off == corruptAt && n > 0 {
		buf[n/2] ^= 0x01
	}
	sha := b.sha
	if changeAt >= 0 && off >= changeAt {
		sha = strings.Repeat("0", 64)
	}
	return &smcpv1.GetBlobRet{BlobHandle: req.GetBlobHandle(), MimeType: b.mime, TotalSize: b.size, Sha256: sha,
		ChunkOffset: off, Eof: off+n == b.size, Blob: base64.StdEncoding.EncodeToString(buf), ReqId: req.GetReqId()}, nil
}

func uploadRefused(reason, format string, args ...any) error {
	return smcp.Errorf(smcp.CodeBlobWriteFailed, format, args...).WithDetails(map[string]any{"reason": reason})
}

// putBlob lands uploads as PROTOCOL-0.4.md §7 C7 says, in a temp dir.
func (bc *blobComputer) putBlob(payload json.RawMessage) (proto.Message, error) {
	req := &smcpv1.PutBlobReq{}
	if err := decodeReq(payload, req); err != nil {
		return nil, err
	}
	data, err := base64.StdEncoding.DecodeString(req.GetBlob())
	if err != nil {
		return nil, uploadRefused("invalid_declaration", "blob is not base64")
	}
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.putChunks = append(bc.putChunks, len(data))
	var id string
	var u *landing
	if req.UploadId == nil {
		if req.GetChunkOffset() != 0 || req.GetTotalSize() < 1 || len(req.GetSha256()) != 64 {
			return nil, uploadRefused("invalid_declaration", "bad declaration")
		}
		id = fmt.Sprintf("up-%d", len(bc.uploads)+1)
		f, err := os.Create(filepath.Join(bc.root, id+".part"))
		if err != nil {
			return nil, uploadRefused("io_error", "%v", err)
		}
		u = &landing{f: f, sum: sha256.New(), total: req.GetTotalSize(), sha: req.GetSha256(), name: filepath.Base(req.GetNameHint())}
		bc.uploads[id] = u
	} else {
		id = req.GetUploadId()
		if u = bc.uploads[id]; u == nil {
			return nil, uploadRefused("invalid_upload", "unknown upload %q", id)
		}
		if req.TotalSize != nil || req.Sha256 != nil {
			return nil, uploadRefused("invalid_declaration", "declaration repeated")
		}
	}
	if req.GetChunkOffset() != u.received {
		return nil, uploadRefused("range", "chunk_offset %d, %d bytes received", req.GetChunkOffset(), u.received)
	}
	if _, err := u.f.Write(data); err != nil {
		return nil, uploadRefused("io_error", "%v", err)
	}
	u.sum.Write(data)
	u.received += int64(len(data))
	ret := &smcpv1.PutBlobRet{UploadId: id, ChunkOffset: req.GetChunkOffset(), ReqId: req.GetReqId()}
	if !req.GetEof() {
		return ret, nil
	}
	delete(bc.uploads, id)
	part := u.f.Name()
	u.f.Close()
	got := hex.EncodeToString(u.sum.Sum(nil))
	switch {
	case u.received != u.total:
		os.Remove(part)
		return nil, uploadRefused("range", "%d bytes received, total_size %d", u.received, u.total)
	case got != strings.ToLower(u.sha):
		os.Remove(part)
		return nil, uploadRefused("integrity", "sha256 %s, declared %s", got, u.sha)
	}
	landed := filepath.Join(bc.root, id+"-"+u.name)
	if err := os.Rename(part, landed); err != nil {
		return nil, uploadRefused("io_error", "%v", err)
	}
	ret.LandingPath, ret.TotalSize, ret.Sha256 = &landed, &u.received, &got
	return ret, nil
}
