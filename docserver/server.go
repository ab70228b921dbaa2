// Package docserver is an MCP server that serves the files under a folder as
// dpe:// documents (seed 004): Markdown, plain text, CSV/TSV, JSON, XLSX and
// PDF, read at four levels (catalog, document, page, element) in JSON,
// Markdown or text. It watches the folder and tells subscribed clients what
// changed, and shows a status window (window://{host}/status) on the Desktop.
//
// In-process use:
//
//	srv, err := docserver.New(docserver.Options{Root: "examples/docs"})
//	if err != nil { ... }
//	defer srv.Close()
//	err = srv.Run(ctx, &mcp.StdioTransport{}) // or any mcp.Transport
//
// or serve srv.Handler() over streamable HTTP; or connect srv.MCP() to an
// in-memory transport and run srv.Watch(ctx) beside it.
//
// What is served: every file with a supported extension (see package
// formats) under Root, recursively. Hidden files and folders (".name") are
// skipped; symlinks are followed only while they stay inside Root (os.Root),
// and symlinked folders are not descended into. A file larger than
// MaxFileSize, or one that fails to parse, is not served and is listed with
// the reason in the status window. doc_refs derive from the relative path
// (slug of the file name + 6 hex digits of its hash); element ids from the
// element's category and content, so both are stable across restarts.
//
// Tools: search_documents (case-insensitive search over titles, keywords,
// summaries, page titles and element text, ranked title > metadata > heading
// > body, each hit with the dpe:// URIs to read next) and list_documents
// (the catalog). The search index is derived from the parsed documents and
// follows the watcher.
//
// Reads: resources/read of dpe://{host}[/{doc_ref}[/pages/{N}|/elements/{ID}]]
// with format (json → application/json, markdown → text/markdown, text →
// text/plain), depth, offset, limit and categories. Errors are JSON-RPC
// errors whose code is the SMCP code: 4201 unknown document (or another
// host), 4202 page out of range, 4203 unknown element, 4204 invalid URI;
// data is the details object (uri, doc_ref, page_index, page_count,
// element_id, rule).
package docserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

// Options configure a Server. Only Root is required.
type Options struct {
	// Root is the folder whose files are served. Nothing outside it is ever
	// read, symlinks included.
	Root string
	// Host is the dpe:// host of every URI (reverse-domain style).
	Host string
	// Name and Version identify the server in the MCP handshake.
	Name    string
	Version string
	// MaxFileSize is the largest file parsed, in bytes; bigger files are
	// skipped with a warning.
	MaxFileSize int64
	// MaxFiles bounds the number of files served.
	MaxFiles int
	// Formats tune page sizes of the parsers.
	Formats formats.Options
	// Debounce is how long the watcher waits for a burst of file events to
	// settle before rescanning.
	Debounce time.Duration
	// Logger receives warnings (skipped files) and watcher errors.
	Logger *slog.Logger
}

// Defaults for zero Options fields.
const (
	DefaultHost        = "com.example.docs"
	DefaultName        = "smcp-docs"
	DefaultMaxFileSize = 32 << 20
	DefaultMaxFiles    = 10000
	DefaultDebounce    = 150 * time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = "0.2.0"
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Server serves one folder as dpe:// documents over MCP.
type Server struct {
	opts      Options
	log       *slog.Logger
	lib       *library
	mcp       *mcp.Server
	statusURI string
	status    *statusLog

	// resources mirrors what was registered with mcp, to register only what
	// changed (each registration notifies every session).
	resMu     sync.Mutex
	resources map[string]mcp.Resource

	subs     subscriptions
	index    searchIndex
	watching atomic.Bool
}

// New scans opts.Root once and builds the MCP server. Files that fail to
// parse are skipped (see the status window); only an unusable root or host is
// an error.
func New(opts Options) (*Server, error) {
	if opts.Root == "" {
		return nil, errors.New("docserver: Root is required")
	}
	opts = opts.withDefaults()
	// The host is written verbatim into URI templates and instructions, so
	// it must read back unchanged, without escaping.
	if u, err := dpeuri.Parse("dpe://" + opts.Host); err != nil || u.Host != opts.Host || u.String() != "dpe://"+opts.Host {
		return nil, fmt.Errorf("docserver: host %q is not usable in dpe:// URIs as it is (want e.g. com.example.docs)", opts.Host)
	}
	statusURI, err := windowuri.Build(opts.Host, "status")
	if err != nil {
		return nil, fmt.Errorf("docserver: host %q: %w", opts.Host, err)
	}
	lib, err := newLibrary(opts.Root, opts, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("docserver: %w", err)
	}
	s := &Server{
		opts:      opts,
		log:       opts.Logger,
		lib:       lib,
		statusURI: statusURI,
		status:    newStatusLog(),
		resources: map[string]mcp.Resource{},
		subs:      subscriptions{uris: map[string]map[*mcp.ServerSession]bool{}},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: "Documents of a folder as dpe://" + opts.Host + " resources. " +
			"Read dpe://" + opts.Host + " for the catalog, then a document URI (?depth=pages for its page index), " +
			"then /pages/{N}, then /elements/{ID}. Add ?format=markdown or ?format=text for prose. " +
			"The search_documents tool finds words across all documents and returns the URIs to read.",
		Logger:             opts.Logger,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		CompletionHandler:  s.complete,
		Capabilities: &mcp.ServerCapabilities{
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			Tools:       &mcp.ToolCapabilities{},
		},
	})
	s.addTools()
	s.mcp.AddReceivingMiddleware(s.readMiddleware)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "dpe://" + opts.Host + "/{doc_ref}/pages/{page_index}",
		Name:        "document-page",
		Title:       "Document page",
		Description: "A page of a document: its elements (?format=json|markdown|text, ?categories=table,...).",
		MIMEType:    "application/json",
	}, s.readTemplate)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: "dpe://" + opts.Host + "/{doc_ref}/elements/{element_id}",
		Name:        "document-element",
		Title:       "Document element",
		Description: "One element of a document with its full content and metadata.",
		MIMEType:    "application/json",
	}, s.readTemplate)
	s.mcp.AddResource(&mcp.Resource{
		URI:         statusURI,
		Name:        "docs-status",
		Title:       "Document server status",
		Description: "What this document server serves, what it skipped and what changed recently.",
		MIMEType:    "text/markdown",
		Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 0.3},
	}, s.readStatus)

	// The first scan is the starting state, not a change: nobody to tell.
	if _, err := lib.scan(nil); err != nil {
		lib.close()
		return nil, fmt.Errorf("docserver: %w", err)
	}
	s.refresh()
	return s, nil
}

// MCP is the underlying go-sdk server, for callers that manage transports
// themselves (run Watch beside it to follow file changes).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Host is the dpe:// host this server answers for.
func (s *Server) Host() string { return s.opts.Host }

// StatusURI is the URI of the status window.
func (s *Server) StatusURI() string { return s.statusURI }

// Run watches the root and serves one session on t until ctx is done or the
// client disconnects.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() { watchErr <- s.Watch(ctx) }()
	err := s.mcp.Run(ctx, t)
	cancel()
	if werr := <-watchErr; werr != nil && !errors.Is(werr, context.Canceled) && err == nil {
		err = werr
	}
	return err
}

// Handler serves the MCP streamable HTTP transport (many sessions). Run
// Watch beside it to follow file changes.
func (s *Server) Handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}

// Close releases the root folder.
func (s *Server) Close() error { return s.lib.close() }

// rescan brings the library up to date and tells clients what changed.
func (s *Server) rescan(ctx context.Context, dirty map[string]bool) error {
	ch, err := s.lib.scan(dirty)
	if err != nil {
		return err
	}
	s.refresh()
	if ch.empty() {
		return nil
	}
	s.status.record(s.lib, ch)
	s.notify(ctx, ch)
	return nil
}

// refresh brings the resource list and the search index in step with the
// library after a scan.
func (s *Server) refresh() {
	docs := s.lib.documents()
	s.index.sync(docs)
	s.syncResources(docs)
}

// syncResources registers a Level 1 resource per served document and removes
// the ones gone. The SDK sends notifications/resources/list_changed for each
// change, debounced.
func (s *Server) syncResources(docs []*dpe.Document) {
	want := map[string]mcp.Resource{}
	for _, d := range docs {
		r := mcp.Resource{
			URI:         dpe.DocURI(s.opts.Host, d.DocRef),
			Name:        d.Title,
			Title:       d.Title,
			Description: d.Summary,
			MIMEType:    "application/json",
		}
		if !d.LastModified.IsZero() {
			r.Annotations = &mcp.Annotations{LastModified: d.LastModified.UTC().Format(time.RFC3339)}
		}
		want[r.URI] = r
	}
	s.resMu.Lock()
	defer s.resMu.Unlock()
	var gone []string
	for uri := range s.resources {
		if _, ok := want[uri]; !ok {
			gone = append(gone, uri)
			delete(s.resources, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for uri, r := range want {
		if old, ok := s.resources[uri]; ok && sameResource(old, r) {
			continue
		}
		s.resources[uri] = r
		s.mcp.AddResource(&r, s.readTemplate)
	}
}

func sameResource(a, b mcp.Resource) bool {
	return a.Name == b.Name && a.Description == b.Description &&
		(a.Annotations == nil) == (b.Annotations == nil) &&
		(a.Annotations == nil || a.Annotations.LastModified == b.Annotations.LastModified)
}
