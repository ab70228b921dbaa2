package organize

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// Finder organizes document summaries into one page of the Finder (seeds
// 000 and 004):
//
//  1. Documents whose uri is not a valid dpe:// URI are skipped.
//  2. keywords: a document stays when any keyword is a case-insensitive
//     substring of its title, of its keywords joined by spaces, or of its
//     summary. No keywords means no filter.
//  3. fileType: exact match; "" means no filter.
//  4. Servers are ordered by the tool-call history (most recent first,
//     de-duplicated), then by name.
//  5. Within a server, last_modified descending: timestamps that parse as
//     ISO 8601 compare as instants, newest first, then unparseable values in
//     descending string order, then documents without one. Ties keep their
//     input order.
//  6. The page is [offset, offset+limit) of that order; a negative offset
//     counts as 0 and limit <= 0 gives an empty page. Request validation
//     (offset >= 0, limit 1..100) belongs to the caller.
//
// total is the number of documents after filtering, before paging. The page
// shares the input messages.
func Finder(docs []*smcpv1.DPEDocumentSummary, keywords []string, fileType string, history []string, offset, limit int) (page []*smcpv1.DPEDocumentSummary, total int, warnings []Warning) {
	return NewFinderIndex(docs).Find(keywords, fileType, history, offset, limit)
}

// FinderIndex is a catalogue prepared for repeated Finder queries: URIs
// validated, timestamps parsed and texts lower-cased once, when the
// catalogue changes, rather than on every query (over 10,000 documents that
// per-query work was most of a get_finder in the profile).
type FinderIndex struct {
	docs     []*smcpv1.DPEDocumentSummary
	entries  []finderEntry // the valid documents, in input order
	texts    [][]byte      // lowered title 0xFF summary 0xFF keywords, per entry
	warnings []Warning
}

// NewFinderIndex prepares docs; the index shares the messages, which must
// not change afterwards.
func NewFinderIndex(docs []*smcpv1.DPEDocumentSummary) *FinderIndex {
	x := &FinderIndex{docs: docs, entries: make([]finderEntry, 0, len(docs)), texts: make([][]byte, 0, len(docs))}
	texts := 0 // entries whose last_modified is not a timestamp
	for i, d := range docs {
		if d == nil {
			continue
		}
		if _, err := dpeuri.Parse(d.GetUri()); err != nil {
			x.warnings = append(x.warnings, Warning{Server: d.GetServer(), URI: d.GetUri(), Reason: "skipped: " + err.Error()})
			continue
		}
		e := newFinderEntry(d, i)
		if e.class == stampText {
			texts++
		}
		x.entries = append(x.entries, e)
		x.texts = append(x.texts, lowerFields(nil, d))
	}
	// Ranking text stamps among all documents orders any subset the same way.
	if texts > 0 {
		rankTexts(docs, x.entries, texts)
	}
	return x
}

// Find is Finder over the prepared catalogue.
func (x *FinderIndex) Find(keywords []string, fileType string, history []string, offset, limit int) (page []*smcpv1.DPEDocumentSummary, total int, warnings []Warning) {
	docs := x.docs
	lowered := make([][]byte, len(keywords))
	for i, kw := range keywords {
		lowered[i] = appendLower(nil, kw)
	}
	kept := make([]finderEntry, 0, len(x.entries))
	present := make(map[string]struct{})
	for i, e := range x.entries {
		d := docs[e.doc]
		// Both filters must pass; the cheap exact one goes first.
		if fileType != "" && d.GetFileType() != fileType {
			continue
		}
		if len(lowered) > 0 && !containsAny(x.texts[i], lowered) {
			continue
		}
		// Documents come grouped by server: skip the map for repeats.
		if len(kept) == 0 || d.GetServer() != docs[kept[len(kept)-1].doc].GetServer() {
			present[d.GetServer()] = struct{}{}
		}
		kept = append(kept, e)
	}

	ranks := serverRanks(history, present)
	for i := range kept {
		server := docs[kept[i].doc].GetServer()
		if i > 0 && server == docs[kept[i-1].doc].GetServer() {
			kept[i].rank = kept[i-1].rank
		} else {
			kept[i].rank = ranks[server]
		}
	}

	total = len(kept)
	offset = max(offset, 0)
	if offset >= total || limit <= 0 {
		return []*smcpv1.DPEDocumentSummary{}, total, x.warnings
	}
	end := offset + min(limit, total-offset)
	first := smallest(kept, end)
	page = make([]*smcpv1.DPEDocumentSummary, 0, end-offset)
	for _, e := range first[offset:] {
		page = append(page, docs[e.doc])
	}
	return page, total, x.warnings
}

// smallest returns the k first entries of entries in sorted order,
// reordering entries. A page is usually far smaller than the catalogue, so a
// bounded heap (n log k) beats sorting everything (n log n); the input
// position makes the order total, so neither needs a stable sort.
func smallest(entries []finderEntry, k int) []finderEntry {
	if k*4 >= len(entries) {
		slices.SortFunc(entries, compareEntries)
		return entries[:k]
	}
	// entries[:k] is a max-heap: its root is the worst of the k best so far.
	heap := entries[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(heap, i)
	}
	for _, e := range entries[k:] {
		if compareEntries(e, heap[0]) < 0 {
			heap[0] = e
			siftDown(heap, 0)
		}
	}
	slices.SortFunc(heap, compareEntries)
	return heap
}

func siftDown(heap []finderEntry, i int) {
	for {
		worst := i
		if l := 2*i + 1; l < len(heap) && compareEntries(heap[l], heap[worst]) > 0 {
			worst = l
		}
		if r := 2*i + 2; r < len(heap) && compareEntries(heap[r], heap[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		heap[i], heap[worst] = heap[worst], heap[i]
		i = worst
	}
}

// lowerFields follows the seed's pseudocode: a keyword matches when it is a
// substring of the lower-cased title, keywords joined by " ", or summary.
// The three fields are lowered into one buffer, separated by 0xFF: that byte
// never occurs in UTF-8, so no keyword can match across two fields, and one
// search per keyword covers all three.
func lowerFields(buf []byte, d *smcpv1.DPEDocumentSummary) []byte {
	buf = appendLower(buf, d.GetTitle())
	buf = append(buf, 0xFF)
	buf = appendLower(buf, d.GetSummary())
	buf = append(buf, 0xFF)
	for i, k := range d.GetKeywords() {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = appendLower(buf, k)
	}
	return buf
}

func containsAny(text []byte, lowered [][]byte) bool {
	for _, kw := range lowered {
		if bytes.Contains(text, kw) {
			return true
		}
	}
	return false
}

// Classes of last_modified, in output order.
const (
	stampTime = iota
	stampText
	stampMissing
)

// finderEntry is the sort key of one kept document. It holds no pointers,
// so that sorting moves plain words (no GC write barriers), and compares by
// integers only: (rank, class) ascending, then (sec, nsec) descending, then
// doc ascending, which keeps ties in input order.
type finderEntry struct {
	doc   int // index in the input
	rank  int // server rank
	class int // stampTime, stampText or stampMissing
	sec   int64
	nsec  int
}

// newFinderEntry fills the key of docs[i]: a timestamp as Unix seconds and
// nanoseconds; text stamps get their order from rankTexts.
func newFinderEntry(d *smcpv1.DPEDocumentSummary, i int) finderEntry {
	e := finderEntry{doc: i, class: stampMissing}
	if d.LastModified == nil {
		return e
	}
	if t, ok := parseISO8601(*d.LastModified); ok {
		e.class, e.sec, e.nsec = stampTime, t.Unix(), t.Nanosecond()
	} else {
		e.class = stampText
	}
	return e
}

// rankTexts sets sec of the n stampText entries to the rank of their
// last_modified among those strings, so that "sec descending" is "string
// descending" and equal strings tie.
func rankTexts(docs []*smcpv1.DPEDocumentSummary, kept []finderEntry, n int) {
	idx := make([]int, 0, n)
	for i, e := range kept {
		if e.class == stampText {
			idx = append(idx, i)
		}
	}
	stamp := func(i int) string { return docs[kept[i].doc].GetLastModified() }
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(stamp(a), stamp(b)) })
	r := int64(0)
	for j, i := range idx {
		if j > 0 && stamp(i) != stamp(idx[j-1]) {
			r++
		}
		kept[i].sec = r
	}
}

func compareEntries(a, b finderEntry) int {
	return cmp.Or(
		cmp.Compare(a.rank, b.rank),
		cmp.Compare(a.class, b.class),
		cmp.Compare(b.sec, a.sec),
		cmp.Compare(b.nsec, a.nsec),
		cmp.Compare(a.doc, b.doc),
	)
}

// parseISO8601 accepts the ISO 8601 forms seen in practice: RFC 3339 (with
// or without fraction), Python's isoformat() without a zone, a space instead
// of 'T', minutes precision and a bare date. A time without a zone is UTC.
func parseISO8601(s string) (time.Time, bool) {
	layouts := [...]string{
		time.RFC3339Nano,
		"2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999",
		"2006-01-02T15:04Z07:00",
		"2006-01-02T15:04",
		"2006-01-02",
	}
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Paging limits of client:get_finder (PROTOCOL.md §5).
const (
	DefaultFinderLimit = 20
	MaxFinderLimit     = 100
)

// FinderPaging applies the defaults and bounds of GetFinderReq.offset and
// .limit: offset >= 0 (default 0), limit 1..100 (default 20). Out of range is
// a 400 *smcp.Error naming the field.
func FinderPaging(offset, limit *int32) (int, int, error) {
	o, l := 0, DefaultFinderLimit
	if offset != nil {
		if *offset < 0 {
			return 0, 0, smcp.Errorf(smcp.CodeBadRequest, "offset must be >= 0, got %d", *offset).WithDetails(map[string]any{"field": "offset"})
		}
		o = int(*offset)
	}
	if limit != nil {
		if *limit < 1 || *limit > MaxFinderLimit {
			return 0, 0, smcp.Errorf(smcp.CodeBadRequest, "limit must be in [1, %d], got %d", MaxFinderLimit, *limit).WithDetails(map[string]any{"field": "limit"})
		}
		l = int(*limit)
	}
	return o, l, nil
}
