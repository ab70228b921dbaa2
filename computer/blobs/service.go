package blobs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of §5.7 (python-sdk's and ours).
const (
	DefaultInlineBudget = 32 << 10
	DefaultChunk        = 256 << 10
	DefaultMaxSize      = 100 << 20
)

// Reasons of 4018 (§6).
const (
	ReasonInvalidHandle = "invalid_handle"
	ReasonForbidden     = "forbidden"
	ReasonGone          = "gone"
	ReasonRange         = "range"
)

// SkillOpener re-runs get_skill's checks for a skill handle (registry,
// orphan, sandbox, cap) and opens the file.
type SkillOpener func(name, rel string) (*Content, *smcp.Error)

// Options configure a Service.
type Options struct {
	// Skills opens skill files; nil refuses skill handles (forbidden).
	Skills SkillOpener
	// InlineBudget: tool-result items up to this size stay inline
	// (default DefaultInlineBudget).
	InlineBudget int
	// Chunk is the largest chunk sent (default and cap DefaultChunk, which
	// keeps a base64 answer well inside a 1 MB message limit).
	Chunk int
	// MaxSize is the largest blob (default DefaultMaxSize).
	MaxSize int64
	// SpoolDir, SpoolBytes, SpoolItems: see NewSpool.
	SpoolDir   string
	SpoolBytes int64
	SpoolItems int
	Logger     *slog.Logger
}

// Service mints handles and serves client:get_blob.
type Service struct {
	opts   Options
	log    *slog.Logger
	signer *Signer
	spool  *Spool
}

// New makes a Service with a fresh signing key and spool.
func New(opts Options) (*Service, error) {
	if opts.InlineBudget <= 0 {
		opts.InlineBudget = DefaultInlineBudget
	}
	if opts.Chunk <= 0 {
		opts.Chunk = DefaultChunk
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	signer, err := NewSigner()
	if err != nil {
		return nil, err
	}
	spool, err := NewSpool(opts.SpoolDir, opts.SpoolBytes, opts.SpoolItems)
	if err != nil {
		return nil, err
	}
	return &Service{opts: opts, log: opts.Logger.With("component", "blobs"), signer: signer, spool: spool}, nil
}

// Close deletes the spool.
func (s *Service) Close() {
	if err := s.spool.Close(); err != nil {
		s.log.Warn("remove blob spool", "err", err)
	}
}

// InlineBudget is the largest inline item or skill body.
func (s *Service) InlineBudget() int { return s.opts.InlineBudget }

// Spool is the service's spool (its bounds and contents, for tests and
// diagnostics).
func (s *Service) Spool() *Spool { return s.spool }

// MintSkill returns the handle of a skill file.
func (s *Service) MintSkill(name, rel string) string {
	return s.signer.Mint(Ref{Kind: KindSkill, Name: name, RelPath: rel})
}

func blobError(reason, format string, args ...any) *smcp.Error {
	return smcp.Errorf(smcp.CodeBlobNotAccessible, format, args...).WithDetails(map[string]any{"reason": reason})
}

// GetBlob serves one chunk: offset (absolute) and maxChunk (<= 0: the
// default). Every call re-checks the handle's source.
// The answer is the generated message: smcp.Marshal writes its sizes and
// offsets as JSON numbers, in the protocol's field order.
func (s *Service) GetBlob(handle string, offset, maxChunk int64) (*smcpv1.GetBlobRet, error) {
	ref, err := s.signer.Open(handle)
	if err != nil {
		return nil, blobError(ReasonInvalidHandle, "not a blob handle of this computer")
	}
	c, e := s.resolve(ref)
	if e != nil {
		return nil, e
	}
	defer func() {
		if c.Closer != nil {
			c.Closer.Close()
		}
	}()
	if offset < 0 || offset > c.Size {
		e := blobError(ReasonRange, "chunk_offset %d is outside 0..%d", offset, c.Size)
		e.Details["total_size"] = c.Size
		return nil, e
	}
	chunk := int64(s.opts.Chunk)
	if maxChunk > 0 && maxChunk < chunk {
		chunk = maxChunk
	}
	n := min(chunk, c.Size-offset)
	buf := make([]byte, n)
	if _, err := c.R.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		// The source shrank or vanished under us.
		return nil, blobError(ReasonGone, "the blob's source changed while reading")
	}
	return &smcpv1.GetBlobRet{
		BlobHandle: handle, MimeType: c.MIME, TotalSize: c.Size, Sha256: c.SHA256,
		ChunkOffset: offset, Eof: offset+n == c.Size, Blob: base64.StdEncoding.EncodeToString(buf),
	}, nil
}

// resolve re-runs the producer's checks for a handle's source.
func (s *Service) resolve(ref Ref) (*Content, *smcp.Error) {
	switch ref.Kind {
	case KindResult:
		c, err := s.spool.open(ref.ID)
		if err != nil {
			return nil, blobError(ReasonGone, "the tool result's blob is no longer held; call the tool again")
		}
		return c, nil
	case KindSkill:
		if s.opts.Skills == nil {
			return nil, blobError(ReasonForbidden, "this computer serves no skills")
		}
		c, e := s.opts.Skills(ref.Name, ref.RelPath)
		if e == nil {
			return c, nil
		}
		reason, _ := e.Details["reason"].(string)
		switch {
		case e.Code == smcp.CodeMCPServerNotFound, reason == "not_found":
			return nil, blobError(ReasonGone, "the skill or its file is gone")
		default:
			// The file is now outside the sandbox, a secret, or over the
			// cap: what was allowed when minted is not now.
			return nil, blobError(ReasonForbidden, "the skill file is no longer served")
		}
	}
	return nil, blobError(ReasonInvalidHandle, "not a blob handle of this computer")
}

// Sideband replaces the binary content items of a CallToolResult (wire
// form) larger than the inline budget by handles: data (image, audio) or
// resource.blob (embedded resource) becomes "" and the item's _meta gets
// a2c_blob_handle, a2c_total_size and a2c_sha256; mimeType stays. Items are
// judged one by one. An item over the blob cap cannot be served: the
// result becomes an isError result saying so (it could not be sent inline
// either).
func (s *Service) Sideband(result map[string]any) (map[string]any, error) {
	content, _ := result["content"].([]any)
	for i, it := range content {
		item, ok := it.(map[string]any)
		if !ok {
			continue
		}
		holder, key := item, "data"
		switch item["type"] {
		case "image", "audio":
		case "resource":
			res, ok := item["resource"].(map[string]any)
			if !ok {
				continue
			}
			holder, key = res, "blob"
		default:
			continue
		}
		enc, ok := holder[key].(string)
		if !ok || base64.StdEncoding.DecodedLen(len(enc)) <= s.opts.InlineBudget {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(data) <= s.opts.InlineBudget {
			continue // not ours to judge: pass it on as the server sent it
		}
		if int64(len(data)) > s.opts.MaxSize {
			return nil, fmt.Errorf("content item %d is %d bytes, more than the %d a computer serves", i, len(data), s.opts.MaxSize)
		}
		mime, _ := holder["mimeType"].(string)
		id, sum, err := s.spool.Put(data, mime)
		if err != nil {
			return nil, err
		}
		holder[key] = ""
		meta, _ := item["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["a2c_blob_handle"] = s.signer.Mint(Ref{Kind: KindResult, ID: id})
		meta["a2c_total_size"] = len(data)
		meta["a2c_sha256"] = sum
		item["_meta"] = meta
	}
	return result, nil
}
