// Package windowuri parses and builds window:// URIs, the identities of
// Desktop windows (seed 001):
//
//	window://{host}/{segment}/{segment}...
//
// A window URI is a pure identifier: it carries no metadata and no query.
// SDK 0.1.x servers still write priority and fullscreen in a query: Parse
// drops it and ParseLegacy reads it.
// Segments are percent-encoded, so "c%2Fd" is the single segment "c/d".
package windowuri

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/smcpgw/smcp-gateway/smcp/internal/urisyntax"
)

// Scheme is the URI scheme of Desktop windows.
const Scheme = "window"

// ErrInvalid is wrapped by every error Parse and Build return.
var ErrInvalid = errors.New("invalid window URI")

// URI is a parsed window:// URI with decoded host and path segments.
type URI struct {
	Host string
	// Path holds the decoded segments; nil for "window://host". A trailing
	// or doubled slash yields an empty segment, so every URI round-trips.
	Path []string
}

// IsWindow reports whether raw uses the window scheme (case-insensitive),
// without validating the rest.
func IsWindow(raw string) bool { return urisyntax.HasScheme(raw, Scheme) }

// Parse parses a window URI. A window URI may not carry a query: when raw has
// one, Parse ignores it and returns it in dropped (from the '?' on, a '#'
// fragment likewise), so that the caller can log a warning; the window's
// identity is then raw[:len(raw)-len(dropped)].
func Parse(raw string) (u URI, dropped string, err error) {
	return parse(raw, true)
}

// Check validates raw like Parse without building the URI (no allocation
// for a valid URI); it returns the dropped query the same way.
func Check(raw string) (dropped string, err error) {
	_, dropped, err = parse(raw, false)
	return dropped, err
}

func parse(raw string, build bool) (u URI, dropped string, err error) {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw, dropped = raw[:i], raw[i:]
	}
	rest, ok := cutScheme(raw)
	if !ok {
		return URI{}, dropped, fmt.Errorf("%w %q: scheme must be %q", ErrInvalid, raw, Scheme)
	}
	rawHost, path, hasPath := strings.Cut(rest, "/")
	host, problem := urisyntax.DecodeSegment(rawHost)
	if problem == "" && host == "" {
		problem = "must not be empty"
	}
	if problem != "" {
		return URI{}, dropped, fmt.Errorf("%w %q: host %s", ErrInvalid, raw, problem)
	}
	u.Host = host
	if !hasPath {
		return u, dropped, nil
	}
	if build {
		u.Path = make([]string, 0, strings.Count(path, "/")+1)
	}
	for seg := range strings.SplitSeq(path, "/") {
		dec, problem := urisyntax.DecodeSegment(seg)
		if problem != "" {
			return URI{}, dropped, fmt.Errorf("%w %q: segment %q %s", ErrInvalid, raw, seg, problem)
		}
		if build {
			u.Path = append(u.Path, dec)
		}
	}
	return u, dropped, nil
}

func cutScheme(raw string) (string, bool) {
	if !IsWindow(raw) {
		return "", false
	}
	return raw[len(Scheme)+3:], true
}

// Build validates host and path and renders the URI.
func Build(host string, path ...string) (string, error) {
	u := URI{Host: host, Path: path}
	if err := u.Validate(); err != nil {
		return "", err
	}
	return u.String(), nil
}

// Validate checks that u can be rendered and parsed back unchanged.
func (u URI) Validate() error {
	if u.Host == "" {
		return fmt.Errorf("%w: host must not be empty", ErrInvalid)
	}
	if !utf8.ValidString(u.Host) {
		return fmt.Errorf("%w: host is not valid UTF-8", ErrInvalid)
	}
	for _, seg := range u.Path {
		if !utf8.ValidString(seg) {
			return fmt.Errorf("%w: segment %q is not valid UTF-8", ErrInvalid, seg)
		}
	}
	return nil
}

// String renders u with every segment percent-encoded.
func (u URI) String() string {
	var b strings.Builder
	b.WriteString("window://")
	urisyntax.WriteEscaped(&b, u.Host, urisyntax.SegmentSafe)
	for _, seg := range u.Path {
		b.WriteByte('/')
		urisyntax.WriteEscaped(&b, seg, urisyntax.SegmentSafe)
	}
	return b.String()
}

// Legacy is the window metadata SDK 0.1.x and the Rust SDK put in the
// URI's query: window://host/path?priority=0..100&fullscreen=true.
// PROTOCOL.md §6 reads it when the resource's annotations and _meta do not
// say, and shows the URI without the query.
type Legacy struct {
	// Priority is the query's priority divided by 100 (so 0..1 like
	// annotations.priority); HasPriority says it was there and valid.
	Priority    float64
	HasPriority bool
	// Fullscreen is the query's fullscreen; HasFullscreen says it was
	// there and valid.
	Fullscreen    bool
	HasFullscreen bool
}

// ParseLegacy reads the query Parse dropped ("?priority=80&fullscreen=1",
// a '#' fragment ignored). Unknown parameters are ignored; a malformed
// value is left out of the result and described in problems, so that the
// caller can log it and fall back to the default.
func ParseLegacy(dropped string) (l Legacy, problems []string) {
	q, ok := strings.CutPrefix(dropped, "?")
	if !ok {
		return l, nil
	}
	q, _, _ = strings.Cut(q, "#")
	for part := range strings.SplitSeq(q, "&") {
		k, v, _ := strings.Cut(part, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		switch strings.ToLower(k) {
		case "priority":
			p, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(p) || p < 0 || p > 100 {
				problems = append(problems, fmt.Sprintf("priority %q is not a number in 0..100", v))
				continue
			}
			l.Priority, l.HasPriority = p/100, true
		case "fullscreen":
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "1", "yes", "on":
				l.Fullscreen, l.HasFullscreen = true, true
			case "false", "0", "no", "off":
				l.Fullscreen, l.HasFullscreen = false, true
			default:
				problems = append(problems, fmt.Sprintf("fullscreen %q is not a boolean", v))
			}
		}
	}
	return l, problems
}
