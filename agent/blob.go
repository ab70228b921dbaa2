package agent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/blobread"
)

// ChunkSize is the largest blob chunk asked for or sent: the protocol's
// default (PROTOCOL-0.4.md §5.7), whose base64 answer stays well inside the
// gateway's message limit.
const ChunkSize = 256 << 10

// ErrBlobIntegrity is a blob whose bytes do not match what the computer
// declared: its sha256 or total_size, or a declaration that changed between
// chunks. The bytes already written are not to be trusted.
var ErrBlobIntegrity = errors.New("blob integrity check failed")

// BlobInfo describes a blob read whole.
type BlobInfo struct {
	MIMEType string
	Size     int64
	SHA256   string
}

// GetResources lists the resources of one MCP server of a computer (0.3+).
func (a *Client) GetResources(ctx context.Context, req *smcpv1.GetResourcesReq) (*smcpv1.GetResourcesRet, error) {
	return request[*smcpv1.GetResourcesRet](ctx, a, smcp.EventGetResources, req)
}

// GetSkills lists a computer's skills (0.3+).
func (a *Client) GetSkills(ctx context.Context, computer string) (*smcpv1.GetSkillsRet, error) {
	return request[*smcpv1.GetSkillsRet](ctx, a, smcp.EventGetSkills, &smcpv1.GetSkillsReq{Computer: computer})
}

// GetSkill reads a file of a skill (relPath "" is its SKILL.md): the answer
// carries the body inline, or a blob handle to drain with ReadBlob (0.3+).
func (a *Client) GetSkill(ctx context.Context, computer, name, relPath string) (*smcpv1.GetSkillRet, error) {
	req := &smcpv1.GetSkillReq{Computer: computer, Name: name}
	if relPath != "" {
		req.RelPath = proto.String(relPath)
	}
	return request[*smcpv1.GetSkillRet](ctx, a, smcp.EventGetSkill, req)
}

// ReadBlob drains a blob handle of computer into w with client:get_blob,
// chunk by chunk (ChunkSize) with blobread.DefaultWindow requests in
// flight, hashing as it writes in order: the blob is never held whole. It
// fails with ErrBlobIntegrity when the bytes do not match the declared
// sha256 or total_size, or when the declaration changes between chunks; w
// then holds a partial or wrong copy, which the caller discards. ctx
// bounds the whole transfer.
func (a *Client) ReadBlob(ctx context.Context, computer, handle string, w io.Writer) (*BlobInfo, error) {
	get := func(ctx context.Context, offset, max int64) (*smcpv1.GetBlobRet, error) {
		return request[*smcpv1.GetBlobRet](ctx, a, smcp.EventGetBlob, &smcpv1.GetBlobReq{
			Computer: computer, BlobHandle: handle, ChunkOffset: proto.Int64(offset), MaxChunkBytes: proto.Int64(max),
		})
	}
	var werr error
	r, err := blobread.Read(ctx, blobread.DefaultWindow, ChunkSize, get, func(_ *blobread.Reader, c blobread.Chunk) error {
		if _, err := w.Write(c.Data); err != nil {
			werr = fmt.Errorf("write blob: %w", err)
			return werr
		}
		return nil
	})
	switch {
	case werr != nil:
		return nil, werr
	case errors.Is(err, blobread.ErrChanged), errors.Is(err, blobread.ErrCorrupt):
		return nil, fmt.Errorf("%w: %w", ErrBlobIntegrity, err)
	case err != nil:
		return nil, err
	}
	return &BlobInfo{MIMEType: r.MIMEType(), Size: r.TotalSize(), SHA256: r.SHA256()}, nil
}

// PutBlob uploads size bytes of r to computer with client:put_blob (0.4):
// chunks of at most ChunkSize, each sent after the previous one's ack (the
// protocol's order), the next one read, hashed and encoded while the
// previous is in flight; the first declares size, sum (hex sha256 of the
// bytes) and nameHint. The answer of the last chunk names the landed file;
// its sha256 and size are checked against the upload's. A failed upload is
// not resumed: the next attempt starts over.
func (a *Client) PutBlob(ctx context.Context, computer string, r io.Reader, size int64, sum, nameHint string) (*smcpv1.PutBlobRet, error) {
	if size < 1 {
		return nil, errors.New("put_blob: nothing to upload (the protocol refuses an empty file)")
	}
	h := sha256.New()
	buf := make([]byte, ChunkSize)
	var next int64 // offset of the chunk after the one prepared
	// prepare reads the chunk at offset and makes its request. The chunk's
	// bytes are in the request's base64 string, not in buf.
	prepare := func(offset int64) (*smcpv1.PutBlobReq, error) {
		n := int(min(int64(len(buf)), size-offset))
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return nil, fmt.Errorf("put_blob: read at offset %d: %w", offset, err)
		}
		next = offset + int64(n)
		h.Write(buf[:n])
		eof := offset+int64(n) == size
		req := &smcpv1.PutBlobReq{Computer: computer, ChunkOffset: offset, Eof: eof,
			Blob: base64.StdEncoding.EncodeToString(buf[:n])}
		if offset == 0 {
			req.TotalSize, req.Sha256 = proto.Int64(size), proto.String(sum)
			if nameHint != "" {
				req.NameHint = proto.String(nameHint)
			}
		}
		if eof {
			// The bytes read must be the declared ones: a file that changed
			// since it was hashed would land with a sha256 we vouched for.
			if got := hex.EncodeToString(h.Sum(nil)); got != sum {
				return nil, fmt.Errorf("%w: the bytes read hash to %s, not the declared %s (did the file change?)", ErrBlobIntegrity, got, sum)
			}
		}
		return req, nil
	}
	type answer struct {
		ret *smcpv1.PutBlobRet
		err error
	}
	req, err := prepare(0)
	if err != nil {
		return nil, err
	}
	var uploadID string
	for {
		offset := req.GetChunkOffset()
		done := make(chan answer, 1)
		go func() {
			ret, err := request[*smcpv1.PutBlobRet](ctx, a, smcp.EventPutBlob, req)
			done <- answer{ret, err}
		}()
		var nextReq *smcpv1.PutBlobReq
		var nextErr error
		if !req.GetEof() {
			nextReq, nextErr = prepare(next)
		}
		ans := <-done
		if ans.err != nil {
			return nil, fmt.Errorf("put_blob at offset %d: %w", offset, ans.err)
		}
		ret := ans.ret
		if offset == 0 {
			uploadID = ret.GetUploadId()
			if uploadID == "" {
				return nil, errors.New("put_blob: the computer's first answer has no upload_id")
			}
		}
		if ret.GetChunkOffset() != offset {
			return nil, fmt.Errorf("put_blob: sent offset %d, the computer acknowledged %d", offset, ret.GetChunkOffset())
		}
		if !req.GetEof() {
			if nextErr != nil {
				return nil, nextErr
			}
			req = nextReq
			req.UploadId = proto.String(uploadID)
			continue
		}
		if ret.GetLandingPath() == "" {
			return nil, errors.New("put_blob: the last answer has no landing_path")
		}
		if ret.GetSha256() != sum || ret.GetTotalSize() != size {
			return ret, fmt.Errorf("%w: the computer stored %d bytes with sha256 %s, sent %d with %s",
				ErrBlobIntegrity, ret.GetTotalSize(), ret.GetSha256(), size, sum)
		}
		return ret, nil
	}
}
