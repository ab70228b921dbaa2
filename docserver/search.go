package docserver

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// What a search hit matched, best first: the ranking tiers.
const (
	matchTitle    = "title"    // the document title
	matchMetadata = "metadata" // the document's keywords or summary
	matchHeading  = "heading"  // a page title or a heading element
	matchBody     = "body"     // any other element
)

var matchRank = map[string]int{matchTitle: 0, matchMetadata: 1, matchHeading: 2, matchBody: 3}

// snippetRunes bounds a hit's snippet: enough to judge the hit, short enough
// that ten hits fit an agent's context without thought.
const snippetRunes = 160

// searchIndex holds the text of every served document in the form a search
// scans: one unit per title, page title and element, lower-cased once. It is
// derived from the parsed documents and rebuilt only for documents that
// changed (a changed file is a new *dpe.Document), so a search never parses
// or renders anything.
type searchIndex struct {
	mu    sync.RWMutex
	docs  []*indexedDoc // in library order (by path)
	byDoc map[*dpe.Document]*indexedDoc
}

type indexedDoc struct {
	doc   *dpe.Document
	units []searchUnit
}

// searchUnit is one searchable piece of a document.
type searchUnit struct {
	match   string
	page    int          // -1: the document itself
	element *dpe.Element // nil: the document or the page title
	text    string       // on one line
	lower   string       // strings.ToLower(text): same rune count as text
}

// sync makes the index hold exactly docs, indexing the ones it has not seen.
func (x *searchIndex) sync(docs []*dpe.Document) {
	x.mu.RLock()
	old := x.byDoc
	x.mu.RUnlock()
	byDoc := make(map[*dpe.Document]*indexedDoc, len(docs))
	list := make([]*indexedDoc, len(docs))
	for i, d := range docs {
		ix := old[d]
		if ix == nil {
			ix = indexDocument(d)
		}
		byDoc[d], list[i] = ix, ix
	}
	x.mu.Lock()
	x.docs, x.byDoc = list, byDoc
	x.mu.Unlock()
}

func indexDocument(d *dpe.Document) *indexedDoc {
	ix := &indexedDoc{doc: d}
	add := func(match string, page int, el *dpe.Element, text string) {
		text = oneLine(text)
		if text != "" {
			ix.units = append(ix.units, searchUnit{match: match, page: page, element: el, text: text, lower: strings.ToLower(text)})
		}
	}
	add(matchTitle, -1, nil, d.Title)
	meta := slices.Clone(d.Keywords)
	if !summaryFromContent(d) {
		meta = append(meta, d.Summary)
	}
	add(matchMetadata, -1, nil, strings.Join(meta, ", "))
	for p := range d.Pages {
		add(matchHeading, p, nil, d.Pages[p].Title)
		for i := range d.Pages[p].Elements {
			el := &d.Pages[p].Elements[i]
			match := matchBody
			if el.Category == dpe.CategoryHeading {
				match = matchHeading
			}
			add(match, p, el, el.PlainText())
		}
	}
	return ix
}

// summaryFromContent reports whether d's summary was taken from its first
// text element (parsers do this when a file declares none): it is then a
// body hit, not a document-level one.
func summaryFromContent(d *dpe.Document) bool {
	sum := strings.TrimSuffix(oneLine(d.Summary), "…")
	if sum == "" {
		return true
	}
	for p := range d.Pages {
		for i := range d.Pages[p].Elements {
			if strings.HasPrefix(oneLine(d.Pages[p].Elements[i].PlainText()), sum) {
				return true
			}
		}
	}
	return false
}

// searchQuery is a parsed query: every term must occur in a unit for it to
// match.
type searchQuery struct {
	terms    []string
	phrase   string // the terms joined by single spaces
	fileType string
}

func newSearchQuery(query, fileType string) searchQuery {
	terms := strings.Fields(strings.ToLower(query))
	return searchQuery{terms: terms, phrase: strings.Join(terms, " "), fileType: fileType}
}

// hit is one match before it is turned into a SearchHit.
type hit struct {
	doc   *indexedDoc
	docNo int
	unit  *searchUnit
	// ranking, after the match tier: the query as one phrase, then whole
	// words, then anything containing the terms.
	phrase, words bool
}

// search returns every hit for q, best first. Per document, the title and
// metadata give at most one document-level hit, and a page title is not a
// hit of its own when a heading element of that page already matched (a
// Markdown section's title is its heading).
func (x *searchIndex) search(q searchQuery) []hit {
	x.mu.RLock()
	docs := x.docs
	x.mu.RUnlock()
	var hits, docHits []hit
	for n, ix := range docs {
		if q.fileType != "" && ix.doc.FileType != q.fileType {
			continue
		}
		docHits = docHits[:0]
		docLevel := false
		var headingPages map[int]bool // written only when a heading matches
		for i := range ix.units {
			u := &ix.units[i]
			if !q.matches(u.lower) {
				continue
			}
			if u.page < 0 {
				if docLevel {
					continue
				}
				docLevel = true
			}
			if u.element != nil && u.match == matchHeading {
				if headingPages == nil {
					headingPages = map[int]bool{}
				}
				headingPages[u.page] = true
			}
			docHits = append(docHits, hit{doc: ix, docNo: n, unit: u, phrase: strings.Contains(u.lower, q.phrase), words: q.wholeWords(u.lower)})
		}
		// A table's header repeats on every page of a long CSV: a hit on
		// the same text again says nothing new.
		if len(docHits) == 0 {
			continue
		}
		seen := map[string]bool{}
		for _, h := range docHits {
			if h.unit.page >= 0 && h.unit.element == nil && headingPages[h.unit.page] {
				continue
			}
			key := h.unit.match + "\x00" + h.unit.snippet(q)
			if seen[key] {
				continue
			}
			seen[key] = true
			hits = append(hits, h)
		}
	}
	slices.SortStableFunc(hits, compareHits)
	return hits
}

func (q searchQuery) matches(lower string) bool {
	for _, t := range q.terms {
		if !strings.Contains(lower, t) {
			return false
		}
	}
	return len(q.terms) > 0
}

// wholeWords reports whether every term occurs as a whole word somewhere.
func (q searchQuery) wholeWords(lower string) bool {
	for _, t := range q.terms {
		if !hasWord(lower, t) {
			return false
		}
	}
	return true
}

func hasWord(s, w string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		off = i + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func compareHits(a, b hit) int {
	return cmp.Or(
		cmp.Compare(matchRank[a.unit.match], matchRank[b.unit.match]),
		compareBool(a.phrase, b.phrase),
		compareBool(a.words, b.words),
		cmp.Compare(a.docNo, b.docNo),
		cmp.Compare(a.unit.page, b.unit.page),
	)
}

// compareBool orders true first.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// snippet is a short excerpt of u around the first match of q: a table's
// matching row with its headers, otherwise a window of text.
func (u *searchUnit) snippet(q searchQuery) string {
	if u.element != nil {
		if t, ok := u.element.Content.(dpe.Table); ok {
			if s := tableSnippet(t, q); s != "" {
				return s
			}
		}
	}
	return window(u.text, u.lower, q)
}

func tableSnippet(t dpe.Table, q searchQuery) string {
	find := func(row []string) bool {
		lower := strings.ToLower(strings.Join(row, " "))
		return q.matches(lower) || strings.Contains(lower, q.terms[0])
	}
	if find(t.Headers) {
		return dpe.Truncate("columns: "+strings.Join(t.Headers, " | "), snippetRunes)
	}
	for _, row := range t.Rows {
		if !find(row) {
			continue
		}
		parts := make([]string, len(row))
		for i, cell := range row {
			if i < len(t.Headers) && t.Headers[i] != "" {
				parts[i] = t.Headers[i] + ": " + cell
			} else {
				parts[i] = cell
			}
		}
		return dpe.Truncate(strings.Join(parts, " | "), snippetRunes)
	}
	return ""
}

// window cuts text around the first occurrence of the phrase (or of the
// first term), starting a little before it.
func window(text, lower string, q searchQuery) string {
	i := strings.Index(lower, q.phrase)
	if i < 0 {
		i = strings.Index(lower, q.terms[0])
	}
	runes := []rune(text)
	if len(runes) <= snippetRunes || i < 0 {
		return dpe.Truncate(text, snippetRunes)
	}
	at := utf8.RuneCountInString(lower[:i])
	start := max(0, at-snippetRunes/4)
	// Start at a word boundary when one is near.
	if start > 0 {
		if sp := strings.IndexByte(string(runes[start:at]), ' '); sp >= 0 {
			start += utf8.RuneCountInString(string(runes[start:at])[:sp]) + 1
		}
	}
	end := min(len(runes), start+snippetRunes)
	s := string(runes[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(runes) {
		s = strings.TrimRight(s, " ") + "…"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
