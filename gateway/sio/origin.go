package sio

import (
	"net/http"

	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// originCheck refuses, with 403, an Engine.IO request (polling or WebSocket
// handshake, and every later request) that a web page of another site may
// have sent: one that reached a loopback listener under a host name that is
// not loopback nor in hosts (DNS rebinding: the page's own name resolved to
// 127.0.0.1, so its Origin is the request's Host), or whose Origin is
// neither the gateway's own (the Origin's host is the request's Host) nor
// one of allowed (httpauth.Origins). A page of another origin must not join
// an office with the demo's public key or an --insecure gateway's open
// door. Non-browser clients send no Origin and use the address they dial.
func originCheck(allowed, hosts []string, next http.Handler) http.Handler {
	origins, _ := httpauth.ParseOrigins(allowed) // checked where configured
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpauth.Rebound(r, hosts) {
			refuseHTTP(w, http.StatusForbidden, httpauth.ReboundError(r))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !origins.Allows(origin) && !httpauth.SameOrigin(origin, r.Host) {
			refuseHTTP(w, http.StatusForbidden, smcp.Errorf(smcp.CodeForbidden, "origin %q not allowed", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}
