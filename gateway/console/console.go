// Package console is the gateway's web console: static files (HTML, CSS and
// JavaScript modules, embedded in the binary, no build step) served at
// /console/. The page talks to the gateway only through the public Connect
// API (Connect JSON over HTTP, WatchOffice as a Connect stream read with
// fetch) with the API key the user types in, kept in session storage and
// sent in the x-api-key header; the files themselves are public and hold no
// data. The gateway's figures come from GetFigures (operator keys).
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
)

// Path is where the gateway mounts the console.
const Path = "/console/"

//go:embed static
var static embed.FS

// csp lets the page load only its own files and call only its own origin:
// no inline script, no third party, images from data: URLs (tool results).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure the console.
type Options struct {
	// APIKeyHeader is the header the gateway reads the API key from
	// (default "x-api-key"); the page learns it from config.json.
	APIKeyHeader string
	// AllowedHosts are host names a loopback listener answers besides
	// loopback ones (httpauth.Rebound): a page of another site rebound to
	// 127.0.0.1 gets 403, not a console of its own origin that the user's
	// browser would fill with the key.
	AllowedHosts []string
}

// Handler serves the console's files under Path (mount it at "GET /console/"),
// and config.json: what the page must know of this gateway, nothing secret.
// Every answer is marked not to be cached (the files change with the
// gateway), sniffed, framed or referred.
func Handler(opts Options) http.Handler {
	if opts.APIKeyHeader == "" {
		opts.APIKeyHeader = "x-api-key"
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	config, err := json.Marshal(map[string]string{"api_key_header": opts.APIKeyHeader})
	if err != nil {
		panic(err) // a map of strings
	}
	files := http.StripPrefix(Path, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpauth.Rebound(r, opts.AllowedHosts) {
			http.Error(w, httpauth.ReboundError(r).Message, http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == Path+"config.json" {
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(config)
			return
		}
		files.ServeHTTP(w, r)
	})
}
