package docserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// BenchmarkReadPage reads a page of the example report through a real MCP
// client over in-memory transports, in each format.
func BenchmarkReadPage(b *testing.B) {
	srv, err := New(Options{Root: "../examples/docs"})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: testProtocol})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	var ref string
	for _, d := range srv.lib.documents() {
		if d.FileType == "md" && len(d.Pages) > 1 {
			ref = d.DocRef
		}
	}
	for _, format := range []string{dpe.FormatJSON, dpe.FormatMarkdown, dpe.FormatText} {
		uri := dpe.PageURI(DefaultHost, ref, 1) + "?format=" + format
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStartup scans and parses a folder of 50 copies of the examples
// (350 files, ~1.3 MB), as New does at start.
func BenchmarkStartup(b *testing.B) {
	root := copies(b, 50)
	for b.Loop() {
		srv, err := New(Options{Root: root})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(srv.lib.documents()); n != 300 {
			b.Fatalf("%d documents, want 300", n)
		}
		srv.Close()
	}
}

// BenchmarkSearch searches 50 copies of the examples (300 documents) for a
// word in body text and for a word in no document, in the index alone.
func BenchmarkSearch(b *testing.B) {
	srv, err := New(Options{Root: copies(b, 50)})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, query := range []string{"maintenance", "zebracorn"} {
		b.Run(query, func(b *testing.B) {
			q := newSearchQuery(query, "")
			for b.Loop() {
				srv.index.search(q)
			}
		})
	}
}

// copies writes n copies of the top-level example files into a fresh folder.
func copies(b *testing.B, n int) string {
	root := b.TempDir()
	src, err := os.ReadDir("../examples/docs")
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("copy%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, e := range src {
			if e.IsDir() {
				continue
			}
			data, err := os.ReadFile(filepath.Join("../examples/docs", e.Name()))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}
