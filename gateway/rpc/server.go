// Package rpc is the typed agent API of the gateway: the smcp.v1.AgentService
// served with Connect, gRPC and gRPC-Web, with gRPC reflection (v1 and
// v1alpha), gRPC health and CORS for browsers. It is a front end of
// gateway/core like the Socket.IO one, on the same listener.
//
// Every RPC is a stateless agent call: the caller is authenticated from its
// API key before the request body is read, then acts as an agent (the key's
// fixed name, else the x-smcp-agent header, else Options.DefaultAgent) in the
// office named by the request, for the length of the call (core.Hub.ActAsAgent).
// Whether its key may do so is decided before the request is decoded, from
// the office_id read by a first pass over the body (admit.go); decoding is
// then bounded in depth (MaxDecodeDepth) as well as in size.
// WatchOffice holds the office the same way for as long as the stream is open.
package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	connectcors "connectrpc.com/cors"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/rs/cors"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/httpauth"
	"github.com/smcpgw/smcp-gateway/gateway/inflight"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// Defaults of Options.
const (
	DefaultAPIKeyHeader = "x-api-key"
	// AgentHeader names the agent of a caller whose key has no fixed name.
	AgentHeader = httpauth.AgentHeader
	// DefaultAgent is the agent name of a caller whose key has no fixed name
	// and who sent no AgentHeader.
	DefaultAgent = "rpc-agent"
	// DefaultToolTimeout is a CallTool's timeout when the request leaves it 0.
	DefaultToolTimeout int32 = 60
	// DefaultMaxRequestBytes bounds a request message (after decompression):
	// the Socket.IO front end's default payload limit.
	DefaultMaxRequestBytes = 1 << 20
	// compressMinBytes is the smallest answer worth compressing.
	compressMinBytes = 1024
	// maxWorkers bounds the goroutines kept to run HTTP/2 unary calls (see
	// workers): as many as one connection's default concurrent streams.
	maxWorkers = 256
	// workerIdle is how long a worker waits for a next call before it ends.
	workerIdle = time.Second
)

// Options configure the RPC front end. Zero fields take the defaults.
type Options struct {
	// APIKeyHeader carries the API key (default "x-api-key");
	// "Authorization: Bearer <key>" is always accepted too.
	APIKeyHeader string
	// DefaultAgent is the agent name used when the key has no fixed name and
	// the caller sends no x-smcp-agent header (default "rpc-agent").
	DefaultAgent string
	// CORSOrigins are the browser origins allowed to call
	// (httpauth.Origins: "https://app.example.com",
	// "https://*.example.com", "*" for any). Empty: no CORS headers, so
	// browsers on other origins are refused by their own policy.
	CORSOrigins []string
	// AllowedHosts are host names a loopback listener answers besides
	// loopback ones (httpauth.Rebound); a call under another Host name gets
	// PermissionDenied.
	AllowedHosts []string
	// MaxRequestBytes bounds a request message (default 1 MiB, the gateway
	// sets the Socket.IO limit); larger ones are refused with
	// ResourceExhausted before they are decoded.
	MaxRequestBytes int
	// EventsPerSecond and EventBurst are the token bucket of one ReadBlob
	// stream's chunk requests (each a client:get_blob to the computer), as
	// a Socket.IO connection's are of its events: a stream waits for its
	// next token. Zero: DefaultEventsPerSecond (the gateway sets the
	// Socket.IO figures); negative: no limit.
	EventsPerSecond float64
	EventBurst      int
	// HandlerOptions are added to the AgentService handler (interceptors,
	// e.g. otelconnect).
	HandlerOptions []connect.HandlerOption
	// Operator answers ListAudit, ListConnections, ListQuotas and
	// GetFigures (nil: Unimplemented).
	Operator Operator
	// OfficesElsewhere, in a cluster, names the offices the other nodes
	// know, so that ListOffices lists the cluster's rather than this
	// node's alone (which a console behind a load balancer would see
	// change from call to call); nil: none.
	OfficesElsewhere func(ctx context.Context) []string
	Logger           *slog.Logger
}

// Server is the RPC front end of one hub.
type Server struct {
	hub    *core.Hub
	auth   core.Authenticator
	opts   Options
	log    *slog.Logger
	health *grpchealth.StaticChecker

	// closing ends every WatchOffice stream when the gateway shuts down.
	closing context.Context
	close   context.CancelFunc
	once    sync.Once

	// The calls in flight, counted from the moment the handler has the
	// request, so that a shutdown waits for their answers before the
	// computers' connections are closed.
	calls inflight.Gate
	// workers run HTTP/2 unary calls on grown stacks.
	workers *workers
	// decodes counts the request messages decoded (admit): what a refused
	// caller must not have cost.
	decodes atomic.Int64
}

// New makes the RPC front end of hub, authenticating callers with auth.
func New(hub *core.Hub, auth core.Authenticator, opts Options) *Server {
	if opts.APIKeyHeader == "" {
		opts.APIKeyHeader = DefaultAPIKeyHeader
	}
	if opts.DefaultAgent == "" {
		opts.DefaultAgent = DefaultAgent
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.EventsPerSecond == 0 {
		opts.EventsPerSecond = DefaultEventsPerSecond
	}
	if opts.EventBurst <= 0 {
		opts.EventBurst = max(1, int(2*opts.EventsPerSecond))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		hub: hub, auth: auth, opts: opts, log: opts.Logger,
		health:  grpchealth.NewStaticChecker(smcpv1connect.AgentServiceName),
		closing: ctx, close: cancel, workers: newWorkers(maxWorkers, workerIdle),
	}
}

// Handlers returns every path to mount and its handler: the AgentService,
// reflection v1 and v1alpha, and health. Each is wrapped in CORS when
// Options.CORSOrigins is set. Reflection and health need no API key: they
// reveal only the public schema and whether the gateway is up.
func (s *Server) Handlers() map[string]http.Handler {
	limit := connect.WithReadMaxBytes(s.opts.MaxRequestBytes)
	// Answers smaller than compressMinBytes go uncompressed: gzip of a
	// ~100-byte CallTool answer was 30% of the gateway's CPU per call.
	// The drain gate comes first: while draining, every new call gets
	// Unavailable (HTTP 503), keyed or not, before any work is done for it.
	svcOpts := append([]connect.HandlerOption{connect.WithRequestGate(s.drainGate), connect.WithRequestGate(s.gate), limit,
		connect.WithCompressMinBytes(compressMinBytes)}, s.opts.HandlerOptions...)
	reflector := grpcreflect.NewStaticReflector(smcpv1connect.AgentServiceName, grpchealth.HealthV1ServiceName)
	cors := s.corsWrapper()
	out := map[string]http.Handler{}
	add := func(path string, h http.Handler) { out[path] = s.hostCheck(cors(h)) }
	path, svc := s.agentService(svcOpts...)
	add(path, s.track(svc))
	add(grpcreflect.NewHandlerV1(reflector, limit))
	add(grpcreflect.NewHandlerV1Alpha(reflector, limit))
	add(grpchealth.NewHandler(s.health, limit))
	return out
}

// Mount registers every handler of Handlers on mux.
func (s *Server) Mount(mux *http.ServeMux) {
	for path, h := range s.Handlers() {
		mux.Handle(path, h)
	}
}

// Refuse refuses new calls from now on, without waiting for those in
// flight (Drain waits).
func (s *Server) Refuse() { s.calls.Close() }

// Drain refuses new calls with Unavailable, reports NOT_SERVING on the health
// service, ends every WatchOffice stream (they never end on their own), then
// waits until the calls in flight are answered or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	s.calls.Close()
	s.Close()
	if err := s.calls.Drain(ctx); err != nil {
		// The workers end with the calls they still run.
		return fmt.Errorf("rpc: %w", err)
	}
	s.workers.wait()
	return nil
}

// track counts every request of h in flight. A request that arrives while
// draining is not counted; drainGate refuses it. HTTP/2 unary calls run on
// the workers; streams would hold one for their whole life.
func (s *Server) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.calls.Begin() {
			defer s.calls.End()
		}
		if !streams[r.URL.Path] {
			if r.ProtoMajor >= 2 {
				s.workers.serve(h, w, r)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		cut := &streamCut{rc: http.NewResponseController(w)}
		defer cut.finish()
		r = r.WithContext(context.WithValue(r.Context(), streamCutKey{}, cut))
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &cutBody{ReadCloser: r.Body, cut: cut}
		}
		h.ServeHTTP(w, r)
	})
}

// StreamsRequestBody reports whether r calls a procedure whose request
// streams (PutBlob): its body may take as long as it keeps moving, where a
// unary call's must arrive within the body-read timeout.
func StreamsRequestBody(r *http.Request) bool { return clientStreams[r.URL.Path] }

var clientStreams = func() map[string]bool {
	m := map[string]bool{}
	methods := smcpv1.File_smcp_v1_service_proto.Services().ByName("AgentService").Methods()
	for i := range methods.Len() {
		if md := methods.Get(i); md.IsStreamingClient() {
			m["/"+smcpv1connect.AgentServiceName+"/"+string(md.Name())] = true
		}
	}
	return m
}()

// streams are the procedures of the AgentService that stream (WatchOffice,
// ReadBlob, PutBlob): they run where net/http starts them, not on the
// workers, which they would hold for their whole life.
var streams = func() map[string]bool {
	m := map[string]bool{}
	methods := smcpv1.File_smcp_v1_service_proto.Services().ByName("AgentService").Methods()
	for i := range methods.Len() {
		if md := methods.Get(i); md.IsStreamingClient() || md.IsStreamingServer() {
			m["/"+smcpv1connect.AgentServiceName+"/"+string(md.Name())] = true
		}
	}
	return m
}()

// drainGate refuses calls once Drain has begun. A call counted just before
// is refused too: it has done nothing yet, and its caller retries elsewhere.
func (s *Server) drainGate(ctx context.Context, _ connect.Spec, _ connect.Peer, _ http.Header) (context.Context, error) {
	if s.calls.Draining() {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("gateway is shutting down"))
	}
	return ctx, nil
}

// Close reports NOT_SERVING on the health service and ends every WatchOffice
// stream with Unavailable, so that a graceful shutdown is not held up by
// streams that never end on their own. Unary calls in flight finish normally.
func (s *Server) Close() {
	s.once.Do(func() {
		s.health.SetStatus("", grpchealth.StatusNotServing)
		s.health.SetStatus(smcpv1connect.AgentServiceName, grpchealth.StatusNotServing)
		s.close()
		s.workers.close()
	})
}

// hostCheck refuses a request that reached a loopback listener under a
// host name neither loopback nor allowed (DNS rebinding: a web page of
// another site whose name resolves to 127.0.0.1 is, to the browser, of the
// same origin as the gateway, and CORS does not stop it), in the caller's
// protocol (Connect, gRPC or gRPC-Web): PermissionDenied.
func (s *Server) hostCheck(h http.Handler) http.Handler {
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpauth.Rebound(r, s.opts.AllowedHosts) {
			h.ServeHTTP(w, r)
			return
		}
		err := connect.NewError(connect.CodePermissionDenied, errors.New(httpauth.ReboundError(r).Message))
		if !ew.IsSupported(r) {
			http.Error(w, err.Message(), http.StatusForbidden)
			return
		}
		_ = ew.Write(w, r, err)
	})
}

// corsWrapper answers preflights and adds CORS headers for the configured
// origins (matched by httpauth.Origins, not by rs/cors's own wildcards,
// which compare strings: "https://*.example.com" would match
// "https://evil.com/.example.com"); without origins it changes nothing.
func (s *Server) corsWrapper() func(http.Handler) http.Handler {
	origins, _ := httpauth.ParseOrigins(s.opts.CORSOrigins) // checked where configured
	if origins.Empty() {
		return func(h http.Handler) http.Handler { return h }
	}
	headers := append(connectcors.AllowedHeaders(), s.opts.APIKeyHeader, "Authorization", AgentHeader, FrontHeader)
	opts := cors.Options{
		AllowedMethods: connectcors.AllowedMethods(),
		AllowedHeaders: headers,
		ExposedHeaders: connectcors.ExposedHeaders(),
		MaxAge:         7200,
	}
	if origins.Any() {
		opts.AllowedOrigins = []string{"*"}
	} else {
		opts.AllowOriginFunc = origins.Allows
	}
	return cors.New(opts).Handler
}
