package mcpfront

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/smcpgw/smcp-gateway/smcp"
)

// MetadataPrefix starts the path of an office's OAuth protected-resource
// metadata (RFC 9728 §3.1: the well-known segment inserted before the
// resource's path), served when Options.AuthorizationServers is set.
const MetadataPrefix = "/.well-known/oauth-protected-resource"

// protectedResource tells whether the endpoint is an OAuth protected
// resource: tokens of an authorization server sign in.
func (s *Server) protectedResource() bool { return len(s.opts.AuthorizationServers) > 0 }

// publicBase is the URL clients reach the gateway at: Options.PublicURL, else
// what the request itself was sent to.
func (s *Server) publicBase(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return strings.TrimSuffix(s.opts.PublicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// resourceURL is the MCP endpoint of office, the "resource" of its metadata.
func (s *Server) resourceURL(r *http.Request, office string) string {
	return s.publicBase(r) + "/mcp/" + url.PathEscape(office)
}

// metadataURL is where the metadata of office's endpoint is published.
func (s *Server) metadataURL(r *http.Request, office string) string {
	return s.publicBase(r) + MetadataPrefix + "/mcp/" + url.PathEscape(office)
}

// refuse answers a refusal; a 401 of a protected resource points the client
// to the resource's metadata (RFC 9728 §5.1), where it learns which
// authorization server issues the tokens this endpoint accepts (the MCP
// authorization spec's discovery).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := smcp.AsError(err); ok && e.Code == smcp.CodeUnauthenticated && s.protectedResource() {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q`, s.metadataURL(r, r.PathValue("office_id"))))
	}
	httpError(w, err)
}

// serveMetadata answers an office's protected-resource metadata. It is
// public (RFC 9728 §3): it names the issuer, not who may use the office.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	office := r.PathValue("office_id")
	if strings.TrimSpace(office) == "" {
		http.NotFound(w, r)
		return
	}
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		ResourceName           string   `json:"resource_name"`
	}{
		Resource:               s.resourceURL(r, office),
		AuthorizationServers:   s.opts.AuthorizationServers,
		BearerMethodsSupported: []string{"header"},
		ScopesSupported:        s.opts.Scopes,
		ResourceName:           "smcp-gateway office " + office,
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// Browser-based MCP clients read it from another origin.
	h.Set("Access-Control-Allow-Origin", "*")
	_ = json.NewEncoder(w).Encode(doc)
}
