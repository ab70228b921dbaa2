package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// Scheme is the URI scheme of skills served by MCP servers.
const Scheme = "skill"

// Staging modes an MCP server declares in a skill resource's _meta.source
// (the skill channel's §3).
const (
	ModeMounted   = "mounted"   // _meta.mount_dir: the skill's folder on this machine
	ModeResources = "resources" // each file is a resource skill://host/skill/<rel_path>
	ModeArchive   = "archive"   // a tar.gz or zip to download: not supported here
)

// ReadFunc reads one resource of the MCP server being synchronized.
type ReadFunc func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)

// skillURI splits skill://host/skill[/rel...]: rel is "" for the skill itself.
func skillURI(uri string) (host, skill, rel string, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != Scheme || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", "", "", false
	}
	p := strings.TrimPrefix(u.Path, "/")
	skill, rel, _ = strings.Cut(p, "/")
	if skill == "" {
		return "", "", "", false
	}
	return u.Host, skill, rel, true
}

// SyncMCP replaces the skills of one MCP server (source mcp:<bundleID>)
// with those its resource list declares, staging them as needed. A skill
// that cannot be staged is left out with an error line. It reports (and
// tells OnChange) whether the server's skills changed.
func (r *Registry) SyncMCP(ctx context.Context, bundleID string, resources []*mcp.Resource, read ReadFunc) bool {
	if !ValidBundleID(bundleID) {
		r.log.Error("skills of an MCP server left out: its bundle id cannot name skills", "bundle_id", bundleID)
		return r.RemoveMCP(bundleID)
	}
	r.mu.RLock()
	prev := map[string]*Skill{}
	for _, s := range r.mcp[bundleID] {
		prev[s.ref.GetUri()] = s
	}
	r.mu.RUnlock()

	files := map[string][]*mcp.Resource{} // skill URI -> its file resources
	var skillsRes []*mcp.Resource
	for _, res := range resources {
		host, skill, rel, ok := skillURI(res.URI)
		if !ok {
			continue
		}
		if rel == "" {
			skillsRes = append(skillsRes, res)
			continue
		}
		key := Scheme + "://" + host + "/" + skill
		files[key] = append(files[key], res)
	}
	var next []*Skill
	seen := map[string]bool{}
	for _, res := range skillsRes {
		s, err := r.stageMCP(ctx, bundleID, res, files[res.URI], read, prev[res.URI])
		if err != nil {
			r.log.Error("MCP skill not registered", "bundle_id", bundleID, "uri", res.URI, "err", err)
			continue
		}
		if seen[s.ref.GetName()] {
			r.log.Error("MCP skill not registered: the server lists another skill of the same name", "bundle_id", bundleID, "uri", res.URI, "name", s.ref.GetName())
			continue
		}
		seen[s.ref.GetName()] = true
		next = append(next, s)
	}
	r.mu.Lock()
	changed := !sameSkills(r.mcp[bundleID], next)
	if len(next) == 0 {
		delete(r.mcp, bundleID)
	} else {
		r.mcp[bundleID] = next
	}
	r.reindex()
	r.mu.Unlock()
	if changed {
		r.opts.OnChange()
	}
	return changed
}

// RemoveMCP drops a server's skills (disconnected, removed): its orphans are
// no longer listed nor served. It reports whether there were any.
func (r *Registry) RemoveMCP(bundleID string) bool {
	r.mu.Lock()
	_, had := r.mcp[bundleID]
	delete(r.mcp, bundleID)
	r.reindex()
	r.mu.Unlock()
	if had {
		r.opts.OnChange()
	}
	return had
}

func (r *Registry) stageMCP(ctx context.Context, bundleID string, res *mcp.Resource, files []*mcp.Resource, read ReadFunc, prev *Skill) (*Skill, error) {
	mode, _ := res.Meta["source"].(string)
	var s *Skill
	switch mode {
	case ModeMounted:
		dir, _ := res.Meta["mount_dir"].(string)
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("mounted skill: _meta.mount_dir %q is not an absolute path", dir)
		}
		var err error
		if s, err = r.load(dir, "mcp:"+bundleID, bundleID); err != nil {
			return nil, err
		}
	case ModeResources:
		var err error
		if s, err = r.stageResources(ctx, bundleID, res, files, read, prev); err != nil {
			return nil, err
		}
	case ModeArchive:
		return nil, errors.New("archive skills are not supported by this computer (use mounted or resources)")
	default:
		return nil, fmt.Errorf("_meta.source %q: want mounted, resources or archive", mode)
	}
	s.ref.Uri = proto.String(res.URI)
	s.ref.Version = nil
	if v, ok := res.Meta["version"].(string); ok && v != "" {
		s.ref.Version = proto.String(v)
	}
	return s, nil
}

type stagedFile struct {
	rel  string
	data []byte
}

// stageResources reads the files of a resources-mode skill and writes them
// under the staging folder, confined to the skill's own folder there. An
// unchanged skill (same bytes) is not rewritten.
func (r *Registry) stageResources(ctx context.Context, bundleID string, res *mcp.Resource, files []*mcp.Resource, read ReadFunc, prev *Skill) (*Skill, error) {
	if len(files) > maxWalk {
		return nil, fmt.Errorf("%d files: more than %d", len(files), maxWalk)
	}
	var staged []stagedFile
	var total int64
	haveEntry := false
	for _, f := range files {
		_, _, rel, _ := skillURI(f.URI)
		if unesc, err := url.PathUnescape(rel); err == nil {
			rel = unesc
		}
		clean, e := cleanRel(rel)
		switch {
		case e != nil && e.Details["reason"] == ReasonForbidden && strings.EqualFold(rel, SkillEnv):
			clean = SkillEnv // the secrets are staged (scripts need them), never served
		case e != nil:
			return nil, fmt.Errorf("file %q: %s", rel, e.Message)
		}
		data, err := readBytes(ctx, read, f.URI)
		if err != nil {
			return nil, err
		}
		if total += int64(len(data)); total > r.opts.MaxSize {
			return nil, fmt.Errorf("more than %d bytes", r.opts.MaxSize)
		}
		haveEntry = haveEntry || clean == EntryFile
		staged = append(staged, stagedFile{clean, data})
	}
	if !haveEntry {
		// The skill resource itself is its SKILL.md.
		data, err := readBytes(ctx, read, res.URI)
		if err != nil {
			return nil, err
		}
		staged = append(staged, stagedFile{EntryFile, data})
	}
	h := sha256.New()
	for _, f := range staged {
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(h, "%s\x00%x\n", f.rel, sum)
	}
	fp := hex.EncodeToString(h.Sum(nil))
	if prev != nil && prev.fp == fp {
		return &Skill{ref: proto.Clone(prev.ref).(*smcpv1.A2CSkillRef), root: prev.root, fp: fp, secrets: prev.secrets}, nil
	}
	stg, err := r.stagingDir()
	if err != nil {
		return nil, err
	}
	host, skill, _, _ := skillURI(res.URI)
	dir := filepath.Join(stg, "mcp", bundleID, safeDirName(host), safeDirName(skill))
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clear staging folder: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("staging folder: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("staging folder: %w", err)
	}
	defer root.Close()
	for _, f := range staged {
		if d := filepath.Dir(filepath.FromSlash(f.rel)); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("stage %s: %w", f.rel, err)
			}
		}
		if err := root.WriteFile(filepath.FromSlash(f.rel), f.data, 0o600); err != nil {
			return nil, fmt.Errorf("stage %s: %w", f.rel, err)
		}
	}
	s, err := r.load(dir, "mcp:"+bundleID, bundleID)
	if err != nil {
		return nil, err
	}
	s.fp = fp
	return s, nil
}

// readBytes reads one resource's bytes (text or blob).
func readBytes(ctx context.Context, read ReadFunc, uri string) ([]byte, error) {
	res, err := read(ctx, uri)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", uri, err)
	}
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			return c.Blob, nil
		}
		return []byte(c.Text), nil
	}
	return nil, fmt.Errorf("read %s: no contents", uri)
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// safeDirName is s when it is a plain file name, else a digest of it.
func safeDirName(s string) string {
	if safeName.MatchString(s) && !strings.Contains(s, "..") {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "x" + hex.EncodeToString(sum[:8])
}
