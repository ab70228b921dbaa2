package organize

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp/windowuri"
)

// Window is one window:// resource of an MCP server as the Desktop organizer
// needs it.
type Window struct {
	Server string // name of the MCP server
	URI    string // resource URI as the server listed it
	// Priority is annotations.priority as declared; values outside [0, 1]
	// (and NaN) count as 0 with a warning. Missing means 0.
	Priority float64
	// Fullscreen is _meta.fullscreen (see FullscreenFromMeta).
	Fullscreen bool
	// Index is the window's position in its server's resources/list answer;
	// among fullscreen windows the smallest index wins.
	Index int
	// Texts are the texts of the TextResourceContents read for the window.
	Texts []string
	// Blobs counts the BlobResourceContents, which cannot be rendered.
	Blobs int
}

// deskEntry holds no pointers, so that sorting moves plain words (no GC
// write barriers).
type deskEntry struct {
	pos      int // position in windows, the last tie-break
	index    int // Window.Index
	idLen    int // length of the URI without a dropped query
	priority float64
}

// Desktop organizes windows into Desktop entries (seed 001):
//
//  1. size <= 0 gives no entries; nil size means no limit.
//  2. Windows without contents, with an invalid window:// URI, or with only
//     blob contents are skipped. A query on a URI is dropped.
//  3. Servers are ordered by the tool-call history (most recent first,
//     de-duplicated), then by name.
//  4. Within a server windows go by priority, highest first; equal
//     priorities keep their Index order.
//  5. A server with fullscreen windows contributes only the fullscreen window
//     with the smallest Index.
//  6. Entries are taken server by server until size is reached.
//
// An entry is "<uri>\n\n<texts joined by \n\n>", or the bare URI when the
// texts are empty; the URI is the window's without a dropped query.
func Desktop(windows []Window, size *int, history []string) ([]string, []Warning) {
	if size != nil && *size <= 0 {
		return []string{}, nil
	}
	var warnings []Warning
	warn := func(w *Window, format string, args ...any) {
		warnings = append(warnings, Warning{Server: w.Server, URI: w.URI, Reason: fmt.Sprintf(format, args...)})
	}

	byServer := make(map[string][]deskEntry)
	for i := range windows {
		w := &windows[i]
		if len(w.Texts) == 0 && w.Blobs == 0 {
			continue
		}
		dropped, err := windowuri.Check(w.URI)
		if err != nil {
			warn(w, "skipped: %v", err)
			continue
		}
		if len(w.Texts) == 0 {
			warn(w, "skipped: only blob contents, which the desktop cannot render")
			continue
		}
		if w.Blobs > 0 {
			warn(w, "%d blob content(s) not rendered", w.Blobs)
		}
		if dropped != "" {
			warn(w, "window URIs carry no query: dropped %q", dropped)
		}
		p := w.Priority
		if math.IsNaN(p) || p < 0 || p > 1 {
			warn(w, "priority %v outside [0, 1], using 0", p)
			p = 0
		}
		byServer[w.Server] = append(byServer[w.Server], deskEntry{pos: i, index: w.Index, idLen: len(w.URI) - len(dropped), priority: p})
	}

	present := make(map[string]struct{}, len(byServer))
	for name := range byServer {
		present[name] = struct{}{}
	}
	ranks := serverRanks(history, present)
	servers := make([]string, len(ranks))
	for name, r := range ranks {
		servers[r] = name
	}

	limit := math.MaxInt
	if size != nil {
		limit = *size
	}
	kept := 0
	for _, entries := range byServer {
		kept += len(entries)
	}
	out := make([]string, 0, min(limit, kept))
	for _, name := range servers {
		entries := byServer[name]
		if full := fullscreen(windows, entries); full != nil {
			entries = []deskEntry{*full}
		} else {
			slices.SortFunc(entries, func(a, b deskEntry) int {
				return cmp.Or(cmp.Compare(b.priority, a.priority), cmp.Compare(a.index, b.index), cmp.Compare(a.pos, b.pos))
			})
		}
		for _, e := range entries {
			if len(out) == limit {
				return out, warnings
			}
			w := &windows[e.pos]
			out = append(out, render(w.URI[:e.idLen], w.Texts))
		}
	}
	return out, warnings
}

// fullscreen returns the fullscreen entry with the smallest Index, if any.
func fullscreen(windows []Window, entries []deskEntry) *deskEntry {
	var best *deskEntry
	for i := range entries {
		if e := &entries[i]; windows[e.pos].Fullscreen && (best == nil || e.index < best.index) {
			best = e
		}
	}
	return best
}

func render(id string, texts []string) string {
	size := 0
	for _, t := range texts {
		size += len(t)
	}
	if size == 0 {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + size + 2*len(texts))
	b.WriteString(id)
	for _, t := range texts { // "<uri>\n\n" + the texts joined by "\n\n"
		b.WriteString("\n\n")
		b.WriteString(t)
	}
	return b.String()
}

// FullscreenFromMeta reads _meta.fullscreen of a window resource (seed 001):
// missing or null is false; a value that is not a bool is false and ok is
// false, so that the caller can warn about it.
func FullscreenFromMeta(meta map[string]any) (fullscreen, ok bool) {
	switch v := meta["fullscreen"].(type) {
	case nil:
		return false, true
	case bool:
		return v, true
	}
	return false, false
}
