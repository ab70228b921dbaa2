package sio

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// originCheck refuses, with 403, an Engine.IO request (polling or WebSocket
// handshake, and every later request) whose Origin is neither the gateway's
// own (the Origin's host is the request's Host) nor one of allowed: a page of
// another origin must not join an office with the demo's public key or an
// --insecure gateway's open door. Non-browser clients send no Origin and are
// not affected. allowed entries are origins ("https://app.example.com"),
// "*" for any, or one "*" standing for any characters
// ("https://*.example.com"), as in the Connect API's CORS list.
func originCheck(allowed []string, next http.Handler) http.Handler {
	anyOrigin := false
	for _, a := range allowed {
		anyOrigin = anyOrigin || a == "*"
	}
	if anyOrigin {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(origin, r.Host) && !originAllowed(origin, allowed) {
			refuseHTTP(w, http.StatusForbidden, smcp.Errorf(smcp.CodeForbidden, "origin %q not allowed", origin))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin names host (the request's Host header),
// as a page served by the gateway itself (the console) does.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

func originAllowed(origin string, allowed []string) bool {
	for _, a := range allowed {
		if prefix, suffix, wild := strings.Cut(a, "*"); wild {
			if len(origin) >= len(prefix)+len(suffix) &&
				strings.HasPrefix(strings.ToLower(origin), strings.ToLower(prefix)) &&
				strings.HasSuffix(strings.ToLower(origin), strings.ToLower(suffix)) {
				return true
			}
		} else if strings.EqualFold(origin, a) {
			return true
		}
	}
	return false
}
