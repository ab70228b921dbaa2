// Package httpauth is how the gateway's front ends read who is calling: the
// API key from the configured header or from "Authorization: Bearer", the
// agent name a key without a fixed name acts as, and the client address their
// per-address limits count. One reading for all, so that a key and an address
// count the same way on each.
package httpauth

import (
	"net"
	"net/http"
	"strings"
	"unicode"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// AgentHeader names the agent of a caller whose key has no fixed name.
const AgentHeader = "x-smcp-agent"

// MaxAgentName bounds the AgentHeader value.
const MaxAgentName = 128

// Credential takes the API key from keyHeader or from "Authorization:
// Bearer"; two different keys are refused rather than one picked.
func Credential(h http.Header, keyHeader string) (string, error) {
	key := strings.TrimSpace(h.Get(keyHeader))
	var bearer string
	if a := h.Get("Authorization"); a != "" {
		scheme, token, ok := strings.Cut(a, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", smcp.Errorf(smcp.CodeUnauthenticated, "Authorization must be \"Bearer <API key>\"")
		}
		bearer = strings.TrimSpace(token)
	}
	switch {
	case key != "" && bearer != "" && key != bearer:
		return "", smcp.Errorf(smcp.CodeUnauthenticated, "%s and Authorization carry different keys", keyHeader)
	case key != "":
		return key, nil
	}
	return bearer, nil
}

// AgentName is the key's fixed name, else the AgentHeader value, else def.
func AgentName(p *core.Principal, header, def string) (string, error) {
	header = strings.TrimSpace(header)
	if p.Name != "" {
		if header != "" && header != p.Name {
			return "", smcp.Errorf(smcp.CodeForbidden, "this key may only use the name %q", p.Name)
		}
		return p.Name, nil
	}
	if header == "" {
		return def, nil
	}
	if len(header) > MaxAgentName || strings.IndexFunc(header, unicode.IsControl) >= 0 {
		return "", smcp.Errorf(smcp.CodeBadRequest, "%s must be at most %d printable characters", AgentHeader, MaxAgentName)
	}
	return header, nil
}

// ClientIP is the IP of a remote address ("host:port", as in
// http.Request.RemoteAddr), which the per-address limits count: the TCP
// peer, since forwarding headers are the client's to forge. An address
// without a port is returned as is.
func ClientIP(remoteAddr string) string {
	if host, _, err := net.SplitHostPort(remoteAddr); err == nil {
		return host
	}
	return remoteAddr
}
