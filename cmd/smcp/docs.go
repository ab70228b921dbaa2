package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// runDocs serves a folder as dpe:// documents: over stdio by default (the way
// a computer starts it), or over streamable HTTP with --http.
func runDocs(ctx context.Context, args []string) error {
	fs := newFlags("docs", "usage: smcp docs --root DIR [--host com.example.docs] [--http ADDR]\n\n"+
		"Serves every Markdown, text, CSV/TSV, JSON, XLSX and PDF file under DIR as a dpe:// document\n"+
		"over MCP (stdio unless --http is given), with the tools search_documents and list_documents.\n"+
		"Logs go to stderr.")
	root := fs.String("root", "", "folder to serve (required)")
	host := fs.String("host", docserver.DefaultHost, "dpe:// host of the documents")
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead of stdio")
	maxSize := fs.Int64("max-file-size", docserver.DefaultMaxFileSize, "largest file parsed, in bytes")
	maxFiles := fs.Int("max-files", docserver.DefaultMaxFiles, "most files served")
	rows := fs.Int("rows-per-page", formats.DefaultRowsPerPage, "CSV/TSV rows and JSON array items per page")
	lines := fs.Int("lines-per-page", formats.DefaultLinesPerPage, "plain-text lines per page")
	debounce := fs.Duration("debounce", docserver.DefaultDebounce, "quiet time after file changes before rescanning")
	verbose := fs.Bool("v", false, "log protocol activity: --log-level debug")
	fs.addLogFlags("warn")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *root == "" {
		return usagef("--root is required")
	}
	if *host == "" {
		return usagef("--host must not be empty")
	}
	if *verbose {
		*fs.logLevel = "debug"
	}
	log, err := fs.logger()
	if err != nil {
		return err
	}

	srv, err := docserver.New(docserver.Options{
		Root:        *root,
		Host:        *host,
		MaxFileSize: *maxSize,
		MaxFiles:    *maxFiles,
		Formats:     formats.Options{RowsPerPage: *rows, LinesPerPage: *lines},
		Debounce:    *debounce,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	if *httpAddr == "" {
		err := srv.Run(ctx, &mcp.StdioTransport{})
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *httpAddr, err)
	}
	return serveHTTP(ctx, srv, ln)
}

// serveHTTP serves streamable HTTP on ln and watches the root until ctx ends.
func serveHTTP(ctx context.Context, srv *docserver.Server, ln net.Listener) error {
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchErr := make(chan error, 1)
	go func() { watchErr <- srv.Watch(ctx) }()
	go func() {
		<-ctx.Done()
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = hs.Shutdown(shutdown)
	}()
	fmt.Fprintf(os.Stderr, "smcp docs: serving dpe://%s at http://%s\n", srv.Host(), ln.Addr())
	err := hs.Serve(ln)
	cancel()
	if werr := <-watchErr; werr != nil && !errors.Is(werr, context.Canceled) {
		return werr
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
