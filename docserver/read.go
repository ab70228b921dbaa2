package docserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// readMiddleware answers resources/read for every dpe:// URI itself. The SDK
// routes reads by exact URI or by template match, and neither matches a URI
// with a query (…/pages/0?format=markdown) or the Level 0 catalog; the DPE
// error codes 4201-4204 must also reach the client as they are.
func (s *Server) readMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "resources/read" {
			return next(ctx, method, req)
		}
		r, ok := req.(*mcp.ReadResourceRequest)
		if !ok || r.Params == nil || !dpeuri.IsDPE(r.Params.URI) {
			return next(ctx, method, req)
		}
		res, err := s.readDPE(r.Params.URI)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// readTemplate is the handler registered with the SDK for document resources
// and templates. The middleware answers first; this is reached only if the
// middleware is bypassed.
func (s *Server) readTemplate(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.readDPE(req.Params.URI)
}

// readDPE reads a dpe:// URI at its level, in the requested format.
func (s *Server) readDPE(raw string) (*mcp.ReadResourceResult, error) {
	u, err := dpeuri.Parse(raw)
	if err != nil {
		return nil, wireError(err)
	}
	if u.Host != s.opts.Host {
		return nil, s.otherHost(raw, u.Host)
	}
	var view dpe.Renderable
	switch u.Level() {
	case dpeuri.LevelCatalogue:
		view = dpe.CatalogView(s.opts.Host, s.lib.documents())
	default:
		doc, ok := s.lib.document(u.DocRef)
		if !ok {
			return nil, wireError(smcp.Errorf(smcp.CodeDocumentNotFound, "document %q not found", u.DocRef).
				WithDetails(map[string]any{"uri": raw, "doc_ref": u.DocRef}))
		}
		switch u.Level() {
		case dpeuri.LevelDocument:
			if u.Query.DepthOrDefault() == dpeuri.DepthPages {
				view = doc.PagesView(s.opts.Host, u.Query.OffsetOrDefault(), u.Query.LimitOrDefault())
			} else {
				view = doc.SummaryView(s.opts.Host)
			}
		case dpeuri.LevelPage:
			if u.PageIndex >= len(doc.Pages) {
				return nil, wireError(smcp.Errorf(smcp.CodePageOutOfRange, "page %d out of range: document %q has %d pages", u.PageIndex, u.DocRef, len(doc.Pages)).
					WithDetails(map[string]any{"uri": raw, "doc_ref": u.DocRef, "page_index": u.PageIndex, "page_count": len(doc.Pages)}))
			}
			view = doc.PageView(s.opts.Host, u.PageIndex, u.Query.Categories)
		case dpeuri.LevelElement:
			el, ok := doc.ElementView(s.opts.Host, u.ElementID)
			if !ok {
				return nil, wireError(smcp.Errorf(smcp.CodeElementNotFound, "element %q not found in document %q", u.ElementID, u.DocRef).
					WithDetails(map[string]any{"uri": raw, "doc_ref": u.DocRef, "element_id": u.ElementID}))
			}
			view = el
		}
	}
	format := u.Query.FormatOrDefault()
	text, err := dpe.Render(view, format)
	if err != nil {
		return nil, wireError(smcp.Errorf(smcp.CodeInternal, "rendering %s: %v", raw, err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI:      raw,
		MIMEType: dpe.MIMEType(format),
		Text:     text,
	}}}, nil
}

// otherHost is the error for a dpe:// URI of a host this server does not
// serve: no document of it exists here.
func (s *Server) otherHost(uri, host string) error {
	return wireError(smcp.Errorf(smcp.CodeDocumentNotFound, "this server serves dpe://%s, not host %q", s.opts.Host, host).
		WithDetails(map[string]any{"uri": uri, "host": host}))
}

// wireError turns a protocol error into the JSON-RPC error the client sees:
// code = the SMCP code (4201-4204), message, and data = the details object.
// A computer maps it back to a flat SMCP error one to one.
func wireError(err error) error {
	e, ok := smcp.AsError(err)
	if !ok {
		return err
	}
	w := &jsonrpc.Error{Code: int64(e.Code), Message: e.Message}
	if len(e.Details) > 0 {
		data, merr := json.Marshal(e.Details)
		if merr != nil {
			return fmt.Errorf("encoding error details: %w", merr)
		}
		w.Data = data
	}
	return w
}
