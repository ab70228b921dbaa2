package mcpfront

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/blobread"
)

// Skills (0.3/0.4 offices) are MCP resources of the office:
// "skill://{computer}/{name}" is a skill's SKILL.md, and
// "skill://{computer}/{name}/{rel_path}" another of its files, read with
// client:get_skill (and client:get_blob when the computer answers a blob
// handle). Computer and name are path-escaped (url.PathEscape keeps the
// ":" of "mcp:bundle:skill"); rel_path is as the skill names it.
const skillPrefix = "skill://"

// DefaultMaxBlobBytes bounds what the front end drains of blob handles for
// one answer (a skill file, or the items of one tool result): MCP has no
// streaming content, an answer is one JSON message, so its bytes are held
// while it is made, about four times over (the bytes, their base64, the
// encoded message and its write). A larger blob is refused before any
// chunk moves, with an error naming the bound and the typed ReadBlob or
// client:get_blob, which stream it.
const DefaultMaxBlobBytes = 8 << 20

func skillURI(computer, name string) string {
	return skillPrefix + url.PathEscape(computer) + "/" + url.PathEscape(name)
}

// parseSkillURI splits a skill URI; rel is "" for SKILL.md.
func parseSkillURI(uri string) (computer, name, rel string, err error) {
	rest, ok := strings.CutPrefix(uri, skillPrefix)
	if !ok {
		return "", "", "", smcp.Errorf(smcp.CodeBadRequest, "not a skill URI: %q", uri)
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", "", smcp.Errorf(smcp.CodeBadRequest, "skill URI %q: want skill://{computer}/{name}[/{path}]", uri)
	}
	if computer, err = url.PathUnescape(parts[0]); err == nil {
		name, err = url.PathUnescape(parts[1])
	}
	if err != nil {
		return "", "", "", smcp.Errorf(smcp.CodeBadRequest, "skill URI %q: %v", uri, err)
	}
	if len(parts) == 3 {
		rel = parts[2]
	}
	return computer, name, rel, nil
}

// syncSkills lists a computer's skills as resources. In a 0.2 office the
// event does not exist and the computer has none.
func (x *session) syncSkills(ctx context.Context, computer string) {
	raw, err := x.syncRequest(ctx, smcp.EventGetSkills, map[string]any{"computer": computer})
	if e, ok := smcp.AsError(err); ok && e.Code == smcp.CodeNotFound && strings.HasPrefix(e.Message, "unknown event") {
		return
	}
	if err != nil {
		// As for tools and resources: a computer that left meanwhile (404)
		// or a session that ended is no fault of the gateway's.
		x.listFailed("list skills", computer, err)
		return
	}
	var ret smcpv1.GetSkillsRet
	if err := smcp.Unmarshal(raw, &ret); err != nil {
		x.log.Warn("list skills: malformed answer", "computer", computer, "err", err)
		return
	}
	next := map[string][]byte{}
	res := map[string]*mcp.Resource{}
	refs := map[string]*smcpv1.A2CSkillRef{}
	for _, s := range ret.GetSkills() {
		refs[s.GetName()] = s
		uri := skillURI(computer, s.GetName())
		r := &mcp.Resource{URI: uri, Name: s.GetName(), Description: s.GetDescription(), MIMEType: "text/markdown",
			Meta: mcp.Meta{"a2c_computer": computer, "a2c_skill_source": s.GetSource()}}
		b, _ := json.Marshal(r)
		next[uri], res[uri] = b, r
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	c := x.viewLocked(computer)
	if c == nil {
		return
	}
	x.applySkillsLocked(computer, c, next, res)
	c.skillRefs = refs
}

// applySkillsLocked makes c's skill resources exactly next.
func (x *session) applySkillsLocked(computer string, c *computerView, next map[string][]byte, res map[string]*mcp.Resource) {
	var gone []string
	for uri := range c.skills {
		if _, ok := next[uri]; !ok {
			delete(c.skills, uri)
			if x.owners[uri] == computer {
				delete(x.owners, uri)
				gone = append(gone, uri)
			}
		}
	}
	if len(gone) > 0 {
		x.server.RemoveResources(gone...)
	}
	for _, uri := range slices.Sorted(maps.Keys(next)) {
		if old, ok := c.skills[uri]; ok && bytes.Equal(old, next[uri]) {
			continue
		}
		c.skills[uri] = next[uri]
		x.owners[uri] = computer
		x.server.AddResource(res[uri], x.readHandler)
	}
}

// readSkill reads a skill's file: its body, or the bytes behind its blob
// handle.
func (x *session) readSkill(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	// A listed skill's URI in either form (skillAt); else the resources'
	// form, for the computer (and the governance) to judge.
	computer, name, rel, ref := x.skillAt(uri)
	if ref == nil {
		var err error
		if computer, name, rel, err = parseSkillURI(uri); err != nil {
			return nil, mcpError(err, true)
		}
	}
	body := map[string]any{"computer": computer, "name": name}
	if rel != "" {
		body["rel_path"] = rel
	}
	raw, err := x.request(ctx, smcp.EventGetSkill, body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, mcpError(err, true)
	}
	var ret smcpv1.GetSkillRet
	if err := smcp.Unmarshal(raw, &ret); err != nil {
		return nil, mcpError(smcp.Errorf(smcp.CodeInternal, "malformed get_skill answer: %v", err), true)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: ret.GetMimeType()}
	switch {
	case ret.Body != nil:
		rc.Text = ret.GetBody()
	case ret.GetBlobHandle() != "":
		if limit := int64(x.front.opts.MaxBlobBytes); ret.GetTotalSize() > limit {
			return nil, mcpError(tooLarge(ret.GetTotalSize(), limit), true)
		}
		data, _, err := x.drainBlob(ctx, computer, ret.GetBlobHandle(), int64(x.front.opts.MaxBlobBytes))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, mcpError(err, true)
		}
		rc.Blob = data
	default:
		return nil, mcpError(smcp.Errorf(smcp.CodeInternal, "get_skill answered neither body nor blob_handle"), true)
	}
	if ref != nil && rel == skillFile {
		// The file the SEP's URI names, whose front matter its skills/list
		// entry shows (skillsext.go).
		if err := withFrontMatter(rc, name, ref); err != nil {
			return nil, mcpError(err, true)
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// drainBlob reads a blob handle of computer whole with client:get_blob,
// blobread.DefaultWindow chunks in flight, checking each chunk and the
// sha256 (blobread); more than limit bytes are refused once the first
// chunk has declared the size, before the others are asked for.
func (x *session) drainBlob(ctx context.Context, computer, handle string, limit int64) ([]byte, string, error) {
	get := func(ctx context.Context, offset, max int64) (*smcpv1.GetBlobRet, error) {
		raw, err := x.request(ctx, smcp.EventGetBlob, map[string]any{"computer": computer, "blob_handle": handle,
			"chunk_offset": offset, "max_chunk_bytes": max})
		if err != nil {
			return nil, err
		}
		var ret smcpv1.GetBlobRet
		if err := smcp.Unmarshal(raw, &ret); err != nil {
			return nil, smcp.Errorf(smcp.CodeInternal, "malformed get_blob answer: %v", err)
		}
		if offset == 0 && ret.GetTotalSize() > limit {
			return nil, tooLarge(ret.GetTotalSize(), limit)
		}
		return &ret, nil
	}
	var out []byte
	r, err := blobread.Read(ctx, blobread.DefaultWindow, blobChunkBytes, get, func(r *blobread.Reader, c blobread.Chunk) error {
		if out == nil {
			out = make([]byte, 0, r.TotalSize())
		}
		out = append(out, c.Data...)
		return nil
	})
	if err != nil {
		if _, ok := smcp.AsError(err); ok {
			return nil, "", err
		}
		return nil, "", smcp.Errorf(smcp.CodeInternal, "blob read: %v", err)
	}
	return out, r.MIMEType(), nil
}

// blobChunkBytes is the chunk asked for: the protocol's default and our
// computer's cap (PROTOCOL-0.4.md §5.7).
const blobChunkBytes = 256 << 10

// tooLarge refuses a blob over what one MCP answer may carry.
func tooLarge(size, limit int64) *smcp.Error {
	return smcp.Errorf(smcp.CodeBadRequest,
		"blob of %d bytes is over the %d bytes one MCP answer carries (the gateway's --mcp-max-blob-bytes; MCP has no streaming content): read it with the Connect ReadBlob or Socket.IO client:get_blob, which stream it",
		size, limit)
}

// fillBlobs hands the MCP client real content where a tool result carries
// blob handles (PROTOCOL-0.4.md §5.7): every image or audio item whose
// "data", and every embedded resource whose "blob", was left empty beside
// an a2c_blob_handle in its _meta gets the drained bytes. raw is returned
// as it is when it has no handle, so results without one keep their bytes.
func (x *session) fillBlobs(ctx context.Context, computer string, raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(raw, []byte("a2c_blob_handle")) {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var res map[string]any
	if err := dec.Decode(&res); err != nil {
		return raw, nil // toolResult reports it
	}
	content, _ := res["content"].([]any)
	budget := int64(x.front.opts.MaxBlobBytes)
	filled := false
	for _, item := range content {
		it, _ := item.(map[string]any)
		if it == nil {
			continue
		}
		target, key := it, "data"
		if r, ok := it["resource"].(map[string]any); ok && it["type"] == "resource" {
			target, key = r, "blob"
		}
		handle := blobHandle(it)
		if handle == "" && target != nil {
			handle = blobHandle(target)
		}
		if handle == "" || target[key] != "" && target[key] != nil {
			continue
		}
		data, _, err := x.drainBlob(ctx, computer, handle, budget)
		if err != nil {
			return nil, err
		}
		budget -= int64(len(data))
		target[key] = base64.StdEncoding.EncodeToString(data)
		filled = true
	}
	if !filled {
		return raw, nil
	}
	return json.Marshal(res)
}

func blobHandle(m map[string]any) string {
	meta, _ := m["_meta"].(map[string]any)
	h, _ := meta["a2c_blob_handle"].(string)
	return h
}
