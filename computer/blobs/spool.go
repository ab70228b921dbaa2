package blobs

import (
	"container/list"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Spool bounds (defaults).
const (
	DefaultSpoolBytes = 1 << 30 // 1 GiB of tool-result items on disk
	DefaultSpoolItems = 4096
)

// ErrGone is a spooled item evicted (or never spooled by this process).
var ErrGone = errors.New("blob gone")

// Spool keeps the bytes of large tool-result items on disk, in a private
// folder (0700) removed by Close, until an agent drains them.
//
// Eviction: first in, first out. When a new item would take the spool over
// its byte or item bound, the oldest items are deleted until it fits; a
// handle to an evicted item then answers 4018 gone (the agent asks the
// tool again). An item larger than the whole bound is refused. Reads in
// progress keep their open file; their next chunk finds the item gone.
type Spool struct {
	dir      string
	maxBytes int64
	maxItems int

	mu    sync.Mutex
	items map[string]*list.Element // id -> element of order (*spoolItem)
	order *list.List               // oldest first
	total int64
}

type spoolItem struct {
	id     string
	size   int64
	sha256 string
	mime   string
}

// NewSpool makes a spool in a new private folder under parent ("" = the
// system's temporary folder). Bounds <= 0 take the defaults.
func NewSpool(parent string, maxBytes int64, maxItems int) (*Spool, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultSpoolBytes
	}
	if maxItems <= 0 {
		maxItems = DefaultSpoolItems
	}
	dir, err := os.MkdirTemp(parent, "smcp-blobs-")
	if err != nil {
		return nil, fmt.Errorf("blobs: spool folder: %w", err)
	}
	return &Spool{dir: dir, maxBytes: maxBytes, maxItems: maxItems, items: map[string]*list.Element{}, order: list.New()}, nil
}

// Close deletes every item and the folder.
func (s *Spool) Close() error {
	s.mu.Lock()
	s.items, s.order, s.total = map[string]*list.Element{}, list.New(), 0
	s.mu.Unlock()
	return os.RemoveAll(s.dir)
}

// Put stores data and returns its id, hex SHA-256.
func (s *Spool) Put(data []byte, mime string) (id, sum string, err error) {
	size := int64(len(data))
	if size > s.maxBytes {
		return "", "", fmt.Errorf("blobs: %d bytes is more than the spool holds (%d)", size, s.maxBytes)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("blobs: spool id: %w", err)
	}
	id = hex.EncodeToString(b[:])
	h := sha256.Sum256(data)
	sum = hex.EncodeToString(h[:])
	if err := os.WriteFile(filepath.Join(s.dir, id), data, 0o600); err != nil {
		return "", "", fmt.Errorf("blobs: spool: %w", err)
	}
	s.mu.Lock()
	var evict []string
	for s.order.Len() > 0 && (s.total+size > s.maxBytes || s.order.Len()+1 > s.maxItems) {
		old := s.order.Remove(s.order.Front()).(*spoolItem)
		delete(s.items, old.id)
		s.total -= old.size
		evict = append(evict, old.id)
	}
	s.items[id] = s.order.PushBack(&spoolItem{id: id, size: size, sha256: sum, mime: mime})
	s.total += size
	s.mu.Unlock()
	for _, old := range evict {
		_ = os.Remove(filepath.Join(s.dir, old))
	}
	return id, sum, nil
}

// Len returns the items and bytes held.
func (s *Spool) Len() (items int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len(), s.total
}

// open returns an item's bytes, ErrGone when it is not held.
func (s *Spool) open(id string) (*Content, error) {
	if len(id) != 32 {
		return nil, ErrGone
	}
	if _, err := hex.DecodeString(id); err != nil {
		return nil, ErrGone
	}
	s.mu.Lock()
	el, ok := s.items[id]
	s.mu.Unlock()
	if !ok {
		return nil, ErrGone
	}
	it := el.Value.(*spoolItem)
	f, err := os.Open(filepath.Join(s.dir, id))
	if err != nil {
		return nil, ErrGone
	}
	return &Content{MIME: it.mime, Size: it.size, SHA256: it.sha256, R: f, Closer: f}, nil
}

// Content is a blob being read.
type Content struct {
	MIME   string
	Size   int64
	SHA256 string
	R      io.ReaderAt
	Closer io.Closer
}
