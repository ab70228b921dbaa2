// Package uploads is a computer's client:put_blob (PROTOCOL-0.4.md §5.8,
// §7 C7): agents upload files, chunk by chunk, into the landing root the
// computer's user chose (--landing-root), and nowhere else.
//
// An upload writes <upload_id>.part in the root, hashing as it goes; at
// eof, with the size and SHA-256 the first chunk declared, it is renamed
// atomically to <upload_id>-<name> (name: the sanitized name_hint). Any
// refusal of a started upload discards it (the agent starts over, §5.8);
// an upload idle for longer than the idle timeout is discarded too, and
// .part files left by an earlier process are removed at start. Each .part
// is locked while its upload is in progress, so that a second computer on
// the same landing root tells an orphan from another process's upload and
// removes only the former.
package uploads

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults (§7 C7).
const (
	DefaultMaxConcurrent = 4
	DefaultIdleTimeout   = 120 * time.Second
	DefaultMaxSize       = 100 << 20
	maxHintLen           = 128
)

// Reasons of 4019 (§6).
const (
	ReasonInvalidUpload      = "invalid_upload"
	ReasonInvalidDeclaration = "invalid_declaration"
	ReasonRange              = "range"
	ReasonTooLarge           = "too_large"
	ReasonBusy               = "busy"
	ReasonForbidden          = "forbidden"
	ReasonIntegrity          = "integrity"
	ReasonIOError            = "io_error"
)

// Options configure a Manager.
type Options struct {
	// Root is the landing root; "" refuses every upload (forbidden).
	Root string
	// MaxConcurrent bounds the uploads in progress (default 4).
	MaxConcurrent int
	// IdleTimeout discards an upload without a chunk for this long
	// (default 120 s).
	IdleTimeout time.Duration
	// MaxSize is the largest upload (default 100 MiB).
	MaxSize int64
	// QuotaBytes and QuotaFiles bound the landing root: the bytes of its
	// files (landed, and in progress counted at their declared size) and
	// their number. An upload that would go over either is refused at its
	// first chunk, before a byte is written. 0: no bound.
	QuotaBytes int64
	QuotaFiles int
	Logger     *slog.Logger
}

// Manager lands uploads.
type Manager struct {
	opts     Options
	log      *slog.Logger
	root     *os.Root // nil: uploads refused
	rootPath string   // real absolute path of the root

	mu  sync.Mutex
	ups map[string]*upload

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type upload struct {
	mu     sync.Mutex
	id     string
	agent  string
	name   string // final file name
	total  int64
	want   string // declared hex SHA-256, lower case
	got    int64
	h      hash.Hash
	f      *os.File
	last   time.Time
	closed bool
}

var partName = regexp.MustCompile(`^[0-9a-f]{32}\.part$`)

// New makes a Manager. With a root, it removes the .part files an earlier
// process left there and starts the idle sweeper; Close stops it.
func New(opts Options) (*Manager, error) {
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Manager{opts: opts, log: opts.Logger.With("component", "uploads"), ups: map[string]*upload{}}
	if opts.Root == "" {
		return m, nil
	}
	abs, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("uploads: landing root: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("uploads: landing root: %w", err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("uploads: landing root %s is not a folder", opts.Root)
	}
	if m.root, err = os.OpenRoot(real); err != nil {
		return nil, fmt.Errorf("uploads: landing root: %w", err)
	}
	m.rootPath = real
	m.collectOrphans()
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sweep(ctx)
	}()
	return m, nil
}

// Close stops the sweeper and discards the uploads in progress.
func (m *Manager) Close() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	m.wg.Wait()
	m.mu.Lock()
	ups := m.ups
	m.ups = map[string]*upload{}
	m.mu.Unlock()
	for _, u := range ups {
		m.discard(u)
	}
	m.root.Close()
}

// Root is the landing root's real path ("" when uploads are refused).
func (m *Manager) Root() string { return m.rootPath }

// InProgress counts the uploads in progress.
func (m *Manager) InProgress() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ups)
}

// collectOrphans removes the .part files of uploads no process owns.
func (m *Manager) collectOrphans() {
	entries, err := fs.ReadDir(m.root.FS(), ".")
	if err != nil {
		m.log.Warn("read landing root", "err", err)
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !partName.MatchString(e.Name()) {
			continue
		}
		orphan, err := m.orphan(e.Name())
		switch {
		case err != nil:
			m.log.Warn("upload left in place: cannot tell whether a process owns it", "file", e.Name(), "err", err)
			continue
		case !orphan:
			continue // another process's upload in progress
		}
		if err := m.root.Remove(e.Name()); err != nil {
			m.log.Warn("remove orphaned upload", "file", e.Name(), "err", err)
		} else {
			m.log.Info("orphaned upload removed", "file", e.Name())
		}
	}
}

// orphan reports whether no process holds the lock of the .part name.
func (m *Manager) orphan(name string) (bool, error) {
	f, err := m.root.Open(name)
	if err != nil {
		return false, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	return tryLock(f)
}

func (m *Manager) sweep(ctx context.Context) {
	t := time.NewTicker(max(m.opts.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var idle []*upload
			m.mu.Lock()
			for id, u := range m.ups {
				u.mu.Lock()
				if now.Sub(u.last) > m.opts.IdleTimeout {
					idle = append(idle, u)
					delete(m.ups, id)
				}
				u.mu.Unlock()
			}
			m.mu.Unlock()
			for _, u := range idle {
				m.log.Info("idle upload discarded", "upload_id", u.id, "received", u.got, "total_size", u.total)
				m.discard(u)
			}
		}
	}
}

// EndAgent discards the uploads agent has in progress: they belong to it
// and end with it (it left the office, or its connection did), freeing
// their slots and their room in the landing root at once rather than after
// the idle timeout. It returns how many there were.
func (m *Manager) EndAgent(agent string) int {
	var ended []*upload
	m.mu.Lock()
	for id, u := range m.ups {
		if u.agent == agent {
			ended = append(ended, u)
			delete(m.ups, id)
		}
	}
	m.mu.Unlock()
	for _, u := range ended {
		m.log.Info("upload discarded: its agent left", "upload_id", u.id, "agent", agent)
		m.discard(u)
	}
	return len(ended)
}

// discard closes and removes an upload's .part (it is out of the map).
func (m *Manager) discard(u *upload) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.closed = true
	u.f.Close()
	if err := m.root.Remove(u.id + ".part"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("remove discarded upload", "upload_id", u.id, "err", err)
	}
}

// Ret is client:put_blob's answer in its wire form.
type Ret struct {
	UploadID    string `json:"upload_id"`
	ChunkOffset int64  `json:"chunk_offset"`
	LandingPath string `json:"landing_path,omitempty"`
	TotalSize   *int64 `json:"total_size,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	ReqID       string `json:"req_id"`
}

func refuse(reason, format string, args ...any) *smcp.Error {
	return smcp.Errorf(smcp.CodeBlobWriteFailed, format, args...).WithDetails(map[string]any{"reason": reason})
}

// Put takes one chunk from agent.
func (m *Manager) Put(agent string, req *smcpv1.PutBlobReq) (*Ret, error) {
	if m.root == nil {
		return nil, refuse(ReasonForbidden, "this computer accepts no uploads (no landing root)")
	}
	data, err := base64.StdEncoding.DecodeString(req.GetBlob())
	if req.UploadId == nil || req.GetUploadId() == "" {
		if err != nil {
			return nil, refuse(ReasonIntegrity, "blob is not base64")
		}
		return m.first(agent, req, data)
	}
	m.mu.Lock()
	u, ok := m.ups[req.GetUploadId()]
	if ok && u.agent != agent {
		ok = false
	}
	m.mu.Unlock()
	if !ok {
		return nil, refuse(ReasonInvalidUpload, "no upload %q in progress", req.GetUploadId())
	}
	switch {
	case err != nil:
		return nil, m.fail(u, refuse(ReasonIntegrity, "blob is not base64"))
	case req.TotalSize != nil || req.Sha256 != nil || req.NameHint != nil:
		return nil, m.fail(u, refuse(ReasonInvalidDeclaration, "only the first chunk declares total_size, sha256 and name_hint"))
	}
	return m.write(u, req, data)
}

func (m *Manager) first(agent string, req *smcpv1.PutBlobReq, data []byte) (*Ret, error) {
	if req.GetChunkOffset() != 0 {
		return nil, refuse(ReasonRange, "the first chunk starts at offset 0")
	}
	want := strings.ToLower(req.GetSha256())
	if req.TotalSize == nil || req.GetTotalSize() < 1 || len(want) != 64 {
		return nil, refuse(ReasonInvalidDeclaration, "the first chunk declares total_size >= 1 and a hex sha256")
	}
	if _, err := hex.DecodeString(want); err != nil {
		return nil, refuse(ReasonInvalidDeclaration, "sha256 is not hex")
	}
	if req.GetTotalSize() > m.opts.MaxSize {
		e := refuse(ReasonTooLarge, "%d bytes is more than this computer accepts (%d)", req.GetTotalSize(), m.opts.MaxSize)
		e.Details["max_size"] = m.opts.MaxSize
		return nil, e
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, refuse(ReasonIOError, "upload id")
	}
	id := hex.EncodeToString(b[:])
	name := id
	if h := SanitizeName(req.GetNameHint()); h != "" {
		name += "-" + h
	}
	m.mu.Lock()
	if len(m.ups) >= m.opts.MaxConcurrent {
		m.mu.Unlock()
		return nil, refuse(ReasonBusy, "%d uploads in progress; try again later", m.opts.MaxConcurrent)
	}
	// Under m.mu: two first chunks cannot both take the last room.
	if e := m.checkQuota(req.GetTotalSize()); e != nil {
		m.mu.Unlock()
		return nil, e
	}
	f, err := m.root.OpenFile(id+".part", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		m.mu.Unlock()
		if errors.Is(err, fs.ErrPermission) {
			return nil, refuse(ReasonForbidden, "the landing root is not writable")
		}
		m.log.Warn("create upload", "err", err)
		return nil, refuse(ReasonIOError, "cannot create the upload file")
	}
	if locked, err := tryLock(f); !locked {
		// Only a computer starting on this root could then take the upload
		// for an orphan: it goes on, unlocked.
		m.log.Warn("upload not locked", "upload_id", id, "err", err)
	}
	u := &upload{id: id, agent: agent, name: name, total: req.GetTotalSize(), want: want, h: sha256.New(), f: f, last: time.Now()}
	m.ups[id] = u
	m.mu.Unlock()
	m.log.Info("upload started", "upload_id", id, "agent", agent, "total_size", u.total)
	return m.write(u, req, data)
}

// checkQuota refuses an upload of size that would take the landing root
// over QuotaBytes or QuotaFiles (m.mu held). The root's files are counted
// as they are on disk (what the user removed frees room), an upload in
// progress at its declared size, not at what it wrote so far.
func (m *Manager) checkQuota(size int64) *smcp.Error {
	if m.opts.QuotaBytes <= 0 && m.opts.QuotaFiles <= 0 {
		return nil
	}
	var used int64
	files := 0
	entries, err := fs.ReadDir(m.root.FS(), ".")
	if err != nil {
		m.log.Warn("read landing root", "err", err)
		return refuse(ReasonIOError, "cannot read the landing root")
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if id, ok := strings.CutSuffix(e.Name(), ".part"); ok {
			if _, mine := m.ups[id]; mine {
				continue // counted below at its declared size
			}
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		used += info.Size()
		files++
	}
	for _, u := range m.ups {
		used += u.total
		files++
	}
	switch {
	case m.opts.QuotaFiles > 0 && files+1 > m.opts.QuotaFiles:
		e := refuse(ReasonTooLarge, "the landing root holds %d files, its quota is %d (smcp computer --landing-quota-files): remove landed files first",
			files, m.opts.QuotaFiles)
		e.Details["quota_files"], e.Details["files"] = m.opts.QuotaFiles, files
		return e
	case m.opts.QuotaBytes > 0 && used+size > m.opts.QuotaBytes:
		e := refuse(ReasonTooLarge, "%d bytes would take the landing root to %d, its quota is %d (smcp computer --landing-quota-bytes): remove landed files first",
			size, used+size, m.opts.QuotaBytes)
		e.Details["quota_bytes"], e.Details["used_bytes"] = m.opts.QuotaBytes, used
		return e
	}
	return nil
}

// fail discards a started upload and returns e.
func (m *Manager) fail(u *upload, e *smcp.Error) error {
	m.mu.Lock()
	if m.ups[u.id] == u {
		delete(m.ups, u.id)
	}
	m.mu.Unlock()
	m.discard(u)
	m.log.Info("upload refused", "upload_id", u.id, "reason", e.Details["reason"], "err", e.Message)
	return e
}

func (m *Manager) write(u *upload, req *smcpv1.PutBlobReq, data []byte) (*Ret, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, refuse(ReasonInvalidUpload, "upload %q was discarded", u.id)
	}
	u.last = time.Now()
	off := req.GetChunkOffset()
	if off != u.got {
		got := u.got
		u.mu.Unlock()
		e := refuse(ReasonRange, "chunk_offset %d, but %d bytes were received", off, got)
		e.Details["expected_offset"] = got
		return nil, m.fail(u, e)
	}
	if u.got+int64(len(data)) > u.total {
		u.mu.Unlock()
		return nil, m.fail(u, refuse(ReasonRange, "the chunk goes past the declared total_size %d", u.total))
	}
	if _, err := u.f.Write(data); err != nil {
		u.mu.Unlock()
		m.log.Warn("write upload", "upload_id", u.id, "err", err)
		return nil, m.fail(u, refuse(ReasonIOError, "cannot write the upload"))
	}
	u.h.Write(data)
	u.got += int64(len(data))
	if !req.GetEof() {
		u.mu.Unlock()
		return &Ret{UploadID: u.id, ChunkOffset: off, ReqID: req.GetReqId()}, nil
	}
	got, sum := u.got, hex.EncodeToString(u.h.Sum(nil))
	u.mu.Unlock()
	if got != u.total {
		return nil, m.fail(u, refuse(ReasonRange, "eof after %d bytes; %d were declared", got, u.total))
	}
	if sum != u.want {
		return nil, m.fail(u, refuse(ReasonIntegrity, "the bytes received do not have the declared sha256"))
	}
	u.mu.Lock()
	err := u.f.Sync()
	if cerr := u.f.Close(); err == nil {
		err = cerr
	}
	u.closed = true
	u.mu.Unlock()
	if err == nil {
		err = m.root.Rename(u.id+".part", u.name)
	}
	m.mu.Lock()
	delete(m.ups, u.id)
	m.mu.Unlock()
	if err != nil {
		_ = m.root.Remove(u.id + ".part")
		m.log.Warn("land upload", "upload_id", u.id, "err", err)
		return nil, refuse(ReasonIOError, "cannot land the upload")
	}
	m.log.Info("upload landed", "upload_id", u.id, "file", u.name, "total_size", got)
	// The landed file's name in the landing root: agents pass it on to
	// tools, which find it there; the host's folders are not theirs to see.
	return &Ret{UploadID: u.id, ChunkOffset: off, LandingPath: u.name, TotalSize: &got, SHA256: sum, ReqID: req.GetReqId()}, nil
}

// SanitizeName makes a name_hint a safe file name: its last path element,
// characters other than [A-Za-z0-9._-] as '_', no leading dots, dashes or
// underscores (no hidden files, no "..", no option-like names), at most 128
// bytes. "" when nothing is left.
func SanitizeName(hint string) string {
	if i := strings.LastIndexAny(hint, `/\`); i >= 0 {
		hint = hint[i+1:]
	}
	var b strings.Builder
	for _, r := range hint {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), "._-")
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	if len(s) > maxHintLen {
		s = s[len(s)-maxHintLen:] // keep the extension
		s = strings.TrimLeft(s, "._-")
	}
	return s
}
