package mcpfront

import (
	"net/http"
	"net/url"
	"strings"
)

// foreignOrigin reports a request sent by a web page that may not use the
// endpoint (MCP's transport rules: a server validates Origin, and answers a
// present, invalid one with 403, against DNS rebinding). Allowed: no Origin
// (clients that are not browsers send none), an Origin on the host the
// request was sent to, a loopback Origin, and the allow-list (an entry "*"
// allows any).
func (s *Server) foreignOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return true // "null" (a sandboxed page, a file), or not an origin at all
	}
	if strings.EqualFold(u.Host, r.Host) || isLoopback(u.Host) {
		return false
	}
	norm := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, a := range s.opts.AllowedOrigins {
		if a == "*" || strings.ToLower(strings.TrimSuffix(a, "/")) == norm {
			return false
		}
	}
	return true
}
