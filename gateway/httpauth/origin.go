package httpauth

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Origins are the web origins whose pages may call a front end: the one
// matcher of every front end (Socket.IO's Origin check, the Connect API's
// CORS, MCP's Origin check), so that one list means the same everywhere.
//
// An entry is "*" (any origin), an origin ("https://app.example.com",
// "http://localhost:5173"), or an origin whose host starts with "*." and
// then stands for one or more labels before the rest
// ("https://*.example.com" is https://a.example.com and
// https://a.b.example.com, not https://example.com). An Origin header is
// parsed as a URL and compared by scheme, host (label by label, case
// aside) and port (the scheme's default when none is given): a string that
// merely ends like an entry ("https://evil.com/.example.com") is no match.
type Origins struct {
	any      bool
	patterns []originPattern
}

type originPattern struct {
	scheme, host, port string
	// wild: host is the suffix after "*." (one or more labels go before).
	wild bool
}

// ParseOrigins reads entries (see Origins). Entries that are not origins
// are reported in the error and left out of the list returned, so that a
// caller without a way to fail still gets every entry that can match.
func ParseOrigins(entries []string) (Origins, error) {
	var o Origins
	var errs []error
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "*" {
			o.any = true
			continue
		}
		p, err := parsePattern(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.patterns = append(o.patterns, p)
	}
	return o, errors.Join(errs...)
}

func parsePattern(entry string) (originPattern, error) {
	wild := false
	raw := entry
	if scheme, rest, ok := strings.Cut(entry, "://*."); ok {
		wild, raw = true, scheme+"://"+rest
	}
	o, ok := parseOrigin(strings.TrimSuffix(raw, "/"))
	if !ok || strings.Contains(o.host, "*") {
		return originPattern{}, fmt.Errorf("origin %q: want scheme://host[:port], its host optionally starting with \"*.\"", entry)
	}
	o.wild = wild
	return o, nil
}

// parseOrigin reads an Origin header's value: scheme://host[:port] and
// nothing else ("null", a path, a user or a query: not an origin).
func parseOrigin(s string) (originPattern, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return originPattern{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return originPattern{}, false
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(scheme)
	}
	return originPattern{scheme: scheme, host: host, port: port}, true
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}

// Any reports whether every origin is allowed ("*").
func (o Origins) Any() bool { return o.any }

// Empty reports whether no origin is allowed.
func (o Origins) Empty() bool { return !o.any && len(o.patterns) == 0 }

// Allows reports whether a page of origin (an Origin header's value) may
// call.
func (o Origins) Allows(origin string) bool {
	if o.any {
		return true
	}
	if len(o.patterns) == 0 {
		return false
	}
	got, ok := parseOrigin(origin)
	if !ok {
		return false
	}
	for _, p := range o.patterns {
		if p.scheme != got.scheme || p.port != got.port {
			continue
		}
		if p.wild {
			// One or more whole labels before the suffix.
			if prefix, ok := strings.CutSuffix(got.host, "."+p.host); ok && prefix != "" && !strings.HasSuffix(prefix, ".") {
				return true
			}
		} else if got.host == p.host {
			return true
		}
	}
	return false
}

// SameOrigin reports whether origin names the host a request was sent to
// (its Host header, with or without a port): a page the gateway itself
// serves (the console).
func SameOrigin(origin, requestHost string) bool {
	o, ok := parseOrigin(origin)
	if !ok {
		return false
	}
	host, port, err := net.SplitHostPort(requestHost)
	if err != nil {
		host, port = requestHost, defaultPort(o.scheme)
	}
	return strings.EqualFold(strings.TrimSuffix(strings.Trim(host, "[]"), "."), o.host) && port == o.port
}

// LoopbackOrigin reports whether origin is a page served from this machine
// (localhost, 127.0.0.0/8, ::1).
func LoopbackOrigin(origin string) bool {
	o, ok := parseOrigin(origin)
	return ok && isLoopbackHost(o.host)
}
