package rpc

import (
	"context"
	"net/http"
	"strings"
	"unicode"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// caller is who an RPC acts as, decided by the gate.
type caller struct {
	principal *core.Principal
	agent     string
}

type callerKey struct{}

func callerFrom(ctx context.Context) (*caller, error) {
	c, ok := ctx.Value(callerKey{}).(*caller)
	if !ok {
		// Only reachable if the handler is mounted without its gate.
		return nil, toConnect(smcp.Errorf(smcp.CodeUnauthenticated, "unauthenticated"))
	}
	return c, nil
}

// gate authenticates the caller from its headers before the request body is
// read, and fixes the agent name it acts as.
func (s *Server) gate(ctx context.Context, spec connect.Spec, _ connect.Peer, h http.Header) (context.Context, error) {
	cred, err := s.credential(h)
	if err != nil {
		return nil, toConnect(err)
	}
	p, err := s.auth.Authenticate(ctx, cred)
	if err != nil {
		s.log.Info("rpc refused", "procedure", spec.Procedure, "err", err)
		return nil, toConnect(err)
	}
	agent, err := s.agentName(p, h.Get(AgentHeader))
	if err != nil {
		return nil, toConnect(err)
	}
	return context.WithValue(ctx, callerKey{}, &caller{principal: p, agent: agent}), nil
}

// credential takes the API key from the key header or from
// "Authorization: Bearer"; two different keys are refused.
func (s *Server) credential(h http.Header) (string, error) {
	key := strings.TrimSpace(h.Get(s.opts.APIKeyHeader))
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
		return "", smcp.Errorf(smcp.CodeUnauthenticated, "%s and Authorization carry different keys", s.opts.APIKeyHeader)
	case key != "":
		return key, nil
	}
	return bearer, nil
}

// agentName is the key's fixed name, else the header, else the default.
func (s *Server) agentName(p *core.Principal, header string) (string, error) {
	header = strings.TrimSpace(header)
	if p.Name != "" {
		if header != "" && header != p.Name {
			return "", smcp.Errorf(smcp.CodeForbidden, "this key may only use the name %q", p.Name)
		}
		return p.Name, nil
	}
	if header == "" {
		return s.opts.DefaultAgent, nil
	}
	if len(header) > maxAgentName || strings.IndexFunc(header, unicode.IsControl) >= 0 {
		return "", smcp.Errorf(smcp.CodeBadRequest, "%s must be at most %d printable characters", AgentHeader, maxAgentName)
	}
	return header, nil
}
