// Package blobread checks a blob download as an agent must (PROTOCOL-0.4.md
// §5.7): the chunks of client:get_blob, in order, against the total_size and
// sha256 the first one declares. It holds one running hash, never the
// bytes: a front end hands each chunk on as it comes. No networking.
package blobread

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

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
