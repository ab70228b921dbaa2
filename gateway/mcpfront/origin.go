package mcpfront

import (
	"net/http"

	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
)

// foreignOrigin reports a request sent by a web page that may not use the
// endpoint (MCP's transport rules: a server validates Origin, and answers a
// present, invalid one with 403, against DNS rebinding). Allowed: no Origin
// (clients that are not browsers send none), an Origin on the host the
// request was sent to, a loopback Origin, and the allow-list
// (httpauth.Origins). "null" (a sandboxed page, a file) and anything that
// is not an origin are foreign.
func (s *Server) foreignOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	return !httpauth.SameOrigin(origin, r.Host) && !httpauth.LoopbackOrigin(origin) && !s.origins.Allows(origin)
}
