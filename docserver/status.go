package docserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// recentChanges is how many changes the status window lists.
const recentChanges = 10

// statusLog remembers the latest changes for the status window.
type statusLog struct {
	mu      sync.Mutex
	entries []string // newest last
}

func newStatusLog() *statusLog { return &statusLog{} }

func refs(docs []*dpe.Document) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.DocRef
	}
	return out
}

func (l *statusLog) record(lib *library, ch change) {
	now := time.Now().UTC().Format(time.TimeOnly)
	var lines []string
	for _, d := range ch.added {
		lines = append(lines, fmt.Sprintf("%s added %s (%s)", now, lib.pathOf(d.DocRef), d.DocRef))
	}
	for _, d := range ch.updated {
		lines = append(lines, fmt.Sprintf("%s updated %s (%s)", now, lib.pathOf(d.DocRef), d.DocRef))
	}
	for _, d := range ch.removed {
		lines = append(lines, fmt.Sprintf("%s removed %s", now, d.DocRef))
	}
	for _, p := range ch.skipped {
		lines = append(lines, fmt.Sprintf("%s skipped %s", now, p))
	}
	for _, p := range ch.dropped {
		lines = append(lines, fmt.Sprintf("%s removed %s", now, p))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, lines...)
	if n := len(l.entries); n > recentChanges {
		l.entries = slices.Clone(l.entries[n-recentChanges:])
	}
}

func (l *statusLog) recent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// statusText is the body of the status window: enough for an assistant to
// know what it can read here without listing every document.
func (s *Server) statusText() string {
	docs := s.lib.documents()
	var b strings.Builder
	fmt.Fprintf(&b, "# Documents: dpe://%s\n\n", s.opts.Host)
	byType := map[string]int{}
	for _, d := range docs {
		byType[d.FileType]++
	}
	var counts []string
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		counts = append(counts, fmt.Sprintf("%s %d", t, byType[t]))
	}
	fmt.Fprintf(&b, "Serving %d documents", len(docs))
	if len(counts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(counts, ", "))
	}
	b.WriteString(".\n")
	const shown = 20
	for i, d := range docs {
		if i == shown {
			fmt.Fprintf(&b, "- … and %d more: read dpe://%s for all\n", len(docs)-shown, s.opts.Host)
			break
		}
		pages := "pages"
		if len(d.Pages) == 1 {
			pages = "page"
		}
		fmt.Fprintf(&b, "- %s — %s, %d %s — %s\n", d.Title, d.FileType, len(d.Pages), pages, dpe.DocURI(s.opts.Host, d.DocRef))
	}
	if skipped := s.lib.skipped(); len(skipped) > 0 {
		fmt.Fprintf(&b, "\nNot served (%d):\n", len(skipped))
		for _, f := range skipped {
			fmt.Fprintf(&b, "- %s: %s\n", f.Path, f.Reason)
		}
	}
	if recent := s.status.recent(); len(recent) > 0 {
		b.WriteString("\nRecent changes (UTC):\n")
		for i := len(recent) - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "- %s\n", recent[i])
		}
	}
	return b.String()
}

func (s *Server) readStatus(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI:      req.Params.URI,
		MIMEType: "text/markdown",
		Text:     s.statusText(),
	}}}, nil
}
