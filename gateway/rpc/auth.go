package rpc

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// caller is who an RPC acts as, decided by the gate.
type caller struct {
	principal *core.Principal
	agent     string
	// front is the front end named to the agents its seat refuses: the
	// web console says it is one (FrontHeader), else the RPC API.
	front string
	// protocol is the wire: "connect", "grpc" or "grpcweb".
	protocol string
}

// FrontHeader, set to "console" by the web console, names the console
// rather than the RPC API as the holder of the seats its calls take.
const FrontHeader = "x-smcp-front"

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
func (s *Server) gate(ctx context.Context, spec connect.Spec, peer connect.Peer, h http.Header) (context.Context, error) {
	cred, err := httpauth.Credential(h, s.opts.APIKeyHeader)
	if err != nil {
		return nil, toConnect(err)
	}
	p, err := s.auth.Authenticate(ctx, cred)
	if err != nil {
		s.log.Info("rpc refused", "procedure", spec.Procedure, "err", err)
		return nil, toConnect(err)
	}
	agent, err := httpauth.AgentName(p, h.Get(AgentHeader), s.opts.DefaultAgent)
	if err != nil {
		return nil, toConnect(err)
	}
	front := core.FrontRPC
	if h.Get(FrontHeader) == core.FrontConsole {
		front = core.FrontConsole
	}
	return context.WithValue(ctx, callerKey{}, &caller{principal: p, agent: agent, front: front, protocol: peer.Protocol}), nil
}
