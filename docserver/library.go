package docserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/regfile"
	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
)

// library is the set of documents parsed from the files under one root.
// Documents are immutable once parsed: a changed file gets a new *dpe.Document,
// so readers can use what they got from the library without holding a lock.
type library struct {
	root    *os.Root
	rootAbs string
	opts    Options
	log     *slog.Logger

	scanMu sync.Mutex // one scan at a time

	mu    sync.RWMutex
	files map[string]*fileEntry // by slash-separated path relative to the root
	byRef map[string]*fileEntry // served documents only
}

// fileEntry is what the library knows of one supported file. Exactly one of
// doc and err is set.
type fileEntry struct {
	rel     string
	size    int64
	modTime time.Time
	hash    [sha256.Size]byte
	doc     *dpe.Document
	err     error
}

// change is the difference a scan made.
type change struct {
	added   []*dpe.Document
	removed []*dpe.Document
	updated []*dpe.Document
	skipped []string // files that newly failed (or failed differently)
	dropped []string // skipped files that are gone
}

func (c change) empty() bool {
	return len(c.added) == 0 && len(c.removed) == 0 && len(c.updated) == 0 && len(c.skipped) == 0 && len(c.dropped) == 0
}

func newLibrary(dir string, opts Options, log *slog.Logger) (*library, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("document root %s: %w", dir, err)
	}
	// Resolve the root itself once: the watcher's events name real paths.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("document root: %w", err)
	}
	return &library{
		root:    root,
		rootAbs: abs,
		opts:    opts,
		log:     log,
		files:   map[string]*fileEntry{},
		byRef:   map[string]*fileEntry{},
	}, nil
}

func (l *library) close() error { return l.root.Close() }

// docRef derives a short, URL-safe, stable reference from a relative path:
// a slug of the file name for people, and a hash of the whole path so that
// "a/report.md" and "b/report.md" (or report.md and report.pdf) differ.
func docRef(rel string) string {
	base := strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(base) {
		if b.Len() >= 24 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.Trim(b.String(), "-")
	if slug == "" {
		slug = "doc"
	}
	sum := sha256.Sum256([]byte(rel))
	return slug + "-" + hex.EncodeToString(sum[:3])
}

// scan walks the root and brings the library up to date. Files whose size and
// modification time are unchanged are not read again unless they are in dirty
// (paths the watcher saw written: a rewrite within the clock's resolution
// keeps both). Content is compared by hash, so touching a file reports no
// content change but does update last_modified.
func (l *library) scan(dirty map[string]bool) (change, error) {
	l.scanMu.Lock()
	defer l.scanMu.Unlock()

	seen := map[string]bool{}
	var found []string
	var walkErrs []string
	err := fs.WalkDir(l.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			walkErrs = append(walkErrs, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		name := d.Name()
		if p != "." && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !formats.Supported(name) {
			return nil
		}
		if len(found) >= l.opts.MaxFiles {
			walkErrs = append(walkErrs, fmt.Sprintf("%s: more than %d supported files under the root; the rest are not served", p, l.opts.MaxFiles))
			return fs.SkipAll
		}
		found = append(found, p)
		return nil
	})
	if err != nil {
		return change{}, fmt.Errorf("scanning %s: %w", l.rootAbs, err)
	}
	for _, e := range walkErrs {
		l.log.Warn("scan", "error", e)
	}

	// Parse in parallel: at start every file is new, and XLSX and PDF
	// parsing is CPU-bound.
	l.mu.RLock()
	olds := make([]*fileEntry, len(found))
	for i, rel := range found {
		olds[i] = l.files[rel]
	}
	l.mu.RUnlock()
	loaded := make([]*fileEntry, len(found))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, rel := range found {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			loaded[i] = l.load(rel, olds[i], dirty[rel])
		}()
	}
	wg.Wait()

	var ch change
	next := map[string]*fileEntry{}
	for i, rel := range found {
		seen[rel] = true
		old, e := olds[i], loaded[i]
		next[rel] = e
		switch {
		case e.doc != nil && (old == nil || old.doc == nil):
			ch.added = append(ch.added, e.doc)
		case e.doc != nil && old.doc != e.doc:
			ch.updated = append(ch.updated, e.doc)
		case e.doc == nil && old != nil && old.doc != nil:
			ch.removed = append(ch.removed, old.doc)
		}
		if e.err != nil && (old == nil || old.err == nil || old.err.Error() != e.err.Error()) {
			ch.skipped = append(ch.skipped, rel)
			l.log.Warn("file not served", "path", rel, "error", e.err)
		}
	}
	l.mu.Lock()
	for rel, old := range l.files {
		switch {
		case seen[rel]:
		case old.doc != nil:
			ch.removed = append(ch.removed, old.doc)
		default:
			ch.dropped = append(ch.dropped, rel)
		}
	}
	l.files = next
	l.byRef = map[string]*fileEntry{}
	for _, e := range next {
		if e.doc != nil {
			l.byRef[e.doc.DocRef] = e
		}
	}
	l.mu.Unlock()
	return ch, nil
}

// load returns the entry for rel: old itself when nothing changed, otherwise
// a freshly parsed one.
func (l *library) load(rel string, old *fileEntry, dirty bool) *fileEntry {
	info, err := l.root.Stat(filepath.FromSlash(rel))
	if err != nil {
		// Symlinks leading out of the root land here: os.Root refuses them.
		return &fileEntry{rel: rel, err: fmt.Errorf("stat: %w", err)}
	}
	if !info.Mode().IsRegular() {
		return &fileEntry{rel: rel, err: errors.New("not a regular file")}
	}
	if old != nil && !dirty && old.size == info.Size() && old.modTime.Equal(info.ModTime()) {
		return old
	}
	e := &fileEntry{rel: rel, size: info.Size(), modTime: info.ModTime()}
	if info.Size() > l.opts.MaxFileSize {
		e.err = fmt.Errorf("file is %d bytes, over the limit of %d", info.Size(), l.opts.MaxFileSize)
		return e
	}
	data, err := l.read(rel)
	if err != nil {
		e.err = err
		return e
	}
	e.hash = sha256.Sum256(data)
	if old != nil && old.doc != nil && old.hash == e.hash {
		if old.modTime.Equal(info.ModTime()) {
			return old
		}
		// Same content, new time: only last_modified changes.
		doc := *old.doc
		doc.LastModified = info.ModTime()
		e.doc = &doc
		return e
	}
	doc, err := formats.Parse(rel, data, l.opts.Formats)
	if err != nil {
		e.err = err
		return e
	}
	doc.DocRef = docRef(rel)
	// Relative to the library (a URI reference): agents learn where a file
	// sits among the documents served, never the host's folders.
	doc.FileURI = (&url.URL{Path: rel}).String()
	doc.LastModified = info.ModTime()
	e.doc = doc
	return e
}

// read reads a file through the root (so it cannot escape it), refusing to
// read past the size limit even if the file grew since it was stat'ed.
func (l *library) read(rel string) ([]byte, error) {
	// Without blocking: a FIFO swapped in since the scan looked would hold
	// the reader until a writer came.
	f, _, err := regfile.OpenIn(l.root, filepath.FromSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, l.opts.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > l.opts.MaxFileSize {
		return nil, fmt.Errorf("file grew over the limit of %d bytes", l.opts.MaxFileSize)
	}
	return data, nil
}

// documents returns the served documents sorted by path.
func (l *library) documents() []*dpe.Document {
	l.mu.RLock()
	defer l.mu.RUnlock()
	entries := make([]*fileEntry, 0, len(l.byRef))
	for _, e := range l.byRef {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *fileEntry) int { return strings.Compare(a.rel, b.rel) })
	docs := make([]*dpe.Document, len(entries))
	for i, e := range entries {
		docs[i] = e.doc
	}
	return docs
}

func (l *library) document(ref string) (*dpe.Document, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.byRef[ref]
	if !ok {
		return nil, false
	}
	return e.doc, true
}

// skippedFile is a supported file that is not served, and why.
type skippedFile struct {
	Path   string
	Reason string
}

func (l *library) skipped() []skippedFile {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []skippedFile
	for _, e := range l.files {
		if e.err != nil {
			out = append(out, skippedFile{Path: e.rel, Reason: e.err.Error()})
		}
	}
	slices.SortFunc(out, func(a, b skippedFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// pathOf returns the relative path of a served document.
func (l *library) pathOf(ref string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e, ok := l.byRef[ref]; ok {
		return e.rel
	}
	return ""
}
