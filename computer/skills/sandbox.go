package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/regfile"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Reasons of 4017 (§6).
const (
	ReasonTraversal = "traversal"
	ReasonForbidden = "forbidden"
	ReasonNotFound  = "not_found"
	ReasonTooLarge  = "too_large"
)

// SkillEnv is the file of a skill's secrets: never served, whatever the path
// that reaches it.
const SkillEnv = ".skillenv"

// EntryFile is the skill's entry point, served without its front matter.
const EntryFile = "SKILL.md"

func notAccessible(reason, rel string) *smcp.Error {
	msg := map[string]string{
		ReasonTraversal: "rel_path leaves the skill's folder",
		ReasonForbidden: "rel_path names a file that is never served",
		ReasonNotFound:  "no such file in the skill",
		ReasonTooLarge:  "the file is larger than this computer serves",
	}[reason]
	return smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "%s", msg).
		WithDetails(map[string]any{"reason": reason, "rel_path": rel})
}

// cleanRel checks a rel_path lexically and returns it as a clean relative
// slash path: absolute paths, "..", backslashes and NULs are traversal; any
// segment that is a .skillenv (in any case: case-insensitive file systems
// open the same file) is forbidden, existing or not.
func cleanRel(rel string) (string, *smcp.Error) {
	if rel == "" || strings.ContainsAny(rel, "\\\x00") || strings.HasPrefix(rel, "/") || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "" {
		return "", notAccessible(ReasonTraversal, rel)
	}
	var segs []string
	for _, s := range strings.Split(rel, "/") {
		switch s {
		case "", ".":
			continue
		case "..":
			return "", notAccessible(ReasonTraversal, rel)
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return "", notAccessible(ReasonNotFound, rel)
	}
	for _, s := range segs {
		if strings.EqualFold(s, SkillEnv) {
			return "", notAccessible(ReasonForbidden, rel)
		}
	}
	return strings.Join(segs, "/"), nil
}

// resolve finds rel inside root (a real, symlink-free absolute path): the
// real path of the joined name must stay inside root, and no segment of it
// may be a .skillenv (a symlink "notes.txt -> .skillenv" is refused too).
// It returns the path relative to root, symlinks resolved.
func resolve(root, rel string) (string, *smcp.Error) {
	clean, e := cleanRel(rel)
	if e != nil {
		return "", e
	}
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(clean)))
	if err != nil {
		return "", notAccessible(ReasonNotFound, rel)
	}
	inside, err := filepath.Rel(root, real)
	if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) || filepath.IsAbs(inside) {
		return "", notAccessible(ReasonTraversal, rel)
	}
	for _, s := range strings.Split(filepath.ToSlash(inside), "/") {
		if strings.EqualFold(s, SkillEnv) {
			return "", notAccessible(ReasonForbidden, rel)
		}
	}
	return inside, nil
}

// Content is one file of a skill as the agent consumes it: SKILL.md from
// the end of its front matter, other files whole. It reads through a file
// opened inside the skill's root (os.Root), so a symlink swapped in after
// the checks cannot lead outside.
type Content struct {
	MIME   string
	Size   int64
	SHA256 string
	f      *os.File
	off    int64
}

// ReadAt reads the content (offsets from its start).
func (c *Content) ReadAt(p []byte, off int64) (int, error) {
	if off >= c.Size {
		return 0, io.EOF
	}
	if rest := c.Size - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	return c.f.ReadAt(p, c.off+off)
}

// Close closes the file.
func (c *Content) Close() error { return c.f.Close() }

// maxFrontMatter bounds the front matter read to find where the body starts.
const maxFrontMatter = 64 << 10

// open opens rel in the skill rooted at root, checked as resolve does, and
// refuses files over maxSize (too_large, with the size) before anything is
// read from them. Only regular files are served, decided without blocking
// (a FIFO would hold a thread until a writer came), and never a .skillenv
// under another name: the opened file is compared by identity (device and
// inode) with secrets, the skills' .skillenv files.
func open(root, rel string, maxSize int64, hashes *hashCache, secrets []fs.FileInfo) (*Content, *smcp.Error) {
	inside, e := resolve(root, rel)
	if e != nil {
		return nil, e
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, notAccessible(ReasonNotFound, rel)
	}
	defer r.Close()
	f, st, err := regfile.OpenIn(r, inside)
	switch {
	case errors.Is(err, regfile.ErrNotRegular) && st.IsDir():
		return nil, notAccessible(ReasonNotFound, rel)
	case errors.Is(err, regfile.ErrNotRegular):
		e := notAccessible(ReasonForbidden, rel)
		e.Message = "rel_path names something other than a regular file; only regular files are served"
		return nil, e
	case errors.Is(err, fs.ErrNotExist):
		return nil, notAccessible(ReasonNotFound, rel)
	case err != nil:
		// os.Root refuses a path that escapes (a symlink changed since
		// resolve looked): that is a traversal.
		return nil, notAccessible(ReasonTraversal, rel)
	}
	for _, sec := range secrets {
		if os.SameFile(st, sec) {
			f.Close()
			return nil, notAccessible(ReasonForbidden, rel)
		}
	}
	c := &Content{MIME: MIMEType(inside), f: f, Size: st.Size()}
	if filepath.ToSlash(inside) == EntryFile {
		head := make([]byte, min(st.Size(), maxFrontMatter))
		n, _ := io.ReadFull(f, head)
		c.off = int64(bodyOffset(head[:n]))
		c.Size -= c.off
	}
	if c.Size > maxSize {
		f.Close()
		e := notAccessible(ReasonTooLarge, rel)
		e.Details["total_size"] = c.Size
		return nil, e
	}
	sum, err := hashes.sum(c, st)
	if err != nil {
		f.Close()
		return nil, smcp.Errorf(smcp.CodeInternal, "read skill file: %v", err)
	}
	c.SHA256 = sum
	return c, nil
}

// hashCache remembers the SHA-256 of files by identity and change time, so
// that a blob drained in hundreds of chunks is hashed once, not per chunk.
type hashCache struct {
	mu sync.Mutex
	m  map[hashKey]string
}

type hashKey struct {
	name      string
	size, off int64
	mtime     time.Time
	sys       string // inode and device where the platform has them
}

const maxHashes = 512

func (h *hashCache) sum(c *Content, st fs.FileInfo) (string, error) {
	k := hashKey{name: c.f.Name(), size: st.Size(), off: c.off, mtime: st.ModTime(), sys: fileID(st)}
	h.mu.Lock()
	s, ok := h.m[k]
	h.mu.Unlock()
	if ok {
		return s, nil
	}
	d := sha256.New()
	if _, err := io.Copy(d, io.NewSectionReader(c, 0, c.Size)); err != nil {
		return "", fmt.Errorf("hash %s: %w", filepath.Base(c.f.Name()), err)
	}
	s = hex.EncodeToString(d.Sum(nil))
	h.mu.Lock()
	if h.m == nil || len(h.m) >= maxHashes {
		h.m = map[hashKey]string{}
	}
	h.m[k] = s
	h.mu.Unlock()
	return s, nil
}
