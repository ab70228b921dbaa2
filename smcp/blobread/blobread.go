// Package blobread checks a blob download as an agent must (PROTOCOL-0.4.md
// §5.7): the chunks of client:get_blob, in order, against the total_size and
// sha256 the first one declares. It holds one running hash, never the
// bytes: a front end hands each chunk on as it comes. Read keeps a window
// of chunk requests in flight through a function given to it; no
// networking here.
package blobread

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// ErrChanged marks a blob whose total_size or sha256 changed between
// chunks: §5.7 has the agent read it again from offset 0.
var ErrChanged = errors.New("blob changed during the transfer")

// ErrCorrupt marks chunks that break the rules: a bad declaration, a wrong
// offset, bytes past total_size, a wrong eof, or a sha256 mismatch.
var ErrCorrupt = errors.New("blob corrupt")

// Reader checks the chunks of one blob.
type Reader struct {
	started   bool
	totalSize int64
	sha       string
	mime      string

	offset int64 // bytes received so far
	sum    hash.Hash
	eof    bool
}

// Chunk is one checked chunk.
type Chunk struct {
	Data   []byte
	Offset int64
	EOF    bool
}

// Offset is where the next chunk starts.
func (r *Reader) Offset() int64 { return r.offset }

// EOF reports whether the last chunk was read and the blob's sha256 held.
func (r *Reader) EOF() bool { return r.eof }

// TotalSize, SHA256 and MIMEType are what the first chunk declared.
func (r *Reader) TotalSize() int64 { return r.totalSize }

// SHA256 is the declared hex SHA-256.
func (r *Reader) SHA256() string { return r.sha }

// MIMEType is the declared MIME type.
func (r *Reader) MIMEType() string { return r.mime }

// Next checks one answer of client:get_blob asked at r.Offset(). The chunk
// with EOF set is returned only once the SHA-256 of every byte matches.
func (r *Reader) Next(ret *smcpv1.GetBlobRet) (Chunk, error) {
	if !r.started {
		if ret.GetTotalSize() < 0 {
			return Chunk{}, fmt.Errorf("%w: the computer declared a negative total_size %d", ErrCorrupt, ret.GetTotalSize())
		}
		if !IsSHA256(ret.GetSha256()) {
			return Chunk{}, fmt.Errorf("%w: the computer declared sha256 %q, not a hex SHA-256", ErrCorrupt, ret.GetSha256())
		}
		r.started, r.totalSize, r.sha, r.mime, r.sum = true, ret.GetTotalSize(), ret.GetSha256(), ret.GetMimeType(), sha256.New()
	}
	if ret.GetTotalSize() != r.totalSize || !strings.EqualFold(ret.GetSha256(), r.sha) {
		return Chunk{}, fmt.Errorf("%w: it changed during the read at offset %d (total_size %d then %d, sha256 %s then %s); read it again",
			ErrChanged, r.offset, r.totalSize, ret.GetTotalSize(), r.sha, ret.GetSha256())
	}
	if ret.GetChunkOffset() != r.offset {
		return Chunk{}, fmt.Errorf("%w: asked for the chunk at offset %d, the computer answered offset %d", ErrCorrupt, r.offset, ret.GetChunkOffset())
	}
	data, err := base64.StdEncoding.DecodeString(ret.GetBlob())
	if err != nil {
		return Chunk{}, fmt.Errorf("%w: the chunk at offset %d is not base64: %v", ErrCorrupt, r.offset, err)
	}
	end := r.offset + int64(len(data))
	switch {
	case end > r.totalSize:
		return Chunk{}, fmt.Errorf("%w: the chunk at offset %d of %d bytes runs past total_size %d", ErrCorrupt, r.offset, len(data), r.totalSize)
	case ret.GetEof() && end != r.totalSize:
		return Chunk{}, fmt.Errorf("%w: eof after %d bytes, total_size is %d", ErrCorrupt, end, r.totalSize)
	case !ret.GetEof() && end == r.totalSize:
		return Chunk{}, fmt.Errorf("%w: no eof with the chunk at offset %d that ends total_size %d", ErrCorrupt, r.offset, r.totalSize)
	case len(data) == 0 && !ret.GetEof():
		return Chunk{}, fmt.Errorf("%w: an empty chunk at offset %d before the end", ErrCorrupt, r.offset)
	}
	r.sum.Write(data)
	c := Chunk{Data: data, Offset: r.offset}
	r.offset = end
	if ret.GetEof() {
		if got := hex.EncodeToString(r.sum.Sum(nil)); !strings.EqualFold(got, r.sha) {
			return Chunk{}, fmt.Errorf("%w: sha256 mismatch: expected %s (declared by the computer), actual %s (of the %d bytes read)", ErrCorrupt, r.sha, got, r.offset)
		}
		r.eof, c.EOF = true, true
	}
	return c, nil
}

// IsSHA256 reports whether s is a hex SHA-256 (either case).
func IsSHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// DefaultWindow is how many client:get_blob requests a reader keeps in
// flight: one at a time, a chunk's two round trips (agent to gateway to
// computer) leave both ends idle most of the time; eight keep the
// computer's reads, the gateway and the agent's checks busy at once,
// for at most eight chunks held per transfer (bench -mode blob).
const DefaultWindow = 8

// Get asks the computer for the chunk of at most max bytes at offset
// (one client:get_blob).
type Get func(ctx context.Context, offset, max int64) (*smcpv1.GetBlobRet, error)

// Read drains a blob with up to window (at least 1) chunk requests of
// chunk bytes in flight, checking each answer in order (Reader.Next) and
// handing it to emit before the next is looked at. The first request goes
// alone: its answer declares the size, and the length of its chunk is the
// computer's cap, which the later requests then ask for. Should a chunk
// still come shorter than asked, the requests in flight are dropped and
// the window starts again where the blob stands. The first failing chunk
// in order ends the read with its error; the requests still in flight are
// cancelled and awaited before Read returns.
func Read(ctx context.Context, window int, chunk int64, get Get, emit func(*Reader, Chunk) error) (*Reader, error) {
	if window < 1 || chunk < 1 {
		return nil, fmt.Errorf("blobread: window %d and chunk %d must be at least 1", window, chunk)
	}
	type answer struct {
		ret *smcpv1.GetBlobRet
		err error
	}
	type request struct {
		offset int64
		done   chan answer
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait: the requests in flight end first
	r := &Reader{}
	var queue []request
	var next int64 // offset of the next request
	ask := func() {
		req := request{offset: next, done: make(chan answer, 1)}
		wg.Go(func() {
			ret, err := get(ctx, req.offset, chunk)
			req.done <- answer{ret, err}
		})
		queue = append(queue, req)
		next += chunk
	}
	for !r.EOF() {
		if len(queue) == 0 {
			next = r.Offset()
			ask()
		}
		for r.started && len(queue) < window && next < r.totalSize {
			ask()
		}
		req := queue[0]
		queue = queue[1:]
		var a answer
		select {
		case a = <-req.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err != nil {
			return nil, fmt.Errorf("get_blob at offset %d: %w", req.offset, a.err)
		}
		if req.offset != r.Offset() {
			// An earlier chunk was shorter than asked: the answers in
			// flight do not follow on from it.
			queue = nil
			continue
		}
		first := !r.started
		c, err := r.Next(a.ret)
		if err != nil {
			return nil, err
		}
		if err := emit(r, c); err != nil {
			return nil, err
		}
		if first && !c.EOF && int64(len(c.Data)) < chunk {
			chunk = int64(len(c.Data)) // the computer's cap
		}
	}
	return r, nil
}
