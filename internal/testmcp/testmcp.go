// Package testmcp is a real go-sdk MCP server for the tests of the computer
// and of the gateway's MCP front end:
// tools (echo, add, slow, pid), window:// resources and dpe:// documents
// served at all four levels with the DPE error convention of package
// computer (JSON-RPC error code 4201/4202/4203, data = details). It runs
// in-process over streamable HTTP or as a child process over stdio
// (./cmd/testmcp).
package testmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// Fixture is one MCP server with mutable tools and resources.
type Fixture struct {
	Server *mcp.Server
	name   string

	mu      sync.Mutex
	windows map[string]*Window
	hosts   map[string]map[string]*Doc // host → doc_ref → doc
	// SlowStarted receives the req of each slow call when it starts.
	SlowStarted chan string
	// SlowCancelled receives when a slow call's context ends early.
	SlowCancelled chan string
}

// Window is a window:// resource.
type Window struct {
	URI        string
	Text       string
	Priority   *float64
	Fullscreen bool
}

// Doc is a DPE document.
type Doc struct {
	DocRef       string
	Title        string
	FileType     string
	Keywords     []string
	Summary      string
	LastModified string
	Pages        []Page
}

// Page is one page of a Doc.
type Page struct {
	Title    string
	Elements []Element
}

// Element is one element of a Page.
type Element struct {
	ID       string
	Category string
	Summary  string
	Content  map[string]any
}

// Options tune a fixture.
type Options struct {
	// NoSubscribe makes the server not declare resources.subscribe.
	NoSubscribe bool
}

// New makes a fixture named name with the tools echo, add, slow and pid.
func New(name string, opts Options) *Fixture {
	f := &Fixture{
		name:          name,
		windows:       map[string]*Window{},
		hosts:         map[string]map[string]*Doc{},
		SlowStarted:   make(chan string, 16),
		SlowCancelled: make(chan string, 16),
	}
	so := &mcp.ServerOptions{HasResources: true, HasTools: true}
	if !opts.NoSubscribe {
		so.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		so.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	f.Server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, so)
	type echoIn struct {
		Text string `json:"text" jsonschema:"text to echo"`
	}
	mcp.AddTool(f.Server, &mcp.Tool{Name: "echo", Description: "Echo the text back, prefixed with the server name.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}, Meta: mcp.Meta{"owner": "tests", "labels": []any{"a", "b"}}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Text}}}, nil, nil
		})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	type addOut struct {
		Sum float64 `json:"sum"`
	}
	mcp.AddTool(f.Server, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	type slowIn struct {
		Tag     string  `json:"tag"`
		Seconds float64 `json:"seconds"`
	}
	mcp.AddTool(f.Server, &mcp.Tool{Name: "slow", Description: "Wait the given seconds (or until cancelled)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			select {
			case f.SlowStarted <- in.Tag:
			default:
			}
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + in.Tag}}}, nil, nil
			case <-ctx.Done():
				select {
				case f.SlowCancelled <- in.Tag:
				default:
				}
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(f.Server, &mcp.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(os.Getpid())}}}, nil, nil
		})
	return f
}

// AddEcho adds another echo-like tool named toolName (a tools/list_changed
// notification follows).
func (f *Fixture) AddEcho(toolName string) {
	mcp.AddTool(f.Server, &mcp.Tool{Name: toolName, Description: "echo"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: toolName + ": " + in.Text}}}, nil, nil
		})
}

// HTTPHandler serves the fixture over streamable HTTP.
func (f *Fixture) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return f.Server }, nil)
}

// SetWindow adds or replaces a window (resources/list_changed follows).
func (f *Fixture) SetWindow(w Window) {
	f.mu.Lock()
	f.windows[w.URI] = &w
	f.mu.Unlock()
	r := &mcp.Resource{URI: w.URI, Name: w.URI, MIMEType: "text/plain"}
	if w.Priority != nil {
		r.Annotations = &mcp.Annotations{Priority: *w.Priority, Audience: []mcp.Role{"assistant"}}
	}
	if w.Fullscreen {
		r.Meta = mcp.Meta{"fullscreen": true}
	}
	f.Server.AddResource(r, f.readWindow)
}

// SetWindowText changes a window's text and sends resources/updated.
func (f *Fixture) SetWindowText(ctx context.Context, uri, text string) error {
	f.mu.Lock()
	w, ok := f.windows[uri]
	if ok {
		w.Text = text
	}
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("no window %s", uri)
	}
	return f.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// RemoveResource removes a resource (resources/list_changed follows).
func (f *Fixture) RemoveResource(uri string) {
	f.mu.Lock()
	delete(f.windows, uri)
	if u, err := dpeuri.Parse(uri); err == nil {
		delete(f.hosts[u.Host], u.DocRef)
	}
	f.mu.Unlock()
	f.Server.RemoveResources(uri)
}

func (f *Fixture) readWindow(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.windows[req.Params.URI]
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	var contents []*mcp.ResourceContents
	if w.Text != "" {
		contents = append(contents, &mcp.ResourceContents{URI: w.URI, MIMEType: "text/plain", Text: w.Text})
	} else {
		contents = []*mcp.ResourceContents{}
	}
	return &mcp.ReadResourceResult{Contents: contents}, nil
}

// SetDocs adds documents under host; the resource template serving every
// level of host is registered the first time. Only one list_changed
// notification per added document is sent by the go-sdk.
func (f *Fixture) SetDocs(host string, docs ...Doc) {
	f.mu.Lock()
	first := f.hosts[host] == nil
	if first {
		f.hosts[host] = map[string]*Doc{}
	}
	for i := range docs {
		d := docs[i]
		f.hosts[host][d.DocRef] = &d
	}
	f.mu.Unlock()
	if first {
		f.Server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "dpe://" + host + "/{+rest}", Name: host, MIMEType: "application/json"}, f.readDPE)
		f.Server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "dpe://" + host + "{?format}", Name: host + " catalogue", MIMEType: "application/json"}, f.readDPE)
	}
	rs := make([]*mcp.Resource, 0, len(docs))
	for _, d := range docs {
		rs = append(rs, &mcp.Resource{URI: dpeuri.Document(host, d.DocRef).String(), Name: d.Title, MIMEType: "application/json"})
	}
	for _, r := range rs {
		f.Server.AddResource(r, f.readDPE)
	}
}

// TouchDoc changes a document's title and sends resources/updated.
func (f *Fixture) TouchDoc(ctx context.Context, host, docRef, title string) error {
	f.mu.Lock()
	d, ok := f.hosts[host][docRef]
	if ok {
		d.Title = title
	}
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("no document %s/%s", host, docRef)
	}
	return f.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: dpeuri.Document(host, docRef).String()})
}

// dpeError is the DPE error convention: the SMCP code as JSON-RPC code,
// details as data.
func dpeError(code int, msg string, details map[string]any) error {
	b, _ := json.Marshal(details)
	return &jsonrpc.Error{Code: int64(code), Message: msg, Data: b}
}

func summary(host string, d *Doc) map[string]any {
	m := map[string]any{
		"doc_ref": d.DocRef, "uri": dpeuri.Document(host, d.DocRef).String(),
		"file_uri": "file:///docs/" + d.DocRef + "." + d.FileType, "file_type": d.FileType,
		"title": d.Title, "page_count": len(d.Pages),
	}
	if len(d.Keywords) > 0 {
		m["keywords"] = d.Keywords
	}
	if d.Summary != "" {
		m["summary"] = d.Summary
	}
	if d.LastModified != "" {
		m["last_modified"] = d.LastModified
	}
	return m
}

func (f *Fixture) readDPE(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw := req.Params.URI
	u, err := dpeuri.Parse(raw)
	if err != nil {
		e, _ := smcp.AsError(err)
		return nil, dpeError(e.Code, e.Message, e.Details)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	docs := f.hosts[u.Host]
	var body any
	switch u.Level() {
	case dpeuri.LevelCatalogue:
		refs := make([]string, 0, len(docs))
		for r := range docs {
			refs = append(refs, r)
		}
		sort.Strings(refs)
		list := []any{}
		for _, r := range refs {
			list = append(list, summary(u.Host, docs[r]))
		}
		body = map[string]any{"documents": list, "total_count": len(list)}
	default:
		d, ok := docs[u.DocRef]
		if !ok {
			return nil, dpeError(smcp.CodeDocumentNotFound, "document not found", map[string]any{"doc_ref": u.DocRef})
		}
		switch u.Level() {
		case dpeuri.LevelDocument:
			m := summary(u.Host, d)
			if u.Query.DepthOrDefault() == "pages" {
				off, lim := u.Query.OffsetOrDefault(), u.Query.LimitOrDefault()
				pages := []any{}
				for i := off; i < len(d.Pages) && i < off+lim; i++ {
					pages = append(pages, map[string]any{"page_index": i, "title": d.Pages[i].Title,
						"element_count": len(d.Pages[i].Elements), "uri": dpeuri.Page(u.Host, d.DocRef, i).String(), "doc_ref": d.DocRef})
				}
				m["pages"], m["page_offset"], m["page_limit"], m["page_total"] = pages, off, lim, len(d.Pages)
			}
			body = m
		case dpeuri.LevelPage:
			if u.PageIndex >= len(d.Pages) {
				return nil, dpeError(smcp.CodePageOutOfRange, "page out of range",
					map[string]any{"page_index": u.PageIndex, "page_count": len(d.Pages)})
			}
			p := d.Pages[u.PageIndex]
			els := []any{}
			for _, e := range p.Elements {
				if u.Query.AllowsCategory(e.Category) {
					els = append(els, map[string]any{"element_id": e.ID, "category": e.Category, "summary": e.Summary, "content": e.Content})
				}
			}
			if u.Query.FormatOrDefault() == "markdown" {
				var b strings.Builder
				for _, e := range els {
					m := e.(map[string]any)
					fmt.Fprintf(&b, "[%s: %s]\n\n", m["category"], m["summary"])
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: raw, MIMEType: "text/markdown", Text: b.String()}}}, nil
			}
			body = map[string]any{"page_index": u.PageIndex, "title": p.Title, "doc_ref": d.DocRef,
				"uri": dpeuri.Page(u.Host, d.DocRef, u.PageIndex).String(), "elements": els, "element_count": len(els)}
		case dpeuri.LevelElement:
			for pi, p := range d.Pages {
				i := slices.IndexFunc(p.Elements, func(e Element) bool { return e.ID == u.ElementID })
				if i >= 0 {
					e := p.Elements[i]
					body = map[string]any{"element_id": e.ID, "category": e.Category, "summary": e.Summary, "content": e.Content,
						"doc_ref": d.DocRef, "page_index": pi, "uri": dpeuri.Element(u.Host, d.DocRef, e.ID).String()}
				}
			}
			if body == nil {
				return nil, dpeError(smcp.CodeElementNotFound, "element not found", map[string]any{"element_id": u.ElementID})
			}
		}
	}
	b, _ := json.Marshal(body)
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: raw, MIMEType: "application/json", Text: string(b)}}}, nil
}
