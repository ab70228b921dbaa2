package rpc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// readBlob reads a whole ReadBlob stream, hashing the bytes as they come
// (never holding them): what a client that writes them to a file does.
type blobRead struct {
	msgs    int
	size    int64
	sha     string // of the bytes received
	last    *smcpv1.ReadBlobResponse
	offsets bool // every chunk_offset was the bytes received before it
	err     error
}

// transferContext bounds a test's transfers: generous, since the race
// detector and a loaded machine slow the relay of megabytes severalfold.
func transferContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func readBlob(ctx context.Context, cl smcpv1connect.AgentServiceClient, req *smcpv1.ReadBlobRequest) blobRead {
	out := blobRead{offsets: true}
	stream, err := cl.ReadBlob(ctx, req)
	if err != nil {
		out.err = err
		return out
	}
	defer stream.Close()
	h := sha256.New()
	for stream.Receive() {
		m := stream.Msg()
		if m.GetChunkOffset() != out.size {
			out.offsets = false
		}
		h.Write(m.GetData())
		out.size += int64(len(m.GetData()))
		out.msgs++
		out.last = m
	}
	out.err = stream.Err()
	out.sha = hex.EncodeToString(h.Sum(nil))
	return out
}

// TestReadBlob: a 20 MiB file of a 0.4 computer arrives intact over
// ReadBlob, in 80+ client:get_blob chunks of at most 256 KiB, its sha256
// checked by the gateway (eof set) and by the client; a small one over each
// protocol, with a smaller chunk asked.
func TestReadBlob(t *testing.T) {
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	dir := t.TempDir()
	big := pc.addBlob(t, writeRandomFile(t, dir, "data.bin", 20<<20), "application/octet-stream")
	small := pc.addBlob(t, writeRandomFile(t, dir, "small.bin", 100_001), "image/png")
	ctx := transferContext(t)

	// The handle comes from GetSkill, as an agent gets it.
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)
	skill, err := cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "pdf-tools", RelPath: new("data.bin")})
	if err != nil {
		t.Fatalf("GetSkill: %v", err)
	}
	if skill.GetBlobHandle() == "" || skill.Body != nil || skill.GetTotalSize() != big.size || skill.GetSha256() != big.sha {
		t.Fatalf("GetSkill: %v", skill)
	}
	got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: skill.GetBlobHandle()})
	if got.err != nil {
		t.Fatalf("ReadBlob: %v", got.err)
	}
	pc.mu.Lock()
	chunks := pc.getBlobs
	pc.mu.Unlock()
	if got.size != big.size || got.sha != big.sha || !got.offsets {
		t.Fatalf("read %d bytes with sha256 %s (offsets in order: %t), want %d bytes with %s", got.size, got.sha, got.offsets, big.size, big.sha)
	}
	if !got.last.GetEof() || got.last.GetSha256() != big.sha || got.last.GetTotalSize() != big.size || got.last.GetMimeType() != "application/octet-stream" {
		t.Fatalf("last message %v", got.last)
	}
	if chunks < 80 || got.msgs != chunks {
		t.Fatalf("%d get_blob requests, %d messages: want one message per chunk, 80 or more", chunks, got.msgs)
	}
	t.Logf("20 MiB in %d chunks", chunks)

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cl := newClient(t, g, p, "x-api-key", keyAgent)
			got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-small.bin", MaxChunkBytes: new(int64(40_000))})
			if got.err != nil || got.size != small.size || got.sha != small.sha || got.msgs != 3 || !got.last.GetEof() || !got.offsets {
				t.Fatalf("ReadBlob: %+v, want %d bytes, %s, 3 messages", got, small.size, small.sha)
			}
		})
	}
}

// TestReadBlobFailures: a chunk corrupted by the computer fails the stream
// with DataLoss naming the expected and the actual sha256, and the message
// with eof set is never sent; a blob whose sha256 changes mid-read fails
// with Aborted; the computer's refusals keep their SMCP code.
func TestReadBlobFailures(t *testing.T) {
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	b := pc.addBlob(t, writeRandomFile(t, t.TempDir(), "data.bin", 3<<20), "application/octet-stream")
	ctx := transferContext(t)
	cl := newClient(t, g, protocols[0], "x-api-key", keyAgent)
	req := &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-data.bin"}

	pc.set(func() { pc.corruptAt = 5 * blobChunkCap })
	got := readBlob(ctx, cl, req)
	if connect.CodeOf(got.err) != connect.CodeDataLoss {
		t.Fatalf("corrupted chunk: %v", got.err)
	}
	// The actual sha256 is that of the file with the byte flipped.
	data, err := os.ReadFile(b.path)
	if err != nil {
		t.Fatal(err)
	}
	data[5*blobChunkCap+blobChunkCap/2] ^= 0x01
	actual := sha256.Sum256(data)
	for _, want := range []string{"sha256 mismatch", "expected " + b.sha, "actual " + hex.EncodeToString(actual[:])} {
		if !strings.Contains(got.err.Error(), want) {
			t.Fatalf("error %q does not say %q", got.err, want)
		}
	}
	// Every chunk but the last was sent on; the last, whose eof would say
	// the blob is whole, was not.
	if got.size != b.size-blobChunkCap || got.last == nil || got.last.GetEof() {
		t.Fatalf("corrupted read: %+v", got)
	}

	pc.set(func() { pc.corruptAt, pc.changeAt = -1, 2*blobChunkCap })
	got = readBlob(ctx, cl, req)
	if connect.CodeOf(got.err) != connect.CodeAborted || !strings.Contains(got.err.Error(), "changed during the read") {
		t.Fatalf("changed blob: %v", got.err)
	}
	if got.size != 2*blobChunkCap {
		t.Fatalf("changed blob: %d bytes sent before the change, want %d", got.size, 2*blobChunkCap)
	}

	pc.set(func() { pc.changeAt = -1 })
	got = readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "forged"})
	wantCode(t, got.err, connect.CodeInvalidArgument, smcp.CodeBlobNotAccessible)
	if e, _ := rpc.SMCPError(got.err); e.Details["reason"] != "invalid_handle" {
		t.Fatalf("details %v", e.Details)
	}
	// A chunk below the minimum would be a computer round trip per few
	// bytes: refused, naming the minimum, before any request is sent.
	for _, n := range []int64{0, 1, rpc.MinBlobChunkBytes - 1} {
		pc.mu.Lock()
		before := pc.getBlobs
		pc.mu.Unlock()
		got = readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-data.bin", MaxChunkBytes: new(n)})
		wantCode(t, got.err, connect.CodeInvalidArgument, smcp.CodeBadRequest)
		pc.mu.Lock()
		asked := pc.getBlobs - before
		pc.mu.Unlock()
		if !strings.Contains(got.err.Error(), "at least 16384") || asked != 0 {
			t.Errorf("max_chunk_bytes %d: %v, %d get_blob sent", n, got.err, asked)
		}
	}
	got = readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-gone", BlobHandle: "h-data.bin"})
	wantCode(t, got.err, connect.CodeNotFound, smcp.CodeNotFound)
	// After all that, a read still works.
	if got := readBlob(ctx, cl, req); got.err != nil || got.sha != b.sha {
		t.Fatalf("read after failures: %+v", got)
	}
}

// putFile uploads the file at path with PutBlob, in messages of the sizes
// given in turn (the last repeated), declaring sha and size.
func putFile(ctx context.Context, cl smcpv1connect.AgentServiceClient, hdr *smcpv1.PutBlobHeader, path string, sizes ...int) (*smcpv1.PutBlobResponse, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	stream, err := cl.PutBlob(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Header{Header: hdr}}); err != nil {
		return stream.CloseAndReceive()
	}
	for i := 0; ; i++ {
		buf := make([]byte, sizes[min(i, len(sizes)-1)])
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Data{Data: buf[:n]}}); err != nil {
				break // the answer says why
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return stream.CloseAndReceive()
}

// TestPutBlob: a file uploaded with PutBlob, in client messages of odd
// sizes, lands on a 0.4 computer (which recomputes its sha256) in
// put_blob chunks of 256 KiB but the last; the landed file's sha256 is the
// file's. Over each protocol.
func TestPutBlob(t *testing.T) {
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	const size = 5<<20 + 12345
	path := writeRandomFile(t, t.TempDir(), "upload.bin", size)
	_, sha := fileSHA256(t, path)
	ctx := transferContext(t)

	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cl := newClient(t, g, p, "x-api-key", keyAgent)
			pc.set(func() { pc.putChunks = nil })
			hdr := &smcpv1.PutBlobHeader{OfficeId: officeA, Computer: "pc-04", TotalSize: size, Sha256: sha, NameHint: new("report.bin")}
			res, err := putFile(ctx, cl, hdr, path, 100_000, 700_000, 1, 333_333)
			if err != nil {
				t.Fatalf("PutBlob: %v", err)
			}
			if res.GetTotalSize() != size || res.GetSha256() != sha || res.GetUploadId() == "" || filepath.Dir(res.GetLandingPath()) != pc.root {
				t.Fatalf("PutBlob: %v", res)
			}
			n, landed := fileSHA256(t, res.GetLandingPath())
			if n != size || landed != sha {
				t.Fatalf("landed %d bytes with sha256 %s, sent %d with %s", n, landed, int64(size), sha)
			}
			pc.mu.Lock()
			chunks := append([]int(nil), pc.putChunks...)
			pc.mu.Unlock()
			if len(chunks) != size/rpc.BlobChunkBytes+1 {
				t.Fatalf("%d put_blob chunks, want %d", len(chunks), size/rpc.BlobChunkBytes+1)
			}
			for i, c := range chunks[:len(chunks)-1] {
				if c != rpc.BlobChunkBytes {
					t.Fatalf("chunk %d of %d bytes", i, c)
				}
			}
		})
	}
}

// TestPutBlobFailures: a header that is not one, an upload shorter or
// longer than declared, or bytes that are not the declared sha256 never
// land a file.
func TestPutBlobFailures(t *testing.T) {
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	path := writeRandomFile(t, t.TempDir(), "upload.bin", 600_000)
	size, sha := fileSHA256(t, path)
	ctx := transferContext(t)
	cl := newClient(t, g, protocols[1], "x-api-key", keyAgent)
	hdr := func(total int64, sha string) *smcpv1.PutBlobHeader {
		return &smcpv1.PutBlobHeader{OfficeId: officeA, Computer: "pc-04", TotalSize: total, Sha256: sha}
	}

	_, err := putFile(ctx, cl, hdr(size, strings.Repeat("ab", 32)), path, 64<<10)
	wantCode(t, err, connect.CodeDataLoss, smcp.CodeBlobWriteFailed)
	_, err = putFile(ctx, cl, hdr(size+1, sha), path, 64<<10)
	wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeBadRequest)
	if !strings.Contains(err.Error(), "ended after 600000 bytes") {
		t.Fatalf("short upload: %v", err)
	}
	_, err = putFile(ctx, cl, hdr(size-1, sha), path, 64<<10)
	wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeBadRequest)
	_, err = putFile(ctx, cl, hdr(0, sha), path, 64<<10)
	wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeBadRequest)
	_, err = putFile(ctx, cl, hdr(size, "not-hex"), path, 64<<10)
	wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeBadRequest)

	stream, err := cl.PutBlob(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Data{Data: []byte("no header")}})
	_, err = stream.CloseAndReceive()
	wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeBadRequest)

	landed, err := filepath.Glob(filepath.Join(pc.root, "up-*-*"))
	if err != nil || len(landed) != 0 {
		t.Fatalf("failed uploads landed %v (%v)", landed, err)
	}
	// The same file, declared right, lands.
	res, err := putFile(ctx, cl, hdr(size, sha), path, 64<<10)
	if err != nil || res.GetSha256() != sha {
		t.Fatalf("PutBlob: %v %v", res, err)
	}
}

// TestSkillsAndResources: the 0.3/0.4 unary calls return the computer's
// answers as typed messages, and its flat errors as Connect errors with the
// SMCP code.
func TestSkillsAndResources(t *testing.T) {
	g := startGateway(t)
	startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	ctx := testContext(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			cl := newClient(t, g, p, "x-api-key", keyAgent)
			skills, err := cl.GetSkills(ctx, &smcpv1.GetSkillsRequest{OfficeId: officeA, Computer: "pc-04"})
			if err != nil {
				t.Fatalf("GetSkills: %v", err)
			}
			if len(skills.GetSkills()) != 2 || skills.GetSkills()[1].GetName() != "mcp:docs:search" ||
				skills.GetSkills()[1].GetUri() != "skill://docs/search" || skills.GetSkills()[0].GetTags()[0] != "pdf" {
				t.Fatalf("GetSkills: %v", skills)
			}
			skill, err := cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "pdf-tools"})
			if err != nil {
				t.Fatalf("GetSkill: %v", err)
			}
			sum := sha256.Sum256([]byte(skillBody))
			if skill.GetBody() != skillBody || skill.GetRelPath() != "SKILL.md" || skill.GetMimeType() != "text/markdown" ||
				skill.GetSha256() != hex.EncodeToString(sum[:]) || skill.BlobHandle != nil {
				t.Fatalf("GetSkill: %v", skill)
			}
			res, err := cl.GetResources(ctx, &smcpv1.GetResourcesRequest{OfficeId: officeA, Computer: "pc-04", McpServer: "docs"})
			if err != nil || len(res.GetResources()) != 1 || res.GetResources()[0].GetFields()["uri"].GetStringValue() != "file:///srv/docs/a.md" || res.GetNextCursor() != "page-2" {
				t.Fatalf("GetResources: %v %v", res, err)
			}
			res, err = cl.GetResources(ctx, &smcpv1.GetResourcesRequest{OfficeId: officeA, Computer: "pc-04", McpServer: "docs", Cursor: new("page-2")})
			if err != nil || res.NextCursor != nil {
				t.Fatalf("GetResources page 2: %v %v", res, err)
			}

			_, err = cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "nope"})
			wantCode(t, err, connect.CodeNotFound, smcp.CodeMCPServerNotFound)
			_, err = cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "a/b"})
			wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeInvalidSkillName)
			_, err = cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "pdf-tools", RelPath: new("../etc/passwd")})
			wantCode(t, err, connect.CodeInvalidArgument, smcp.CodeSkillResourceNotAccessible)
			_, err = cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-04", Name: "pdf-tools", RelPath: new("missing.txt")})
			wantCode(t, err, connect.CodeNotFound, smcp.CodeSkillResourceNotAccessible)
			if e, _ := rpc.SMCPError(err); e.Details["reason"] != "not_found" || e.Details["rel_path"] != "missing.txt" {
				t.Fatalf("details %v", e.Details)
			}
			_, err = cl.GetResources(ctx, &smcpv1.GetResourcesRequest{OfficeId: officeA, Computer: "pc-04", McpServer: "tools"})
			wantCode(t, err, connect.CodeUnimplemented, smcp.CodeMCPCapabilityNotSupported)
			_, err = cl.GetResources(ctx, &smcpv1.GetResourcesRequest{OfficeId: officeA, Computer: "pc-04", McpServer: "ghost"})
			wantCode(t, err, connect.CodeNotFound, smcp.CodeMCPServerNotFound)
		})
	}
}

// TestOlderOffices: a one-call agent acts in the office's version, so in
// an office of 0.2 computers the 0.3 calls are NotFound "unknown event"
// (without reaching the computer), and in a 0.3 office PutBlob (0.4) is.
func TestOlderOffices(t *testing.T) {
	g := startGateway(t)
	pc02 := startComputer(t, g, "pc-02", officeA)
	startBlobComputer(t, g, "pc-03", officeB, "0.3.2")
	ctx := testContext(t)
	cl := newClient(t, g, protocols[0], "x-api-key", keyAgent)

	unknown := func(t *testing.T, err error, event string) {
		t.Helper()
		wantCode(t, err, connect.CodeNotFound, smcp.CodeNotFound)
		if e, _ := rpc.SMCPError(err); !strings.Contains(e.Message, "unknown event "+event) {
			t.Fatalf("message %q does not name the unknown event %s", e.Message, event)
		}
	}
	_, err := cl.GetSkills(ctx, &smcpv1.GetSkillsRequest{OfficeId: officeA, Computer: "pc-02"})
	unknown(t, err, smcp.EventGetSkills)
	if e, _ := rpc.SMCPError(err); !strings.Contains(e.Message, "office speaks 0.2") {
		t.Fatalf("message %q does not name the office's version", e.Message)
	}
	_, err = cl.GetSkill(ctx, &smcpv1.GetSkillRequest{OfficeId: officeA, Computer: "pc-02", Name: "pdf-tools"})
	unknown(t, err, smcp.EventGetSkill)
	_, err = cl.GetResources(ctx, &smcpv1.GetResourcesRequest{OfficeId: officeA, Computer: "pc-02", McpServer: "docs"})
	unknown(t, err, smcp.EventGetResources)
	got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-02", BlobHandle: "h"})
	unknown(t, got.err, smcp.EventGetBlob)
	path := writeRandomFile(t, t.TempDir(), "f.bin", 1000)
	_, sha := fileSHA256(t, path)
	_, err = putFile(ctx, cl, &smcpv1.PutBlobHeader{OfficeId: officeA, Computer: "pc-02", TotalSize: 1000, Sha256: sha}, path, 1000)
	unknown(t, err, smcp.EventPutBlob)
	pc02.mu.Lock()
	reached := len(pc02.requests)
	pc02.mu.Unlock()
	if reached != 0 {
		t.Fatalf("the 0.2 computer received %d requests", reached)
	}

	if _, err := cl.GetSkills(ctx, &smcpv1.GetSkillsRequest{OfficeId: officeB, Computer: "pc-03"}); err != nil {
		t.Fatalf("GetSkills in a 0.3 office: %v", err)
	}
	_, err = putFile(ctx, cl, &smcpv1.PutBlobHeader{OfficeId: officeB, Computer: "pc-03", TotalSize: 1000, Sha256: sha}, path, 1000)
	unknown(t, err, smcp.EventPutBlob)
	if e, _ := rpc.SMCPError(err); !strings.Contains(e.Message, "office speaks 0.3") {
		t.Fatalf("message %q does not name the office's version", e.Message)
	}
}

// TestVersionsShown: ListOffices, ListRoom and WatchOffice show each
// office's version, and ListRoom the a2c_version of 0.3+ members.
func TestVersionsShown(t *testing.T) {
	g := startGateway(t)
	startComputer(t, g, "pc-02", officeA)
	ctx := testContext(t)
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)
	w := openWatch(t, ctx, cl, officeB)
	startBlobComputer(t, g, "pc-04", officeB, "0.4.0")
	if n := w.next(t, smcp.NotifyEnterOffice); n.GetOfficeVersion() != "0.4" {
		t.Fatalf("enter_office of the first member: %v", n)
	}
	w.close(t)

	offices, err := cl.ListOffices(ctx, &smcpv1.ListOfficesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, o := range offices.GetOffices() {
		versions[o.GetOfficeId()] = o.GetVersion()
	}
	if versions[officeA] != "0.2" || versions[officeB] != "0.4" {
		t.Fatalf("ListOffices: %v", offices)
	}
	room, err := cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeB})
	if err != nil {
		t.Fatal(err)
	}
	if room.GetOfficeVersion() != "0.4" || len(room.GetSessions()) != 1 || room.GetSessions()[0].GetA2CVersion() != "0.4.0" {
		t.Fatalf("ListRoom of the 0.4 office: %v", room)
	}
	room, err = cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: officeA})
	if err != nil {
		t.Fatal(err)
	}
	// 0.2 answers are as before: no a2c_version.
	if room.GetOfficeVersion() != "0.2" || len(room.GetSessions()) != 1 || room.GetSessions()[0].A2CVersion != nil {
		t.Fatalf("ListRoom of the 0.2 office: %v", room)
	}
	// A watch of an office with members knows its version from the start.
	w = openWatch(t, ctx, cl, officeA)
	pc2 := startComputer(t, g, "pc-02b", officeA)
	if n := w.next(t, smcp.NotifyEnterOffice); n.GetOfficeVersion() != "0.2" {
		t.Fatalf("enter_office in the 0.2 office: %v", n)
	}
	if err := pc2.c.Emit(smcp.EventUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: "pc-02b"}); err != nil {
		t.Fatal(err)
	}
	if n := w.next(t, smcp.NotifyUpdateToolList); n.GetOfficeVersion() != "0.2" {
		t.Fatalf("update_tool_list in the 0.2 office: %v", n)
	}
	w.close(t)
}

// encodingSeen records the message encoding of the streams answered.
type encodingSeen struct {
	base http.RoundTripper
	mu   sync.Mutex
	got  []string
}

func (e *encodingSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := e.base.RoundTrip(r)
	if err == nil {
		e.mu.Lock()
		e.got = append(e.got, res.Header.Get("Connect-Content-Encoding")+res.Header.Get("Grpc-Encoding"))
		e.mu.Unlock()
	}
	return res, err
}

// ReadBlob's chunks go uncompressed even to a client that accepts gzip
// (connect-go's clients all do): a blob is mostly compressed already
// (images, archives), and gzip of its chunks was half the gateway's CPU
// per byte moved, at 40 MB/s.
func TestReadBlobUncompressed(t *testing.T) {
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	b := pc.addBlob(t, writeRandomFile(t, t.TempDir(), "data.bin", 300_000), "application/octet-stream")
	for _, p := range []protocol{protocols[0], protocols[2]} {
		seen := &encodingSeen{base: p.http().Transport}
		cl := smcpv1connect.NewAgentServiceClient(&http.Client{Transport: seen}, g.URL,
			append([]connect.ClientOption{connecttest.Headers("x-api-key", keyAgent)}, p.opts...)...)
		got := readBlob(transferContext(t), cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-data.bin"})
		if got.err != nil || got.sha != b.sha {
			t.Fatalf("%s: %+v", p.name, got)
		}
		seen.mu.Lock()
		if len(seen.got) != 1 || seen.got[0] != "" && seen.got[0] != "identity" {
			t.Errorf("%s: the stream's encoding is %q, want none", p.name, seen.got)
		}
		seen.mu.Unlock()
	}
}

// TestReadBlobChunksAreRateLimited: a ReadBlob's chunk requests take tokens
// of the Socket.IO event rate (here a burst of 5 and almost no refill): the
// stream asks the computer for at most five chunks, then fails with
// ResourceExhausted naming the limit, since the sixth token would come after
// its deadline. (Fewer than five may reach the computer: the refusal of the
// sixth ends the stream while admitted requests of its window are on their
// way, and they are cancelled.)
func TestReadBlobChunksAreRateLimited(t *testing.T) {
	g := startGateway(t, func(c *gateway.Config) { c.SIO.EventsPerSecond, c.SIO.EventBurst = 0.001, 5 })
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	pc.addBlob(t, writeRandomFile(t, t.TempDir(), "data.bin", 1<<20), "application/octet-stream")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cl := newClient(t, g, protocols[0], "x-api-key", keyAgent)
	got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-data.bin",
		MaxChunkBytes: new(int64(rpc.MinBlobChunkBytes))})
	if connect.CodeOf(got.err) != connect.CodeResourceExhausted || !strings.Contains(got.err.Error(), "rate limit") {
		t.Fatalf("ReadBlob beyond the rate: %v", got.err)
	}
	pc.mu.Lock()
	asked := pc.getBlobs
	pc.mu.Unlock()
	if asked < 1 || asked > 5 {
		t.Fatalf("the computer was asked %d chunks, want 1 to the burst's 5", asked)
	}
}
