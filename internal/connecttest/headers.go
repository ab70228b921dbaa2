// Package connecttest holds helpers for tests that call the Connect API.
package connecttest

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
)

// Headers sets request headers (name, value, name, value, ...) on every
// call of a client, unary and streaming.
func Headers(kv ...string) connect.ClientOption {
	return connect.WithInterceptors(headers(kv))
}

type headers []string

func (h headers) set(hd http.Header) {
	for i := 0; i+1 < len(h); i += 2 {
		hd.Set(h[i], h[i+1])
	}
}

func (h headers) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h.set(req.Header())
		return next(ctx, req)
	}
}

func (h headers) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		h.set(conn.RequestHeader())
		return conn
	}
}

func (h headers) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
