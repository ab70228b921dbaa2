package docserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// Tool limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
	maxQueryRunes      = 500
)

// SearchInput is the arguments of search_documents.
type SearchInput struct {
	Query    string `json:"query" jsonschema:"words to find, case-insensitive; a hit contains every word"`
	FileType string `json:"file_type,omitempty" jsonschema:"only documents of this file type"`
	Limit    int    `json:"limit,omitempty" jsonschema:"the most hits to return"`
}

// SearchHit is one place a query matched.
type SearchHit struct {
	Title       string `json:"title" jsonschema:"title of the document"`
	DocRef      string `json:"doc_ref"`
	FileType    string `json:"file_type"`
	DocumentURI string `json:"document_uri" jsonschema:"Level 1 dpe:// URI of the document"`
	PageIndex   *int   `json:"page_index,omitempty" jsonschema:"index of the page; absent for a hit on the document's title or metadata"`
	PageTitle   string `json:"page_title,omitempty"`
	PageURI     string `json:"page_uri,omitempty" jsonschema:"Level 2 dpe:// URI of the page"`
	ElementURI  string `json:"element_uri,omitempty" jsonschema:"Level 3 dpe:// URI of the element; absent for a hit on a title"`
	Category    string `json:"category,omitempty" jsonschema:"element category (heading, text, table, ...)"`
	Match       string `json:"match" jsonschema:"what matched, best first: title, metadata, heading or body"`
	Snippet     string `json:"snippet" jsonschema:"the matching text, shortened; a table row is shown with its column names"`
}

// SearchOutput is the result of search_documents.
type SearchOutput struct {
	Query     string      `json:"query"`
	Hits      []SearchHit `json:"hits"`
	TotalHits int         `json:"total_hits" jsonschema:"number of hits before the limit"`
}

// ListInput is the arguments of list_documents.
type ListInput struct {
	FileType string `json:"file_type,omitempty" jsonschema:"only documents of this file type"`
}

// ListOutput is the result of list_documents: the Level 0 catalog.
type ListOutput struct {
	Documents  []dpe.DocumentSummary `json:"documents"`
	TotalCount int                   `json:"total_count"`
}

// addTools registers search_documents and list_documents.
func (s *Server) addTools() {
	fileTypes := formats.FileTypes()
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}

	searchSchema := mustSchema[SearchInput]()
	q := searchSchema.Properties["query"]
	q.MinLength, q.MaxLength = new(1), new(maxQueryRunes)
	restrictFileType(searchSchema, fileTypes)
	limit := searchSchema.Properties["limit"]
	limit.Minimum, limit.Maximum = new(1.0), new(float64(MaxSearchLimit))
	limit.Default = []byte(fmt.Sprint(DefaultSearchLimit))
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "search_documents",
		Title: "Search documents",
		Description: "Find where words occur in the documents (" + strings.Join(fileTypes, ", ") + ") served at dpe://" + s.opts.Host +
			". Case-insensitive; every word must occur in the same title, heading or element. Hits on document titles come first, " +
			"then keywords and summaries, then headings, then body text; each hit carries the dpe:// URIs to read next.",
		InputSchema: searchSchema,
		Annotations: readOnly,
	}, s.searchTool)

	listSchema := mustSchema[ListInput]()
	restrictFileType(listSchema, fileTypes)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "list_documents",
		Title:       "List documents",
		Description: "The documents served at dpe://" + s.opts.Host + ": title, file type, page count and dpe:// URI of each, sorted by path.",
		InputSchema: listSchema,
		Annotations: readOnly,
	}, s.listTool)
}

func mustSchema[T any]() *jsonschema.Schema {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("docserver: schema of %T: %v", *new(T), err))
	}
	return sch
}

func restrictFileType(sch *jsonschema.Schema, fileTypes []string) {
	ft := sch.Properties["file_type"]
	for _, t := range fileTypes {
		ft.Enum = append(ft.Enum, t)
	}
}

func (s *Server) searchTool(_ context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	// The schema bounds limit; a client that skips validation is stopped here.
	if in.Limit == 0 {
		in.Limit = DefaultSearchLimit
	}
	if in.Limit < 1 || in.Limit > MaxSearchLimit {
		return nil, SearchOutput{}, fmt.Errorf("limit must be between 1 and %d, got %d", MaxSearchLimit, in.Limit)
	}
	if err := checkFileType(in.FileType); err != nil {
		return nil, SearchOutput{}, err
	}
	q := newSearchQuery(in.Query, in.FileType)
	if len(q.terms) == 0 {
		return nil, SearchOutput{}, fmt.Errorf("query %q has no words to search for", in.Query)
	}
	hits := s.index.search(q)
	out := SearchOutput{Query: in.Query, Hits: make([]SearchHit, 0, min(len(hits), in.Limit)), TotalHits: len(hits)}
	for _, h := range hits[:min(len(hits), in.Limit)] {
		out.Hits = append(out.Hits, s.searchHit(h, q))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: searchText(out, in.FileType)}}}, out, nil
}

func (s *Server) searchHit(h hit, q searchQuery) SearchHit {
	d, u := h.doc.doc, h.unit
	sh := SearchHit{
		Title:       d.Title,
		DocRef:      d.DocRef,
		FileType:    d.FileType,
		DocumentURI: dpe.DocURI(s.opts.Host, d.DocRef),
		Match:       u.match,
		Snippet:     u.snippet(q),
	}
	if u.page >= 0 {
		sh.PageIndex = new(u.page)
		sh.PageTitle = d.Pages[u.page].Title
		sh.PageURI = dpe.PageURI(s.opts.Host, d.DocRef, u.page)
	}
	if u.element != nil {
		sh.ElementURI = dpe.ElementURI(s.opts.Host, d.DocRef, u.element.ID)
		sh.Category = u.element.Category
	}
	return sh
}

// searchText is the hits as text, for clients that show only content.
func searchText(out SearchOutput, fileType string) string {
	var b strings.Builder
	scope := ""
	if fileType != "" {
		scope = " in " + fileType + " documents"
	}
	if len(out.Hits) == 0 {
		fmt.Fprintf(&b, "No match for %q%s.", out.Query, scope)
		return b.String()
	}
	fmt.Fprintf(&b, "%d of %d hits for %q%s (titles first, then metadata, headings, body):\n", len(out.Hits), out.TotalHits, out.Query, scope)
	for i, h := range out.Hits {
		where := h.Match
		if h.Category != "" && h.Category != h.Match {
			where += " (" + h.Category + ")"
		}
		if h.PageIndex != nil {
			where = fmt.Sprintf("page %d %q, %s", *h.PageIndex, h.PageTitle, where)
		}
		uri := cmp.Or(h.ElementURI, h.PageURI, h.DocumentURI)
		fmt.Fprintf(&b, "\n%d. %s (%s) — %s\n   %s\n   %s\n", i+1, h.Title, h.FileType, where, h.Snippet, uri)
	}
	return b.String()
}

func (s *Server) listTool(_ context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	if err := checkFileType(in.FileType); err != nil {
		return nil, ListOutput{}, err
	}
	docs := slices.DeleteFunc(s.lib.documents(), func(d *dpe.Document) bool {
		return in.FileType != "" && d.FileType != in.FileType
	})
	cat := dpe.CatalogView(s.opts.Host, docs)
	text, err := dpe.Render(cat, dpe.FormatMarkdown)
	if err != nil {
		return nil, ListOutput{}, err
	}
	out := ListOutput{Documents: cat.Documents, TotalCount: cat.TotalCount}
	if out.Documents == nil {
		out.Documents = []dpe.DocumentSummary{}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func checkFileType(ft string) error {
	if ft != "" && !slices.Contains(formats.FileTypes(), ft) {
		return fmt.Errorf("file_type %q is not one of %s", ft, strings.Join(formats.FileTypes(), ", "))
	}
	return nil
}
