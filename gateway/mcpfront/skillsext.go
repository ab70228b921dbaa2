package mcpfront

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// The MCP Skills extension (SEP-2640, io.modelcontextprotocol/skills, as
// specified in modelcontextprotocol/ext-skills specification/stable/skills.mdx):
// skills/list and skills/get describe the office's skills, whose files
// are read with resources/read. They are served with the go-sdk's custom
// methods (mcp.AddReceivingCustomMethod), through the session's middleware
// like every other request, on sessions and on the offices' shared views
// alike.
//
// A skill's URI is "skill://{computer}/{path}/SKILL.md", where path is the
// SMCP skill name with its ":" as "/" ("pdf", "plugin/pdf", "mcp/bundle/pdf"),
// so that its last segment is the skill's front-matter name as the SEP
// requires; its other files are "skill://{computer}/{path}/{rel_path}".
//
// What SMCP carries decides two things:
//   - frontmatter: client:get_skills gives a skill's front-matter fields
//     (name, description, license, compatibility, allowed-tools, metadata,
//     tags), not its YAML, and client:get_skill gives SKILL.md without its
//     front matter. The entry's frontmatter is rendered from those fields,
//     and the SKILL.md read at the skill's URI is that front matter (YAML)
//     followed by the body, so that a host comparing the two finds them
//     equal, as the SEP has it verify.
//   - resources: SMCP has no listing of a skill's files (get_skill reads one
//     file by its path), so the gateway cannot publish the complete manifest
//     with digests that the SEP asks of a static skill: every entry's
//     resources is "dynamic", the SEP's form for a skill that has no such
//     manifest (no digests to verify, no directoryRead either). Its files
//     are read by the relative paths SKILL.md names.
//
// Governance applies as to resources: get_skills answers are filtered by the
// core, so a skill the caller may not read is neither listed nor got
// (skills/get answers -32602, as for any skill not served), and each file
// read is admitted as get_skill.
const (
	skillsExtension  = "io.modelcontextprotocol/skills"
	methodListSkills = "skills/list"
	methodGetSkill   = "skills/get"
	skillFile        = "SKILL.md"
	// skillsPageSize is the skills of one skills/list page (the go-sdk's
	// page size of its own lists).
	skillsPageSize = 1000
)

// skillsCapability declares the extension in the server's capabilities,
// without directoryRead (SMCP cannot list a directory).
func skillsCapability() map[string]any {
	return map[string]any{skillsExtension: map[string]any{}}
}

// addSkillMethods serves skills/list and skills/get on x's server.
func (x *session) addSkillMethods() {
	// AddReceivingCustomMethod fails only for a standard method's name,
	// which these are not (TestSkillsExtension fails if the go-sdk ever
	// makes them one).
	if err := mcp.AddReceivingCustomMethod(x.server, methodListSkills, x.listSkills); err != nil {
		panic(err)
	}
	if err := mcp.AddReceivingCustomMethod(x.server, methodGetSkill, x.getSkill); err != nil {
		panic(err)
	}
}

// skillEntry is the SEP's Skill.
type skillEntry struct {
	URI         string       `json:"uri"`
	Frontmatter *frontMatter `json:"frontmatter"`
	// Resources is always "dynamic" (see above).
	Resources string `json:"resources"`
}

// frontMatter is a skill's front matter as SMCP gives it, in the Agent
// Skills spelling, in the order it is written in SKILL.md.
type frontMatter struct {
	Name          string         `json:"name" yaml:"name"`
	Description   string         `json:"description" yaml:"description"`
	License       string         `json:"license,omitempty" yaml:"license,omitempty"`
	Compatibility string         `json:"compatibility,omitempty" yaml:"compatibility,omitempty"`
	AllowedTools  string         `json:"allowed-tools,omitempty" yaml:"allowed-tools,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty" yaml:"metadata,omitempty"`
	Tags          []string       `json:"tags,omitempty" yaml:"tags,omitempty"`
}

type listSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

type listSkillsResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType,omitempty"`
	mcp.Cacheable
	NextCursor string        `json:"nextCursor,omitempty"`
	Skills     []*skillEntry `json:"skills"`
}

type getSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

type getSkillResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType,omitempty"`
	mcp.Cacheable
	Skill *skillEntry `json:"skill"`
}

// listSkills answers skills/list: the skills of every computer of the
// office, in URI order, a page at a time.
func (x *session) listSkills(_ context.Context, ss *mcp.ServerSession, p *listSkillsParams) (*listSkillsResult, error) {
	if p == nil {
		p = &listSkillsParams{}
	}
	page, next, err := skillsPage(x.skillEntries(), p.Cursor, skillsPageSize)
	if err != nil {
		return nil, mcpError(err, false)
	}
	return &listSkillsResult{ResultType: resultType(ss, p.Meta), Cacheable: noCache(), Skills: page, NextCursor: next}, nil
}

// getSkill answers skills/get: the entry of the skill whose SKILL.md is at
// the URI given.
func (x *session) getSkill(_ context.Context, ss *mcp.ServerSession, p *getSkillParams) (*getSkillResult, error) {
	if p == nil || p.URI == "" {
		return nil, mcpError(smcp.Errorf(smcp.CodeBadRequest, "skills/get: uri is required"), false)
	}
	computer, name, rel, ref := x.skillAt(p.URI)
	if ref == nil || rel != skillFile {
		return nil, mcpError(smcp.Errorf(smcp.CodeNotFound, "no skill is served at %s", p.URI), false)
	}
	return &getSkillResult{ResultType: resultType(ss, p.Meta), Cacheable: noCache(), Skill: entryOf(computer, name, ref)}, nil
}

// noCache is what the session's other results say (serverOptions): the
// office's skills change whenever a computer's do, and are the caller's.
func noCache() mcp.Cacheable { return mcp.Cacheable{TTLMs: 0, CacheScope: "private"} }

// resultType is "complete" for a request of MCP 2026-07-28 or later, which
// requires it on every result (the go-sdk sets it only on its own result
// types); "" (left out) for older ones.
func resultType(ss *mcp.ServerSession, meta mcp.Meta) string {
	v, _ := meta[mcp.MetaKeyProtocolVersion].(string)
	if v == "" && ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			v = ip.ProtocolVersion
		}
	}
	if v >= statelessProtocol {
		return "complete"
	}
	return ""
}

// skillEntries are the entries of every skill the session lists, in URI
// order.
func (x *session) skillEntries() []*skillEntry {
	x.mu.Lock()
	var out []*skillEntry
	for computer, c := range x.computers {
		for name, ref := range c.skillRefs {
			out = append(out, entryOf(computer, name, ref))
		}
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b *skillEntry) int { return cmp.Compare(a.URI, b.URI) })
	return out
}

// skillsPage is the page of entries (in URI order) after cursor, at most
// size of them, and the cursor of the next page ("" for the last). A
// cursor is the last URI of its page, so a listing that changed between
// pages goes on where it was.
func skillsPage(entries []*skillEntry, cursor string, size int) ([]*skillEntry, string, error) {
	start := 0
	if cursor != "" {
		last, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return nil, "", smcp.Errorf(smcp.CodeBadRequest, "skills/list: invalid cursor %q", cursor)
		}
		start, _ = slices.BinarySearchFunc(entries, string(last), func(e *skillEntry, uri string) int {
			return cmp.Compare(e.URI, uri)
		})
		if start < len(entries) && entries[start].URI == string(last) {
			start++
		}
	}
	page := entries[start:]
	if len(page) <= size {
		return slices.Clip(page), "", nil
	}
	page = page[:size:size]
	return page, base64.RawURLEncoding.EncodeToString([]byte(page[size-1].URI)), nil
}

// sepSkillURI is the URI of a skill's SKILL.md, or of the skill's file rel.
func sepSkillURI(computer, name, rel string) string {
	var b strings.Builder
	b.WriteString(skillPrefix)
	b.WriteString(url.PathEscape(computer))
	for seg := range strings.SplitSeq(name, ":") {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(seg))
	}
	b.WriteByte('/')
	b.WriteString(rel)
	return b.String()
}

func entryOf(computer, name string, ref *smcpv1.A2CSkillRef) *skillEntry {
	return &skillEntry{URI: sepSkillURI(computer, name, skillFile), Frontmatter: frontMatterOf(name, ref), Resources: "dynamic"}
}

// frontMatterOf renders ref's front-matter fields; the name is the last
// segment of the SMCP name ("plugin:pdf" is the skill "pdf" of plugin
// "plugin"), which SMCP's lexer holds to the Agent Skills name rules.
func frontMatterOf(name string, ref *smcpv1.A2CSkillRef) *frontMatter {
	fm := &frontMatter{Name: name[strings.LastIndexByte(name, ':')+1:], Description: ref.GetDescription(),
		License: ref.GetLicense(), Compatibility: ref.GetCompatibility(),
		AllowedTools: strings.Join(ref.GetAllowedTools(), " "), Tags: ref.GetTags()}
	if m := ref.GetSkillMetadata().AsMap(); len(m) > 0 {
		fm.Metadata = m
	}
	return fm
}

// frontMatterYAML is fm as the front matter of a SKILL.md.
func frontMatterYAML(fm *frontMatter) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(fm); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	b.WriteString("---\n")
	return b.Bytes(), nil
}

// skillAt resolves a skill:// URI against the skills the session lists:
// the computer, the skill's SMCP name, the file's path within the skill
// and the skill; ref is nil when no listed skill holds the URI. Both the
// SEP's form ("skill://pc/plugin/pdf/SKILL.md") and the resources' form
// ("skill://pc/plugin:pdf/SKILL.md") resolve; the longest name that
// matches wins, as a nested skill's own files are its own.
func (x *session) skillAt(uri string) (computer, name, rel string, ref *smcpv1.A2CSkillRef) {
	rest, ok := strings.CutPrefix(uri, skillPrefix)
	if !ok {
		return "", "", "", nil
	}
	host, path, _ := strings.Cut(rest, "/")
	computer, err := url.PathUnescape(host)
	if err != nil {
		return "", "", "", nil
	}
	segs := strings.Split(path, "/")
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.computers[computer]
	if c == nil {
		return "", "", "", nil
	}
	// At most 3 name segments ("mcp:bundle:skill"), and one left for the file.
	for n := min(3, len(segs)-1); n >= 1; n-- {
		parts := make([]string, n)
		for i, s := range segs[:n] {
			if parts[i], err = url.PathUnescape(s); err != nil {
				return "", "", "", nil
			}
		}
		name = strings.Join(parts, ":")
		if ref = c.skillRefs[name]; ref != nil {
			return computer, name, strings.Join(segs[n:], "/"), ref
		}
	}
	return "", "", "", nil
}

// withFrontMatter makes rc, a SKILL.md as get_skill gives it (without its
// front matter), the file the skill's URI names: its front matter rendered
// from ref, then the body.
func withFrontMatter(rc *mcp.ResourceContents, name string, ref *smcpv1.A2CSkillRef) error {
	head, err := frontMatterYAML(frontMatterOf(name, ref))
	if err != nil {
		return smcp.Errorf(smcp.CodeInternal, "rendering the front matter of skill %q: %v", name, err)
	}
	switch {
	case rc.Blob == nil:
		rc.Text = string(head) + rc.Text
	case utf8.Valid(rc.Blob): // a SKILL.md over the computer's inline budget
		rc.Text, rc.Blob = string(head)+string(rc.Blob), nil
	default:
		rc.Blob = append(head, rc.Blob...)
	}
	return nil
}
