package console_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const (
	labOffice = "lab"
	labPC     = "lab-pc"
	// labTool is the fake computer's one tool, named as 0.3+ computers
	// name them: "<bundle_id>__<tool>".
	labTool   = "charts__render"
	skillBody = "# PDF tools\n\nUse `pdftotext` on the file, then read `notes.txt`; samples are in [data](data.bin).\n"
	// The chunk the fake computer serves at most per client:get_blob, small
	// so that a download takes several ReadBlob messages.
	labChunk = 64 << 10
)

// labComputer is a fake computer of protocol 0.4: a Socket.IO client sending
// a2c_version 0.4.0 that answers client:get_tools, client:tool_call,
// client:get_skills, client:get_skill and client:get_blob from memory, as
// PROTOCOL-0.4 §5.5-5.7 describe them. Its blobs are random bytes, so that
// what the browser downloads can be compared with them.
type labComputer struct {
	c     *sioclient.Client
	blobs map[string][]byte // by handle

	mu       sync.Mutex
	getBlobs int // client:get_blob requests answered
}

func startLabComputer(t *testing.T, url string) *labComputer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: url, APIKey: apiKey, Version: "0.4.0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("lab computer dial: %v", err)
	}
	t.Cleanup(c.Close)
	lc := &labComputer{c: c, blobs: map[string][]byte{
		"h-data.bin":  randomBytes(t, 3*labChunk+123), // a skill file too big to come inline
		"h-chart.png": randomBytes(t, labChunk+7),     // a tool result's image
	}}
	for event, h := range map[string]func(json.RawMessage) (any, error){
		smcp.EventGetTools: lc.getTools, smcp.EventToolCall: lc.toolCall, smcp.EventGetSkills: lc.getSkills,
		smcp.EventGetSkill: lc.getSkill, smcp.EventGetBlob: lc.getBlob, smcp.EventGetResources: lc.getResources,
	} {
		c.Handle(event, func(_ context.Context, payload json.RawMessage) (any, error) { return h(payload) })
	}
	if err := c.JoinOffice(ctx, smcp.RoleComputer, labPC, labOffice); err != nil {
		t.Fatalf("lab computer join: %v", err)
	}
	return lc
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func sum256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func decode(payload json.RawMessage, m proto.Message) error {
	if err := smcp.Unmarshal(payload, m); err != nil {
		return smcp.Errorf(smcp.CodeBadRequest, "%v", err)
	}
	return nil
}

func (lc *labComputer) getTools(payload json.RawMessage) (any, error) {
	req := &smcpv1.GetToolsReq{}
	if err := decode(payload, req); err != nil {
		return nil, err
	}
	schema, err := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{
		"title": map[string]any{"type": "string", "description": "the chart's title"}}})
	if err != nil {
		return nil, err
	}
	return &smcpv1.GetToolsRet{ReqId: req.GetReqId(), Tools: []*smcpv1.SMCPTool{{
		Name: labTool, Description: "renders a chart as a PNG", ParamsSchema: schema, BundleId: new("charts"),
	}}}, nil
}

// toolCall answers with a text and an image over the inline budget: its
// data empty and its blob handle in the item's _meta (§5.7).
func (lc *labComputer) toolCall(payload json.RawMessage) (any, error) {
	png := lc.blobs["h-chart.png"]
	return map[string]any{"content": []any{
		map[string]any{"type": "text", "text": "rendered the chart"},
		map[string]any{"type": "image", "mimeType": "image/png", "data": "", "_meta": map[string]any{
			"a2c_blob_handle": "h-chart.png", "a2c_total_size": len(png), "a2c_sha256": sum256(png)}},
	}}, nil
}

func (lc *labComputer) getSkills(payload json.RawMessage) (any, error) {
	req := &smcpv1.GetSkillsReq{}
	if err := decode(payload, req); err != nil {
		return nil, err
	}
	return &smcpv1.GetSkillsRet{ReqId: req.GetReqId(), Skills: []*smcpv1.A2CSkillRef{
		{Name: "pdf-tools", Source: "user", Path: "/home/u/.a2c/skills/pdf-tools", Description: "read PDFs", Tags: []string{"pdf", "text"}},
		{Name: "mcp:docs:search", Source: "mcp:docs", Path: "/srv/docs", Description: "search the docs", Uri: new("skill://docs/search")},
	}}, nil
}

// getResources lists the resources of MCP server docs: its skill search
// served file by file (skill://docs/search/<path>), and another resource.
func (lc *labComputer) getResources(payload json.RawMessage) (any, error) {
	req := &smcpv1.GetResourcesReq{}
	if err := decode(payload, req); err != nil {
		return nil, err
	}
	if req.GetMcpServer() != "docs" {
		return nil, smcp.Errorf(smcp.CodeMCPServerNotFound, "no MCP server %q", req.GetMcpServer())
	}
	var out []*structpb.Struct
	for _, uri := range []string{"skill://docs/search", "skill://docs/search/SKILL.md", "skill://docs/search/ref/syntax.md", "file:///srv/docs/index.md"} {
		r, err := structpb.NewStruct(map[string]any{"uri": uri, "name": uri})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return &smcpv1.GetResourcesRet{ReqId: req.GetReqId(), Resources: out}, nil
}

// getSkill serves pdf-tools: SKILL.md inline, data.bin as a blob handle.
func (lc *labComputer) getSkill(payload json.RawMessage) (any, error) {
	req := &smcpv1.GetSkillReq{}
	if err := decode(payload, req); err != nil {
		return nil, err
	}
	rel := req.GetRelPath()
	if rel == "" {
		rel = "SKILL.md"
	}
	if req.GetName() != "pdf-tools" {
		return nil, smcp.Errorf(smcp.CodeMCPServerNotFound, "skill not found").WithDetails(map[string]any{"name": req.GetName()})
	}
	switch rel {
	case "SKILL.md":
		return &smcpv1.GetSkillRet{ReqId: req.GetReqId(), Name: req.GetName(), RelPath: rel, MimeType: "text/markdown",
			TotalSize: int64(len(skillBody)), Sha256: sum256([]byte(skillBody)), Body: new(skillBody)}, nil
	case "data.bin":
		b := lc.blobs["h-data.bin"]
		return &smcpv1.GetSkillRet{ReqId: req.GetReqId(), Name: req.GetName(), RelPath: rel, MimeType: "application/octet-stream",
			TotalSize: int64(len(b)), Sha256: sum256(b), BlobHandle: new("h-data.bin")}, nil
	}
	return nil, smcp.Errorf(smcp.CodeSkillResourceNotAccessible, "no such file").WithDetails(map[string]any{"reason": "not_found", "rel_path": rel})
}

func (lc *labComputer) getBlob(payload json.RawMessage) (any, error) {
	req := &smcpv1.GetBlobReq{}
	if err := decode(payload, req); err != nil {
		return nil, err
	}
	b, ok := lc.blobs[req.GetBlobHandle()]
	off := req.GetChunkOffset()
	switch {
	case !ok:
		return nil, smcp.Errorf(smcp.CodeBlobNotAccessible, "unknown blob handle").WithDetails(map[string]any{"reason": "invalid_handle"})
	case off < 0 || off > int64(len(b)):
		return nil, smcp.Errorf(smcp.CodeBlobNotAccessible, "offset %d outside the blob", off).WithDetails(map[string]any{"reason": "range"})
	}
	n := int64(labChunk)
	if req.MaxChunkBytes != nil {
		n = min(n, req.GetMaxChunkBytes())
	}
	end := min(off+n, int64(len(b)))
	lc.mu.Lock()
	lc.getBlobs++
	lc.mu.Unlock()
	mime := "application/octet-stream"
	if req.GetBlobHandle() == "h-chart.png" {
		mime = "image/png"
	}
	return &smcpv1.GetBlobRet{ReqId: req.GetReqId(), BlobHandle: req.GetBlobHandle(), MimeType: mime, TotalSize: int64(len(b)),
		Sha256: sum256(b), ChunkOffset: off, Eof: end == int64(len(b)), Blob: base64.StdEncoding.EncodeToString(b[off:end])}, nil
}

func (lc *labComputer) blobReads() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.getBlobs
}

// announce sends a server:* update (server:update_tool_list,
// server:update_skills) as a computer does when its lists change.
func (lc *labComputer) announce(t *testing.T, event string) {
	t.Helper()
	if err := lc.c.Emit(event, map[string]string{"computer": labPC}); err != nil {
		t.Fatalf("%s: %v", event, err)
	}
}
