package computer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/computer/blobs"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/computer/skills"
	"github.com/smcpgw/smcp-gateway/computer/uploads"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// bundleID is the bundle id of a running server (skills of MCP servers are
// named mcp:<bundle_id>:<skill>), as the server manager resolved it from the
// raw configuration (smcp/bundleid); "" for a server it does not run.
func (c *Computer) bundleID(server string) string {
	if s, ok := c.servers.Snapshot(server); ok {
		return s.BundleID
	}
	return ""
}

// startLater makes the skill registry, the blob service and the upload
// manager of the 0.3/0.4 profiles.
func (c *Computer) startLater() error {
	if c.version().Compare(smcp.V03) < 0 {
		return nil
	}
	var err error
	c.skills, err = skills.New(skills.Options{
		Dirs: c.opts.SkillDirs, Logger: c.log, MaxSize: c.opts.MaxBlobBytes,
		OnChange: func() { c.notify(smcp.EventUpdateSkills) },
	})
	if err != nil {
		return fmt.Errorf("computer: %w", err)
	}
	c.blobs, err = blobs.New(blobs.Options{Logger: c.log, Skills: c.openSkillBlob, MaxSize: c.opts.MaxBlobBytes})
	if err != nil {
		c.skills.Close()
		return fmt.Errorf("computer: %w", err)
	}
	if c.version().Compare(smcp.V04) >= 0 {
		c.uploads, err = uploads.New(uploads.Options{Root: c.opts.LandingRoot, Logger: c.log, MaxSize: c.opts.MaxBlobBytes,
			QuotaBytes: c.opts.LandingQuotaBytes, QuotaFiles: c.opts.LandingQuotaFiles})
		if err != nil {
			c.skills.Close()
			c.blobs.Close()
			return fmt.Errorf("computer: %w", err)
		}
	}
	return nil
}

func (c *Computer) closeLater() {
	if c.skills != nil {
		c.skills.Close()
	}
	if c.blobs != nil {
		c.blobs.Close()
	}
	if c.uploads != nil {
		c.uploads.Close()
	}
}

func (c *Computer) openSkillBlob(name, rel string) (*blobs.Content, *smcp.Error) {
	f, e := c.skills.Open(name, rel)
	if e != nil {
		return nil, e
	}
	return &blobs.Content{MIME: f.MIME, Size: f.Size, SHA256: f.SHA256, R: f, Closer: f}, nil
}

// skillReadTimeout bounds the resources/read of one MCP skill sync.
const skillReadTimeout = 30 * time.Second

// syncSkills follows a server's skill:// resources (C5: update_skills
// whatever the source). A server that is down has its skills orphaned:
// neither listed nor served.
func (c *Computer) syncSkills(server string, kind servers.EventKind, uri string) {
	if c.skills == nil {
		return
	}
	id := c.bundleID(server)
	switch kind {
	case servers.Disconnected, servers.Removed:
		c.skills.RemoveMCP(id)
		return
	case servers.ResourceUpdated:
		if !strings.HasPrefix(uri, skills.Scheme+"://") {
			return
		}
	}
	s, ok := c.servers.Snapshot(server)
	if !ok || !s.ListsResources {
		c.skills.RemoveMCP(id)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), skillReadTimeout)
	defer cancel()
	c.skills.SyncMCP(ctx, id, s.Resources, func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
		return c.servers.ReadResource(ctx, server, uri)
	})
}

// skillRefWire is A2CSkillRef on the wire: optional fields omitted when
// unset (protojson would write empty lists and nulls).
type skillRefWire struct {
	Name          string         `json:"name"`
	Source        string         `json:"source"`
	Path          string         `json:"path"`
	Description   string         `json:"description"`
	URI           *string        `json:"uri,omitempty"`
	License       *string        `json:"license,omitempty"`
	Compatibility *string        `json:"compatibility,omitempty"`
	AllowedTools  []string       `json:"allowed_tools,omitempty"`
	Tags          []string       `json:"tags,omitempty"`
	SkillMetadata map[string]any `json:"skill_metadata,omitempty"`
	Version       *string        `json:"version,omitempty"`
}

type getSkillsRet struct {
	Skills []skillRefWire `json:"skills"`
	ReqID  string         `json:"req_id"`
}

func (c *Computer) handleGetSkills(_ context.Context, req *smcpv1.GetSkillsReq) (any, error) {
	out := getSkillsRet{Skills: []skillRefWire{}, ReqID: req.GetReqId()}
	for _, r := range c.skills.List() {
		w := skillRefWire{
			Name: r.GetName(), Source: r.GetSource(), Path: r.GetPath(), Description: r.GetDescription(),
			URI: r.Uri, License: r.License, Compatibility: r.Compatibility, AllowedTools: r.GetAllowedTools(), Version: r.Version,
		}
		if c.version().Compare(smcp.V04) >= 0 { // tags are 0.4's
			w.Tags = r.GetTags()
		}
		if r.GetSkillMetadata() != nil {
			w.SkillMetadata = r.GetSkillMetadata().AsMap()
		}
		out.Skills = append(out.Skills, w)
	}
	return out, nil
}

type getSkillRet struct {
	Name       string  `json:"name"`
	RelPath    string  `json:"rel_path"`
	MIMEType   string  `json:"mime_type"`
	TotalSize  int64   `json:"total_size"`
	SHA256     string  `json:"sha256"`
	Body       *string `json:"body,omitempty"`
	BlobHandle string  `json:"blob_handle,omitempty"`
	ReqID      string  `json:"req_id"`
}

func (c *Computer) handleGetSkill(_ context.Context, req *smcpv1.GetSkillReq) (any, error) {
	rel := req.GetRelPath()
	if rel == "" {
		rel = skills.EntryFile
	}
	f, e := c.skills.Open(req.GetName(), rel)
	if e != nil {
		return nil, e
	}
	defer f.Close()
	out := getSkillRet{Name: req.GetName(), RelPath: rel, MIMEType: f.MIME, TotalSize: f.Size, SHA256: f.SHA256, ReqID: req.GetReqId()}
	if skills.IsText(f.MIME) && f.Size <= int64(c.blobs.InlineBudget()) {
		b, err := io.ReadAll(io.NewSectionReader(f, 0, f.Size))
		if err != nil {
			return nil, fmt.Errorf("read skill file: %w", err)
		}
		// JSON strings carry UTF-8 only: other bytes would arrive altered
		// and fail their sha256, so they travel as a blob.
		if utf8.Valid(b) && int64(len(b)) == f.Size && sha256Hex(b) == f.SHA256 {
			body := string(b)
			out.Body = &body
			return out, nil
		}
	}
	out.BlobHandle = c.blobs.MintSkill(req.GetName(), rel)
	return out, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func (c *Computer) handleGetBlob(_ context.Context, req *smcpv1.GetBlobReq) (any, error) {
	ret, err := c.blobs.GetBlob(req.GetBlobHandle(), req.GetChunkOffset(), req.GetMaxChunkBytes())
	if err != nil {
		return nil, err
	}
	ret.ReqId = req.GetReqId()
	return ret, nil
}

func (c *Computer) handlePutBlob(_ context.Context, req *smcpv1.PutBlobReq) (any, error) {
	ret, err := c.uploads.Put(req.GetAgent(), req)
	if err != nil {
		return nil, err
	}
	ret.ReqID = req.GetReqId()
	return ret, nil
}

// sideband moves a tool result's large binary items to blob handles
// (0.3/0.4). A result that cannot be served becomes an isError result.
func (c *Computer) sideband(res map[string]any) map[string]any {
	if c.blobs == nil {
		return res
	}
	out, err := c.blobs.Sideband(res)
	if err == nil {
		return out
	}
	c.log.Warn("tool result not served", "err", err)
	fail := map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "the tool's result cannot be sent: " + err.Error()}},
		"isError": true,
	}
	if m, ok := res["meta"].(map[string]any); ok {
		fail["meta"] = m
	}
	return fail
}
