package computer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/smcpgw/smcp-gateway/computer/servers"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

func (c *Computer) handleReadResource(ctx context.Context, req *smcpv1.ReadResourceReq) (any, error) {
	reqID, uri := req.GetReqId(), req.GetUri()
	if uri == "" {
		return nil, smcp.Errorf(smcp.CodeBadRequest, "missing %q", "uri")
	}
	var server string
	switch {
	case dpeuri.ClaimsDPE(uri):
		u, err := dpeuri.Parse(uri)
		if err != nil {
			return nil, err // 4204 with the failed rule
		}
		owner, ok := c.hostOwner(dpeuri.Scheme, u.Host)
		if !ok {
			return nil, smcp.Errorf(smcp.CodeDocumentNotFound, "no MCP server serves dpe host %q", u.Host).WithDetails(map[string]any{"host": u.Host})
		}
		server = owner
	case windowuri.IsWindow(uri):
		u, _, err := windowuri.Parse(uri)
		if err != nil {
			return nil, smcp.Errorf(smcp.CodeBadRequest, "%v", err)
		}
		owner, ok := c.hostOwner(windowuri.Scheme, u.Host)
		if !ok {
			return nil, smcp.Errorf(smcp.CodeNotFound, "no MCP server serves window host %q", u.Host)
		}
		server = owner
		uri = c.listedWindowURI(owner, uri)
	default:
		return nil, smcp.Errorf(smcp.CodeBadRequest, "client:read_resource reads dpe:// and window:// URIs only")
	}
	res, err := c.servers.ReadResource(ctx, server, uri)
	if err != nil {
		return nil, mcpReadError(server, uri, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	// The MCP result's contents are passed on as the server wrote them.
	var out readResourceRet
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("MCP server %q: read %s: %w", server, uri, err)
	}
	if isNull(out.Contents) {
		out.Contents = json.RawMessage("[]")
	}
	out.ReqID = reqID
	return out, nil
}

// readResourceRet is the answer of client:read_resource (ReadResourceRet,
// with the MCP result's _meta).
type readResourceRet struct {
	Meta     json.RawMessage `json:"_meta,omitempty"`
	Contents json.RawMessage `json:"contents"`
	ReqID    string          `json:"req_id"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// documentGone reports whether a read of a dpe:// document failed because
// the server no longer has it.
func documentGone(uri string, err error) bool {
	e, ok := smcp.AsError(mcpReadError("", uri, err))
	return ok && e.Code == smcp.CodeDocumentNotFound
}

// mcpReadError maps an MCP server's resources/read failure to a flat
// error, passing the DPE codes through (see the package comment).
func mcpReadError(server, uri string, err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		code := int(werr.Code)
		switch {
		case code >= smcp.CodeDocumentNotFound && code <= smcp.CodeInvalidDPEURI:
		case code == int(mcp.CodeResourceNotFound) && dpeuri.IsDPE(uri):
			code = smcp.CodeDocumentNotFound
		case code == int(mcp.CodeResourceNotFound):
			code = smcp.CodeNotFound
		default:
			return smcp.Errorf(smcp.CodeInternal, "MCP server %q could not read %s: %s", server, uri, werr.Message)
		}
		e := smcp.Errorf(code, "%s", werr.Message)
		var details map[string]any
		if len(werr.Data) > 0 && json.Unmarshal(werr.Data, &details) == nil && len(details) > 0 {
			e.Details = details
		}
		return e
	}
	switch {
	case errors.Is(err, servers.ErrNotConnected):
		return smcp.Errorf(smcp.CodeInternal, "MCP server %q is not connected", server)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return smcp.Errorf(smcp.CodeTimeout, "MCP server %q did not answer in time", server)
	}
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i >= 0 {
		msg = msg[:i]
	}
	return smcp.Errorf(smcp.CodeInternal, "MCP server %q could not read %s: %s", server, uri, msg)
}

// listedWindowURI maps a window URI as agents see it to the URI its server
// listed: an SDK 0.1.x server lists window://host/path?priority=..., the
// Desktop shows it without the query, and the server is asked with its own.
func (c *Computer) listedWindowURI(server, uri string) string {
	snap, ok := c.servers.Snapshot(server)
	if !ok {
		return uri
	}
	match := ""
	for _, r := range snap.Resources {
		if r.URI == uri {
			return uri
		}
		if match == "" && strings.HasPrefix(r.URI, uri) && strings.ContainsAny(r.URI[len(uri):len(uri)+1], "?#") {
			match = r.URI
		}
	}
	if match == "" {
		return uri
	}
	return match
}
