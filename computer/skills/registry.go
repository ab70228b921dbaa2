package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/computer/regfile"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Defaults of a registry.
const (
	// DefaultMaxSize is the largest file get_skill serves (the blob cap).
	DefaultMaxSize = 100 << 20
	// DefaultDebounce gathers the file events of one edit into one rescan.
	DefaultDebounce = 300 * time.Millisecond
	// maxWalk bounds the entries fingerprinted per skill and the folders
	// watched per skill: a skill is a small package, not a file tree.
	maxWalk = 4096
)

// Options configure a Registry.
type Options struct {
	// Dirs hold user skill folders (each a folder with a SKILL.md), in
	// discovery order.
	Dirs []string
	// MaxSize is the largest file served (default DefaultMaxSize).
	MaxSize int64
	// OnChange is called, debounced, when the set of skills or the content
	// of one changes (after New returns; the first scan does not call it).
	OnChange func()
	// Debounce is the quiet time before a rescan (default DefaultDebounce).
	Debounce time.Duration
	// StagingDir receives the skills that MCP servers serve as resources
	// (default: a private temporary folder, removed by Close).
	StagingDir string
	Logger     *slog.Logger
}

// Skill is one registered skill.
type Skill struct {
	ref     *smcpv1.A2CSkillRef
	root    string        // real path of the package root
	fp      string        // content fingerprint (change detection)
	secrets []fs.FileInfo // its .skillenv files as the last scan found them
}

// Ref returns a copy of the skill's A2CSkillRef.
func (s *Skill) Ref() *smcpv1.A2CSkillRef { return proto.Clone(s.ref).(*smcpv1.A2CSkillRef) }

// Root is the real path of the skill's folder.
func (s *Skill) Root() string { return s.root }

// Registry is a computer's skills.
type Registry struct {
	opts   Options
	log    *slog.Logger
	hashes hashCache

	mu      sync.RWMutex
	user    []*Skill
	mcp     map[string][]*Skill // by bundle id
	byName  map[string]*Skill
	staging string
	ownStg  bool

	watcher *fsnotify.Watcher
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  sync.Once
}

// New scans the folders and, when there are any, watches them.
func New(opts Options) (*Registry, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	r := &Registry{opts: opts, log: opts.Logger.With("component", "skills"), mcp: map[string][]*Skill{}, byName: map[string]*Skill{}}
	for _, d := range opts.Dirs {
		st, err := os.Stat(d)
		if err != nil {
			return nil, fmt.Errorf("skills: folder %s: %w", d, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("skills: %s is not a folder", d)
		}
	}
	r.user = r.scanUser()
	r.reindex()
	if len(opts.Dirs) > 0 {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, fmt.Errorf("skills: watch folders: %w", err)
		}
		r.watcher = w
		r.watch()
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.watchLoop(ctx)
		}()
	}
	return r, nil
}

// Close stops watching and removes the private staging folder.
func (r *Registry) Close() {
	r.closed.Do(func() {
		if r.cancel != nil {
			r.cancel()
			r.wg.Wait()
			r.watcher.Close()
		}
		r.mu.Lock()
		stg, own := r.staging, r.ownStg
		r.mu.Unlock()
		if own && stg != "" {
			if err := os.RemoveAll(stg); err != nil {
				r.log.Warn("remove skill staging folder", "err", err)
			}
		}
	})
}

// List returns the available skills in discovery order: user folders in
// the order given, then MCP servers by bundle id, each in its own order.
func (r *Registry) List() []*smcpv1.A2CSkillRef {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*smcpv1.A2CSkillRef
	for _, s := range r.all() {
		out = append(out, s.Ref())
	}
	return out
}

// all returns the skills in discovery order; r.mu held.
func (r *Registry) all() []*Skill {
	out := slices.Clone(r.user)
	ids := make([]string, 0, len(r.mcp))
	for id := range r.mcp {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		out = append(out, r.mcp[id]...)
	}
	return out
}

// reindex rebuilds byName; r.mu held (or not shared yet).
func (r *Registry) reindex() {
	m := make(map[string]*Skill)
	for _, s := range r.all() {
		m[s.ref.GetName()] = s
	}
	r.byName = m
}

// Lookup finds a skill by name: the lexer first (4016), then the registry
// (4014, mcp_server = the bundle id segment of an mcp: name, else "").
func (r *Registry) Lookup(name string) (*Skill, *smcp.Error) {
	n, err := ParseName(name)
	if err != nil {
		return nil, smcp.Errorf(smcp.CodeInvalidSkillName, "invalid skill name").WithDetails(map[string]any{"name": name})
	}
	r.mu.RLock()
	s, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		e := smcp.Errorf(smcp.CodeMCPServerNotFound, "no skill %q on this computer", name).WithDetails(map[string]any{"name": name})
		e.Details["mcp_server"] = n.BundleID
		return nil, e
	}
	return s, nil
}

// Open returns a file of a skill as get_skill and get_blob serve it: the
// name through Lookup, rel (default SKILL.md) through the sandbox, the size
// against the cap. Every call re-runs every check.
func (r *Registry) Open(name, rel string) (*Content, *smcp.Error) {
	if rel == "" {
		rel = EntryFile
	}
	s, e := r.Lookup(name)
	if e != nil {
		return nil, e
	}
	return open(s.root, rel, r.opts.MaxSize, &r.hashes, r.secrets(s))
}

// secrets lists the .skillenv files a served file must not be (a hard link
// gives one another name, which the name checks cannot see): every skill's,
// as the last scan found them, and s's own looked up now, so that one made
// since that scan counts too.
func (r *Registry) secrets(s *Skill) []fs.FileInfo {
	var out []fs.FileInfo
	if st, err := os.Stat(filepath.Join(s.root, SkillEnv)); err == nil {
		out = append(out, st)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.all() {
		out = append(out, k.secrets...)
	}
	return out
}

// Rescan re-reads the user folders now and reports a change as the watcher
// would.
func (r *Registry) Rescan() {
	next := r.scanUser()
	r.mu.Lock()
	changed := !sameSkills(r.user, next)
	r.user = next
	r.reindex()
	r.mu.Unlock()
	if changed {
		r.opts.OnChange()
	}
}

// scanUser reads every skill folder of the user folders. A folder that is
// not a valid skill is left out with an error line; a second skill of the
// same name is refused.
func (r *Registry) scanUser() []*Skill {
	var out []*Skill
	seen := map[string]string{}
	for _, d := range r.opts.Dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			r.log.Error("read skill folder", "dir", d, "err", err)
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(d, e.Name())
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				continue
			}
			s, err := r.load(dir, "user", "")
			if err != nil {
				r.log.Error("skill not registered", "dir", dir, "err", err)
				continue
			}
			if prev, dup := seen[s.ref.GetName()]; dup {
				r.log.Error("skill not registered: another folder has its name", "dir", dir, "name", s.ref.GetName(), "first", prev)
				continue
			}
			seen[s.ref.GetName()] = dir
			out = append(out, s)
		}
	}
	return out
}

// load reads one skill folder. source is "user" or "mcp:<bundle id>".
func (r *Registry) load(dir, source, bundleID string) (*Skill, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	head, err := readHead(filepath.Join(root, EntryFile))
	if err != nil {
		return nil, err
	}
	fm, err := parseFrontMatter(head)
	if err != nil {
		return nil, err
	}
	if bundleID == "" && fm.Name != filepath.Base(dir) {
		r.log.Warn("skill folder name differs from its front matter name; the front matter wins", "dir", dir, "name", fm.Name)
	}
	ref := &smcpv1.A2CSkillRef{Name: fm.Name, Source: source, Description: fm.Description}
	if bundleID != "" {
		ref.Name = Name{Kind: MCP, BundleID: bundleID, Skill: fm.Name}.String()
	}
	ref.Path = ServedPath(ref.Name)
	if fm.License != "" {
		ref.License = proto.String(fm.License)
	}
	if fm.Compatibility != "" {
		ref.Compatibility = proto.String(fm.Compatibility)
	}
	ref.AllowedTools = fm.allowedTools()
	if tags, ok := fm.tags(); ok {
		ref.Tags = tags
	}
	if len(fm.Metadata) > 0 {
		if st, err := structpb.NewStruct(fm.Metadata); err == nil {
			ref.SkillMetadata = st
		} else {
			r.log.Warn("skill metadata left out: not JSON-like", "dir", dir, "err", err)
		}
	}
	if v := fm.version(); v != "" {
		ref.Version = proto.String(v)
	}
	fp, secrets := fingerprint(root)
	return &Skill{ref: ref, root: root, fp: fp, secrets: secrets}, nil
}

// ServedPath is a skill's path as agents see it: its folder among the
// skills this computer serves, the name's segments as folders ("pdf-tools",
// "mcp/<bundle_id>/<skill>"). Never the host's path: an agent reads a
// skill's files by name and rel_path (get_skill), relative to this folder,
// and learns nothing of where the computer keeps them.
func ServedPath(name string) string { return strings.ReplaceAll(name, ":", "/") }

// readHead reads the start of a SKILL.md, enough for its front matter. A
// SKILL.md that is not a regular file is refused without blocking.
func readHead(name string) ([]byte, error) {
	f, _, err := regfile.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxFrontMatter)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return nil, fmt.Errorf("read %s: %w", EntryFile, err)
	}
	return b[:n], nil
}

// fingerprint summarizes a skill folder's files (names, sizes, times), the
// .skillenv excepted: a change of any served file changes it. It also
// returns the .skillenv files it met, by identity.
func fingerprint(root string) (string, []fs.FileInfo) {
	h := sha256.New()
	var secrets []fs.FileInfo
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if strings.EqualFold(d.Name(), SkillEnv) {
			// Followed: a file opened through any link is its target.
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				secrets = append(secrets, st)
			}
			return nil
		}
		if n++; n > maxWalk {
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\n", rel, info.Size(), info.ModTime().UnixNano(), info.Mode())
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), secrets
}

func sameSkills(a, b []*Skill) bool {
	return slices.EqualFunc(a, b, func(x, y *Skill) bool {
		return x.root == y.root && x.fp == y.fp && proto.Equal(x.ref, y.ref)
	})
}

// watch adds a watch on every user folder and every folder of its skills.
func (r *Registry) watch() {
	add := func(p string) {
		if err := r.watcher.Add(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("watch skill folder", "dir", p, "err", err)
		}
	}
	for _, d := range r.opts.Dirs {
		add(d)
	}
	r.mu.RLock()
	roots := make([]string, 0, len(r.user))
	for _, s := range r.user {
		roots = append(roots, s.root)
	}
	r.mu.RUnlock()
	for _, root := range roots {
		n := 0
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if n++; n > maxWalk {
				return filepath.SkipAll
			}
			add(p)
			return nil
		})
	}
	// A folder that is not (yet) a skill, e.g. one being copied in, is
	// watched too, so that its SKILL.md arriving is seen.
	for _, d := range r.opts.Dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				add(filepath.Join(d, e.Name()))
			}
		}
	}
}

// watchLoop rescans after a quiet period following file events.
func (r *Registry) watchLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			r.log.Debug("skill folder event", "op", ev.Op.String(), "name", filepath.Base(ev.Name))
			timer.Reset(r.opts.Debounce)
		case err, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
			// An overflow loses events: rescan to be sure.
			r.log.Warn("skill folder watch", "err", err)
			timer.Reset(r.opts.Debounce)
		case <-timer.C:
			r.Rescan()
			r.watch()
		}
	}
}

// stagingDir returns the folder MCP skills are staged in, made on first use.
func (r *Registry) stagingDir() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.staging != "" {
		return r.staging, nil
	}
	if r.opts.StagingDir != "" {
		if err := os.MkdirAll(r.opts.StagingDir, 0o700); err != nil {
			return "", fmt.Errorf("skills: staging folder: %w", err)
		}
		r.staging = r.opts.StagingDir
		return r.staging, nil
	}
	d, err := os.MkdirTemp("", "smcp-skills-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", fmt.Errorf("skills: staging folder: %w", err)
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		d = real
	}
	r.staging, r.ownStg = d, true
	return d, nil
}
