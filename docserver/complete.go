package docserver

import (
	"context"
	"strconv"
	"strings"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// maxCompletions is the most values one completion returns (the MCP limit).
const maxCompletions = 100

// complete answers completion/complete for the two dpe:// templates, along
// the chain doc_ref → page_index → element_id: page_index needs doc_ref in
// the request's context arguments; element_id needs doc_ref and narrows to a
// page when page_index is there too. Values are matched by prefix.
func (s *Server) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var values []string
	if p.Ref != nil && p.Ref.Type == "ref/resource" && strings.HasPrefix(p.Ref.URI, "dpe://"+s.opts.Host+"/") {
		var args map[string]string
		if p.Context != nil {
			args = p.Context.Arguments
		}
		values = s.candidates(p.Argument.Name, args)
	}
	matched := []string{}
	for _, v := range values {
		if strings.HasPrefix(v, p.Argument.Value) {
			matched = append(matched, v)
		}
	}
	res := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: matched, Total: len(matched)}}
	if len(matched) > maxCompletions {
		res.Completion.Values = matched[:maxCompletions]
		res.Completion.HasMore = true
	}
	return res, nil
}

func (s *Server) candidates(arg string, ctxArgs map[string]string) []string {
	if arg == "doc_ref" {
		var refs []string
		for _, d := range s.lib.documents() {
			refs = append(refs, d.DocRef)
		}
		return refs
	}
	doc, ok := s.lib.document(ctxArgs["doc_ref"])
	if !ok {
		return nil
	}
	switch arg {
	case "page_index":
		out := make([]string, len(doc.Pages))
		for i := range doc.Pages {
			out[i] = strconv.Itoa(i)
		}
		return out
	case "element_id":
		pages := doc.Pages
		if pi, err := strconv.Atoi(ctxArgs["page_index"]); err == nil && pi >= 0 && pi < len(doc.Pages) {
			pages = doc.Pages[pi : pi+1]
		}
		var out []string
		for _, pg := range pages {
			for _, e := range pg.Elements {
				out = append(out, e.ID)
			}
		}
		return out
	}
	return nil
}
