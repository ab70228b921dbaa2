package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
)

func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("smcp gateway", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on")
	apiKey := fs.String("api-key", "", "API key every caller must present (default $SMCP_API_KEY)")
	keysFile := fs.String("keys-file", "", "YAML or JSON file of API keys with their allowed roles, offices and names")
	insecure := fs.Bool("insecure", false, "accept callers without an API key (development only)")
	sioPath := fs.String("sio-path", sio.DefaultPath, "Engine.IO HTTP path of the Socket.IO endpoint")
	keyHeader := fs.String("api-key-header", sio.DefaultAPIKeyHeader, "header carrying the API key")
	requireVersion := fs.Bool("require-version", false, "refuse clients that do not send a2c_version")
	tlsCert := fs.String("tls-cert", "", "TLS certificate file (PEM); serve HTTPS with --tls-key")
	tlsKey := fs.String("tls-key", "", "TLS private key file (PEM)")
	maxMessage := fs.Int("max-message-bytes", sio.DefaultMaxMessageBytes, "largest event payload accepted")
	callTimeout := fs.Duration("call-timeout", core.DefaultRequestTimeout, "deadline of client: events other than tool_call")
	maxPending := fs.Int("max-pending", core.DefaultMaxPending, "requests awaiting one computer's answer, at most")
	grace := fs.Duration("shutdown-grace", gateway.DefaultShutdownGrace, "how long in-flight calls may finish on shutdown")
	corsOrigins := fs.String("cors-origins", "", "comma-separated browser origins allowed to call the Connect/gRPC-Web API (\"*\" for any)")
	rpcAgent := fs.String("rpc-agent", rpc.DefaultAgent, "agent name of RPC callers whose key has no fixed name and who send no x-smcp-agent")
	redisURL := fs.String("redis", "", "Redis URL (redis://host:6379/0): run as one node of a cluster sharing offices through Redis")
	nodeID := fs.String("node-id", "", "this node's id in the cluster (default: random)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "log as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, opts)
	if *logJSON {
		handler = slog.NewJSONHandler(os.Stderr, opts)
	}
	log := slog.New(handler)

	auth, err := gatewayAuth(*apiKey, *keysFile, *insecure, log)
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" || *tlsKey != "" {
		if *tlsCert == "" || *tlsKey == "" {
			return errors.New("--tls-cert and --tls-key go together")
		}
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if *callTimeout <= 0 || *maxMessage <= 0 || *maxPending <= 0 || *grace <= 0 {
		return errors.New("--call-timeout, --max-message-bytes, --max-pending and --shutdown-grace must be positive")
	}

	g, err := gateway.New(gateway.Config{
		Auth: auth,
		Core: core.Config{RequestTimeout: *callTimeout, MaxPending: *maxPending},
		SIO: sio.Config{
			Path: *sioPath, APIKeyHeader: *keyHeader, MaxMessageBytes: *maxMessage, RequireVersion: *requireVersion,
		},
		RPC:           rpc.Options{CORSOrigins: splitList(*corsOrigins), DefaultAgent: *rpcAgent},
		ShutdownGrace: *grace,
		TLS:           tlsConfig,
		Logger:        log,
		Redis:         *redisURL,
		NodeID:        *nodeID,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return g.Serve(ctx, ln)
}

// gatewayAuth picks the authenticator: a keys file, else one key from the
// flag or $SMCP_API_KEY; without either the gateway refuses to start unless
// --insecure. Keys are never logged.
func gatewayAuth(apiKey, keysFile string, insecure bool, log *slog.Logger) (core.Authenticator, error) {
	if apiKey == "" {
		apiKey = os.Getenv("SMCP_API_KEY")
	}
	switch {
	case keysFile != "" && apiKey != "":
		return nil, errors.New("use either --keys-file or --api-key/$SMCP_API_KEY, not both")
	case keysFile != "":
		ring, err := core.LoadKeyRing(keysFile)
		if err != nil {
			return nil, err
		}
		log.Info("authentication: keys file", "path", keysFile)
		return ring, nil
	case apiKey != "":
		log.Info("authentication: one API key")
		return core.NewKeyRing(core.Key{Key: apiKey, ID: "api-key"})
	case insecure:
		log.Warn("authentication disabled (--insecure): anyone reaching this port may act as any agent or computer")
		return core.AllowAll{}, nil
	}
	return nil, errors.New("no API key: set --api-key or $SMCP_API_KEY, or --keys-file (or --insecure for development)")
}

// splitList splits a comma-separated flag value, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
