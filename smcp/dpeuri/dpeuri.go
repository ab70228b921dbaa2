// Package dpeuri parses and builds dpe:// URIs, the addresses of the Finder's
// Document-Page-Element model (seeds 000 and 004):
//
//	dpe://{host}                          level 0: the host's document catalogue
//	dpe://{host}/{doc_ref}                level 1: one document
//	dpe://{host}/{doc_ref}/pages/{N}      level 2: one page
//	dpe://{host}/{doc_ref}/elements/{ID}  level 3: one element
//
// each optionally followed by ?format=&depth=&offset=&limit=&categories=.
// Every rejection is an *smcp.Error with code 4204 whose details name the
// failed rule.
package dpeuri

import (
	"cmp"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/smcp/internal/urisyntax"
)

// Scheme is the URI scheme of DPE resources.
const Scheme = "dpe"

// Level is the depth of a dpe:// URI.
type Level int

// The four levels of progressive addressing.
const (
	LevelCatalogue Level = 0 // dpe://host
	LevelDocument  Level = 1 // dpe://host/doc_ref
	LevelPage      Level = 2 // dpe://host/doc_ref/pages/N
	LevelElement   Level = 3 // dpe://host/doc_ref/elements/ID
)

func (l Level) String() string {
	switch l {
	case LevelCatalogue:
		return "catalogue"
	case LevelDocument:
		return "document"
	case LevelPage:
		return "page"
	case LevelElement:
		return "element"
	}
	return "Level(" + strconv.Itoa(int(l)) + ")"
}

// Query parameter names and values (seed 004).
const (
	ParamFormat     = "format"
	ParamDepth      = "depth"
	ParamOffset     = "offset"
	ParamLimit      = "limit"
	ParamCategories = "categories"

	FormatJSON     = "json"
	FormatMarkdown = "markdown"
	FormatText     = "text"

	DepthMetadata = "metadata"
	DepthPages    = "pages"

	DefaultFormat = FormatJSON
	DefaultDepth  = DepthMetadata
	DefaultOffset = 0
	DefaultLimit  = 20
	MaxLimit      = 100
)

// maxIndex bounds page indexes and offsets: they travel as int32 on the wire.
const maxIndex = math.MaxInt32

// URI is a parsed dpe:// URI. Its level follows from which fields are set:
// no DocRef is level 0, HasPage level 2, a non-empty ElementID level 3,
// otherwise level 1. Host, DocRef and ElementID hold decoded text; String
// percent-encodes them again.
type URI struct {
	Host      string
	DocRef    string
	HasPage   bool
	PageIndex int
	ElementID string
	Query     Query
	// RawQuery is the query exactly as parsed, without '?'. It is
	// informational: String renders Query, never RawQuery.
	RawQuery string
}

// Query holds the query parameters. Absent parameters are zero: "" for
// Format and Depth, nil for Offset, Limit and Categories.
type Query struct {
	Format     string
	Depth      string
	Offset     *int
	Limit      *int
	Categories []string
	// Extra keeps parameters this package does not interpret, so that they
	// survive a parse/build round trip.
	Extra url.Values
}

// Catalogue returns the level 0 URI of host.
func Catalogue(host string) URI { return URI{Host: host} }

// Document returns the level 1 URI of a document.
func Document(host, docRef string) URI { return URI{Host: host, DocRef: docRef} }

// Page returns the level 2 URI of a page.
func Page(host, docRef string, index int) URI {
	return URI{Host: host, DocRef: docRef, HasPage: true, PageIndex: index}
}

// Element returns the level 3 URI of an element.
func Element(host, docRef, elementID string) URI {
	return URI{Host: host, DocRef: docRef, ElementID: elementID}
}

// Level reports the addressing level of u.
func (u URI) Level() Level {
	switch {
	case u.DocRef == "":
		return LevelCatalogue
	case u.HasPage:
		return LevelPage
	case u.ElementID != "":
		return LevelElement
	}
	return LevelDocument
}

// FormatOrDefault returns the format, "json" when absent.
func (q Query) FormatOrDefault() string { return cmp.Or(q.Format, DefaultFormat) }

// DepthOrDefault returns the depth, "metadata" when absent.
func (q Query) DepthOrDefault() string { return cmp.Or(q.Depth, DefaultDepth) }

// OffsetOrDefault returns the offset, 0 when absent.
func (q Query) OffsetOrDefault() int { return intOr(q.Offset, DefaultOffset) }

// LimitOrDefault returns the limit, 20 when absent.
func (q Query) LimitOrDefault() int { return intOr(q.Limit, DefaultLimit) }

// AllowsCategory reports whether an element of category c passes the
// categories filter (every category passes when the filter is absent).
func (q Query) AllowsCategory(c string) bool {
	return len(q.Categories) == 0 || slices.Contains(q.Categories, c)
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// IsDPE reports whether raw uses the dpe scheme (case-insensitive), without
// validating the rest. Change detection uses it to pick dpe:// resources.
func IsDPE(raw string) bool { return urisyntax.HasScheme(raw, Scheme) }

// ClaimsDPE reports whether raw names the dpe scheme, in any letter case and
// however malformed the rest ("DPE://h", "dpe:h"): a reader judges such a
// URI with Parse, which answers 4204 with the failed rule, rather than
// refusing it as some other scheme.
func ClaimsDPE(raw string) bool {
	return len(raw) >= len(Scheme)+1 && strings.EqualFold(raw[:len(Scheme)], Scheme) && raw[len(Scheme)] == ':'
}

// Valid reports whether Parse accepts raw.
func Valid(raw string) bool {
	_, err := Parse(raw)
	return err == nil
}

// Parse parses and validates a dpe:// URI. Percent-encoded host, doc_ref and
// element id segments are decoded ("a%2Fb" is the single doc_ref "a/b"). A
// parameter given twice fails that parameter's rule; a fragment is refused.
func Parse(raw string) (URI, error) {
	colon := strings.IndexByte(raw, ':')
	if colon < 0 {
		return URI{}, invalid(raw, RuleScheme, "scheme must be %q, found no scheme", Scheme)
	}
	if raw[:colon] != Scheme {
		// Seed 000 rule 1 names the scheme "dpe", and every dpe URI this
		// package builds is lower case: a "DPE://" URI would reach a
		// server that does not know it (and fail there, as a 500).
		return URI{}, invalid(raw, RuleScheme, "scheme must be %q (lower case), got %q", Scheme, raw[:colon])
	}
	rest, ok := strings.CutPrefix(raw[colon+1:], "//")
	if !ok {
		return URI{}, invalid(raw, RuleHost, "host must not be empty: expected \"dpe://{host}\"")
	}
	if strings.IndexByte(rest, '#') >= 0 {
		return URI{}, invalid(raw, RuleFragment, "a dpe URI has no fragment (encode '#' as %%23)")
	}

	var u URI
	rest, rawQuery, hasQuery := strings.Cut(rest, "?")
	rawHost, path, _ := strings.Cut(rest, "/")
	host, problem := urisyntax.DecodeSegment(rawHost)
	if problem == "" && host == "" {
		problem = "must not be empty"
	}
	if problem != "" {
		return URI{}, invalid(raw, RuleHost, "host %s: %q", problem, rawHost)
	}
	u.Host = host

	if path != "" {
		if err := u.parsePath(raw, path); err != nil {
			return URI{}, err
		}
	}
	if hasQuery {
		u.RawQuery = rawQuery
		if err := u.Query.parse(raw, rawQuery); err != nil {
			return URI{}, err
		}
	}
	return u, nil
}

// parsePath parses "doc_ref[/pages/N | /elements/ID]" (the path without its
// leading slash).
func (u *URI) parsePath(raw, path string) error {
	rawDoc, sub, hasSub := strings.Cut(path, "/")
	doc, problem := urisyntax.DecodeSegment(rawDoc)
	if problem == "" && doc == "" {
		problem = "must not be empty when a path follows the host"
	}
	if problem != "" {
		return invalid(raw, RuleDocRef, "doc_ref %s: %q", problem, rawDoc)
	}
	u.DocRef = doc
	if !hasSub {
		return nil
	}

	kind, arg, ok := strings.Cut(sub, "/")
	if !ok || strings.IndexByte(arg, '/') >= 0 {
		return invalid(raw, RuleSubPath, "sub-path must be pages/{N} or elements/{ID}, got %q", sub)
	}
	switch kind {
	case "pages":
		n, ok := parseIndex(arg)
		if !ok {
			return invalid(raw, RuleSubPath, "page index must be a non-negative integer, got %q", arg)
		}
		u.HasPage, u.PageIndex = true, n
	case "elements":
		id, problem := urisyntax.DecodeSegment(arg)
		if problem == "" && id == "" {
			problem = "must not be empty"
		}
		if problem != "" {
			return invalid(raw, RuleSubPath, "element id %s: %q", problem, arg)
		}
		u.ElementID = id
	default:
		return invalid(raw, RuleSubPath, "sub-path must be pages/{N} or elements/{ID}, got %q", sub)
	}
	return nil
}

func (q *Query) parse(raw, rawQuery string) error {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return invalid(raw, RuleQuery, "malformed query: %v", err)
	}
	// Known parameters in a fixed order, so that the rule reported for a URI
	// with several bad parameters does not depend on map iteration.
	for _, key := range [...]string{ParamFormat, ParamDepth, ParamOffset, ParamLimit, ParamCategories} {
		vals, ok := values[key]
		if !ok {
			continue
		}
		delete(values, key)
		rule := Rule(key)
		if len(vals) > 1 {
			return invalid(raw, rule, "%s given %d times", key, len(vals))
		}
		v := vals[0]
		switch key {
		case ParamFormat:
			if err := checkFormat(raw, v); err != nil {
				return err
			}
			q.Format = v
		case ParamDepth:
			if err := checkDepth(raw, v); err != nil {
				return err
			}
			q.Depth = v
		case ParamOffset:
			n, ok := parseIndex(v)
			if !ok {
				return invalid(raw, rule, "offset must be a non-negative integer, got %q", v)
			}
			q.Offset = &n
		case ParamLimit:
			n, ok := parseIndex(v)
			if !ok || n < 1 || n > MaxLimit {
				return invalid(raw, rule, "limit must be an integer in [1, %d], got %q", MaxLimit, v)
			}
			q.Limit = &n
		case ParamCategories:
			q.Categories = strings.Split(v, ",")
			for _, c := range q.Categories {
				if !IsCategory(c) {
					return invalid(raw, rule, "categories must be a comma-separated list of element categories, %q is not one", c)
				}
			}
		}
	}
	if len(values) > 0 {
		q.Extra = values
	}
	return nil
}

// parseIndex accepts a non-empty string of ASCII digits whose value fits in
// an int32 (no sign, no spaces).
func parseIndex(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= maxIndex
}

// validate checks the typed values of a Query built in code.
func (q Query) validate(raw string) error {
	if q.Format != "" {
		if err := checkFormat(raw, q.Format); err != nil {
			return err
		}
	}
	if q.Depth != "" {
		if err := checkDepth(raw, q.Depth); err != nil {
			return err
		}
	}
	if q.Offset != nil && (*q.Offset < 0 || *q.Offset > maxIndex) {
		return invalid(raw, RuleOffset, "offset must be a non-negative integer, got %d", *q.Offset)
	}
	if q.Limit != nil && (*q.Limit < 1 || *q.Limit > MaxLimit) {
		return invalid(raw, RuleLimit, "limit must be an integer in [1, %d], got %d", MaxLimit, *q.Limit)
	}
	for _, c := range q.Categories {
		if !IsCategory(c) {
			return invalid(raw, RuleCategories, "categories must be a comma-separated list of element categories, %q is not one", c)
		}
	}
	for key := range q.Extra {
		switch key {
		case ParamFormat, ParamDepth, ParamOffset, ParamLimit, ParamCategories:
			return invalid(raw, RuleQuery, "parameter %q belongs in its typed field, not in Extra", key)
		}
	}
	return nil
}

func checkFormat(raw, v string) error {
	switch v {
	case FormatJSON, FormatMarkdown, FormatText:
		return nil
	}
	return invalid(raw, RuleFormat, "format must be json, markdown or text, got %q", v)
}

func checkDepth(raw, v string) error {
	switch v {
	case DepthMetadata, DepthPages:
		return nil
	}
	return invalid(raw, RuleDepth, "depth must be metadata or pages, got %q", v)
}

// Validate checks a URI built in code against the same rules Parse applies.
func (u URI) Validate() error {
	raw := u.String()
	switch {
	case u.Host == "":
		return invalid(raw, RuleHost, "host must not be empty")
	case !utf8.ValidString(u.Host):
		return invalid(raw, RuleHost, "host is not valid UTF-8")
	case u.DocRef == "" && (u.HasPage || u.ElementID != ""):
		return invalid(raw, RuleDocRef, "a page or element needs a doc_ref")
	case !utf8.ValidString(u.DocRef):
		return invalid(raw, RuleDocRef, "doc_ref is not valid UTF-8")
	case u.HasPage && u.ElementID != "":
		return invalid(raw, RuleSubPath, "a URI addresses a page or an element, not both")
	case u.HasPage && (u.PageIndex < 0 || u.PageIndex > maxIndex):
		return invalid(raw, RuleSubPath, "page index must be a non-negative integer, got %d", u.PageIndex)
	case !utf8.ValidString(u.ElementID):
		return invalid(raw, RuleSubPath, "element id is not valid UTF-8")
	}
	return u.Query.validate(raw)
}

// Build validates u and renders it.
func Build(u URI) (string, error) {
	if err := u.Validate(); err != nil {
		return "", err
	}
	return u.String(), nil
}

// String renders u in canonical form: segments percent-encoded, known query
// parameters in the order format, depth, offset, limit, categories, then the
// extra ones sorted by name. It does not validate (see Build).
func (u URI) String() string {
	var b strings.Builder
	b.Grow(len("dpe://") + len(u.Host) + len(u.DocRef) + len(u.ElementID) + 24)
	b.WriteString("dpe://")
	urisyntax.WriteEscaped(&b, u.Host, urisyntax.SegmentSafe)
	if u.DocRef != "" {
		b.WriteByte('/')
		urisyntax.WriteEscaped(&b, u.DocRef, urisyntax.SegmentSafe)
		switch {
		case u.HasPage:
			b.WriteString("/pages/")
			b.WriteString(strconv.Itoa(u.PageIndex))
		case u.ElementID != "":
			b.WriteString("/elements/")
			urisyntax.WriteEscaped(&b, u.ElementID, urisyntax.SegmentSafe)
		}
	}
	if q := u.Query.Encode(); q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String()
}

// Encode renders the query without '?' in canonical order ("" when empty).
func (q Query) Encode() string {
	var b strings.Builder
	param := func(key, value string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		urisyntax.WriteEscaped(&b, key, querySafe)
		b.WriteByte('=')
		urisyntax.WriteEscaped(&b, value, querySafe)
	}
	if q.Format != "" {
		param(ParamFormat, q.Format)
	}
	if q.Depth != "" {
		param(ParamDepth, q.Depth)
	}
	if q.Offset != nil {
		param(ParamOffset, strconv.Itoa(*q.Offset))
	}
	if q.Limit != nil {
		param(ParamLimit, strconv.Itoa(*q.Limit))
	}
	if len(q.Categories) > 0 {
		param(ParamCategories, strings.Join(q.Categories, ","))
	}
	for _, key := range slices.Sorted(maps.Keys(q.Extra)) {
		for _, v := range q.Extra[key] {
			param(key, v)
		}
	}
	return b.String()
}

// In the query "&=+;" separate parameters or mean space, so besides the
// unreserved characters only ",:/@" stay literal (keeping categories readable).
const querySafe = ",:/@"
