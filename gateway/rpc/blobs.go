package rpc

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	"golang.org/x/time/rate"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/blobread"
)

// BlobChunkBytes is the largest chunk the gateway asks for with
// client:get_blob and sends with client:put_blob: the SDKs' default chunk
// (PROTOCOL-0.4.md §5.7), about 350 KB once in base64 and its envelope,
// within every front end's message limit. A transfer holds about one chunk
// in the gateway, whatever the blob's size.
const BlobChunkBytes = 256 << 10

// MinBlobChunkBytes is the smallest max_chunk_bytes a ReadBlob may ask:
// every chunk is a client:get_blob to the computer, so a tiny one would
// make a blob's download thousands of times as many requests.
const MinBlobChunkBytes = 16 << 10

// DefaultEventsPerSecond is Options.EventsPerSecond's default, the
// Socket.IO front end's.
const DefaultEventsPerSecond = 2000

// ReadBlob streams a blob: client:get_blob requests for its chunks,
// blobread.DefaultWindow of them in flight, each chunk sent on in order as
// soon as it is checked, so the gateway holds at most a window of chunks
// whatever the blob's size. It checks what PROTOCOL-0.4.md §5.7 asks of an
// agent and fails the stream on the first violation. The message with eof
// set is sent only once the SHA-256 of every byte matches the declared
// sha256: a stream that ends without it must be discarded.
func (s *service) ReadBlob(ctx context.Context, req *smcpv1.ReadBlobRequest, stream *connect.ServerStream[smcpv1.ReadBlobResponse]) (err error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	ctx, end := c.bound(ctx)
	defer end(&err)
	chunk := int64(BlobChunkBytes)
	if req.MaxChunkBytes != nil {
		if req.GetMaxChunkBytes() < MinBlobChunkBytes {
			return toConnect(smcp.Errorf(smcp.CodeBadRequest, "max_chunk_bytes must be at least %d (each chunk is a request to the computer), not %d",
				MinBlobChunkBytes, req.GetMaxChunkBytes()))
		}
		chunk = min(chunk, req.GetMaxChunkBytes())
	}
	sess, _, err := s.act(ctx, req.GetOfficeId())
	if err != nil {
		return err
	}
	defer sess.Close()
	limit := s.chunkLimit()
	get := func(ctx context.Context, offset, max int64) (*smcpv1.GetBlobRet, error) {
		if err := limit(ctx); err != nil {
			return nil, err
		}
		ret := &smcpv1.GetBlobRet{}
		err := sess.Call(ctx, smcp.EventGetBlob, &smcpv1.GetBlobReq{
			Agent: c.agent, ReqId: newReqID(), Computer: req.GetComputer(),
			BlobHandle: req.GetBlobHandle(), ChunkOffset: &offset, MaxChunkBytes: &max,
		}, ret)
		return ret, err
	}
	var sendErr error
	_, err = blobread.Read(ctx, blobread.DefaultWindow, chunk, get, func(r *blobread.Reader, c blobread.Chunk) error {
		sendErr = stream.Send(&smcpv1.ReadBlobResponse{Data: c.Data, ChunkOffset: c.Offset, TotalSize: r.TotalSize(), Sha256: r.SHA256(),
			MimeType: r.MIMEType(), Eof: c.EOF})
		return sendErr
	})
	switch {
	case sendErr != nil:
		return sendErr
	case errors.Is(err, blobread.ErrChanged):
		s.log.Warn("blob read failed", "office", req.GetOfficeId(), "computer", req.GetComputer(), "err", err)
		return connect.NewError(connect.CodeAborted, err)
	case errors.Is(err, blobread.ErrCorrupt):
		s.log.Warn("blob read failed", "office", req.GetOfficeId(), "computer", req.GetComputer(), "err", err)
		return connect.NewError(connect.CodeDataLoss, err)
	case err != nil:
		return toConnect(err)
	}
	return nil
}

// chunkLimit is one ReadBlob stream's token bucket (Options.EventsPerSecond):
// its wait for a chunk request's token, failing when ctx ends first.
func (s *service) chunkLimit() func(ctx context.Context) error {
	o := &s.opts
	if o.EventsPerSecond < 0 {
		return func(context.Context) error { return nil }
	}
	l := rate.NewLimiter(rate.Limit(o.EventsPerSecond), o.EventBurst)
	return func(ctx context.Context) error {
		if err := l.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The wait would outlast ctx's deadline.
			return smcp.Errorf(codeRateLimited, "rate limit of %g chunk requests per second: the next one would come after the call's deadline",
				o.EventsPerSecond)
		}
		return nil
	}
}

// codeRateLimited is the Socket.IO front end's answer to an event beyond
// its rate (429, ResourceExhausted over Connect).
const codeRateLimited = 429

// PutBlob uploads the caller's stream to a computer with client:put_blob
// (PROTOCOL-0.4.md §5.8): chunks of BlobChunkBytes, in order, each after the
// previous one's ack. The last chunk (eof) is held until the caller's
// stream ends, so that a stream with more or fewer bytes than declared
// never lands a file; such an upload is abandoned on the computer, which
// collects it after its idle timeout (the protocol has no abort).
func (s *service) PutBlob(ctx context.Context, stream *connect.ClientStream[smcpv1.PutBlobRequest]) (_ *smcpv1.PutBlobResponse, err error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	// Bound before the first read: a client may hold the stream open
	// without sending.
	ctx, end := c.bound(ctx)
	defer end(&err)
	if !stream.Receive() {
		if err := stream.Err(); err != nil {
			return nil, err
		}
		return nil, toConnect(smcp.Errorf(smcp.CodeBadRequest, "empty upload: the first message must be the header"))
	}
	hdr := stream.Msg().GetHeader()
	switch {
	case hdr == nil:
		return nil, toConnect(smcp.Errorf(smcp.CodeBadRequest, "the first message must be the header"))
	case hdr.GetTotalSize() < 1:
		return nil, toConnect(smcp.Errorf(smcp.CodeBadRequest, "total_size must be at least 1, not %d", hdr.GetTotalSize()))
	case !blobread.IsSHA256(hdr.GetSha256()):
		return nil, toConnect(smcp.Errorf(smcp.CodeBadRequest, "sha256 must be a hex SHA-256"))
	}
	sess, _, err := s.act(ctx, hdr.GetOfficeId())
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ctx, cancel := context.WithCancel(ctx)
	up := &upload{sess: sess, agent: c.agent, hdr: hdr, sum: sha256.New(), buf: make([]byte, 0, BlobChunkBytes),
		spare: make([]byte, 0, BlobChunkBytes)}
	defer func() {
		cancel() // a chunk still in flight ends first
		_, _ = up.acked()
	}()
	for stream.Receive() {
		part, ok := stream.Msg().GetPart().(*smcpv1.PutBlobRequest_Data)
		if !ok {
			return nil, toConnect(smcp.Errorf(smcp.CodeBadRequest, "only the first message is a header; the next ones carry data"))
		}
		if err := up.write(ctx, part.Data); err != nil {
			return nil, up.fail(s, err)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	if got := up.queued + int64(len(up.buf)); got != hdr.GetTotalSize() {
		return nil, up.fail(s, smcp.Errorf(smcp.CodeBadRequest, "the upload ended after %d bytes, total_size is %d", got, hdr.GetTotalSize()))
	}
	ret, err := up.flush(ctx, true)
	if err != nil {
		return nil, up.fail(s, err)
	}
	if err := up.landed(ret); err != nil {
		return nil, up.fail(s, err)
	}
	return &smcpv1.PutBlobResponse{LandingPath: ret.GetLandingPath(), TotalSize: ret.GetTotalSize(), Sha256: ret.GetSha256(), UploadId: up.id}, nil
}

// upload is one PutBlob's state: at most two chunks of the caller's
// bytes, the one at the computer and the next being received.
type upload struct {
	sess   *core.Session
	agent  string
	hdr    *smcpv1.PutBlobHeader
	id     string // the computer's upload_id, from the first ack
	sent   int64  // bytes acknowledged by the computer
	queued int64  // bytes sent, acknowledged or not
	sum    hash.Hash
	buf    []byte // the bytes of the next chunk
	spare  []byte // the chunk in flight, then buf's next backing array
	// inFlight, when set, delivers the ack of the chunk in flight.
	inFlight chan putAck
}

type putAck struct {
	ret *smcpv1.PutBlobRet
	err error
}

// write adds the caller's bytes, sending every full chunk but the last.
func (u *upload) write(ctx context.Context, data []byte) error {
	total := u.hdr.GetTotalSize()
	if u.queued+int64(len(u.buf))+int64(len(data)) > total {
		return smcp.Errorf(smcp.CodeBadRequest, "the upload has more than total_size %d bytes", total)
	}
	for len(data) > 0 {
		if len(u.buf) == cap(u.buf) {
			if err := u.send(ctx, false); err != nil {
				return err
			}
		}
		n := min(len(data), cap(u.buf)-len(u.buf))
		u.buf = append(u.buf, data[:n]...)
		data = data[n:]
	}
	// A full chunk is sent once more bytes are known to follow it: the
	// chunk that reaches total_size is the eof one, sent at the end.
	if len(u.buf) == cap(u.buf) && u.queued+int64(len(u.buf)) < total {
		return u.send(ctx, false)
	}
	return nil
}

// send waits for the ack of the chunk in flight (chunks go one after the
// other's ack, PROTOCOL-0.4 §5.8), then sends the buffered bytes as the
// next chunk without waiting for its ack: the caller's next bytes are
// received meanwhile.
func (u *upload) send(ctx context.Context, eof bool) error {
	if _, err := u.acked(); err != nil {
		return err
	}
	req := &smcpv1.PutBlobReq{
		Agent: u.agent, ReqId: newReqID(), Computer: u.hdr.GetComputer(),
		ChunkOffset: u.queued, Eof: eof, Blob: base64.StdEncoding.EncodeToString(u.buf),
	}
	if u.queued == 0 {
		total, sha := u.hdr.GetTotalSize(), u.hdr.GetSha256()
		req.TotalSize, req.Sha256, req.NameHint = &total, &sha, u.hdr.NameHint
	} else {
		req.UploadId = &u.id
	}
	u.sum.Write(u.buf)
	u.queued += int64(len(u.buf))
	u.buf, u.spare = u.spare[:0], u.buf
	done := make(chan putAck, 1)
	u.inFlight = done
	go func() {
		ret := &smcpv1.PutBlobRet{}
		err := u.sess.Call(ctx, smcp.EventPutBlob, req, ret)
		done <- putAck{ret, err}
	}()
	return nil
}

// acked waits for the ack of the chunk in flight, if any, and checks it.
func (u *upload) acked() (*smcpv1.PutBlobRet, error) {
	if u.inFlight == nil {
		return nil, nil
	}
	a := <-u.inFlight
	u.inFlight = nil
	if a.err != nil {
		return nil, a.err
	}
	ret := a.ret
	if u.sent == 0 {
		if ret.GetUploadId() == "" {
			return nil, blobError(connect.CodeInternal, "the computer answered the first chunk without an upload_id")
		}
		u.id = ret.GetUploadId()
	}
	if ret.GetChunkOffset() != u.sent {
		return nil, blobError(connect.CodeInternal, "sent the chunk at offset %d, the computer acknowledged offset %d", u.sent, ret.GetChunkOffset())
	}
	u.sent = u.queued
	return ret, nil
}

// flush sends the buffered bytes as the last chunk and waits for its ack.
func (u *upload) flush(ctx context.Context, eof bool) (*smcpv1.PutBlobRet, error) {
	if err := u.send(ctx, eof); err != nil {
		return nil, err
	}
	return u.acked()
}

// landed checks the eof ack against the header and the bytes forwarded.
func (u *upload) landed(ret *smcpv1.PutBlobRet) error {
	sent := hex.EncodeToString(u.sum.Sum(nil))
	switch {
	case ret.GetLandingPath() == "":
		return blobError(connect.CodeInternal, "the computer answered the last chunk without a landing_path")
	case ret.GetTotalSize() != u.hdr.GetTotalSize():
		return blobError(connect.CodeDataLoss, "total_size mismatch: expected %d, the computer stored %d", u.hdr.GetTotalSize(), ret.GetTotalSize())
	case !strings.EqualFold(ret.GetSha256(), u.hdr.GetSha256()):
		return blobError(connect.CodeDataLoss, "sha256 mismatch: expected %s (declared), the computer stored %s", u.hdr.GetSha256(), ret.GetSha256())
	case !strings.EqualFold(sent, u.hdr.GetSha256()):
		// The computer should have refused it (4019 integrity).
		return blobError(connect.CodeDataLoss, "sha256 mismatch: expected %s (declared), actual %s (of the bytes sent), yet the computer accepted it", u.hdr.GetSha256(), sent)
	}
	return nil
}

// fail logs a failed upload and returns its RPC error.
func (u *upload) fail(s *service, err error) error {
	if !errors.Is(err, context.Canceled) {
		s.log.Warn("blob upload failed", "office", u.hdr.GetOfficeId(), "computer", u.hdr.GetComputer(),
			"upload_id", u.id, "sent", u.sent, "err", err)
	}
	return toConnect(err)
}

// blobError is a transfer's failure found by the gateway (the computer's
// own refusals are protocol errors with their SMCP code).
func blobError(code connect.Code, format string, args ...any) error {
	return connect.NewError(code, fmt.Errorf(format, args...))
}
