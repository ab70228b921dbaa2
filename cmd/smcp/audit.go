package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/smcpgw/smcp-gateway/buildinfo"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/audit"
	"github.com/smcpgw/smcp-gateway/gateway/quota"
)

// auditConfig is the audit trail --audit-file and --audit ask for: JSON
// lines to the file (rotated by size) or to stdout ("-"), and OTLP logs
// beside them when tracing exports OTLP (otlpLogs).
func (c *gatewayConfig) auditConfig() (gateway.AuditConfig, error) {
	var a gateway.AuditConfig
	switch c.Audit {
	case "", "best-effort":
	case "required":
		a.Required = true
	default:
		return a, fmt.Errorf("--audit %q: want best-effort or required", c.Audit)
	}
	if c.AuditFile == "" {
		if a.Required {
			return a, fmt.Errorf("--audit required needs --audit-file (a file, or - for stdout)")
		}
		return a, nil
	}
	a.HashArgs, a.HashResults = c.AuditHashArgs, c.AuditHashResults
	if c.AuditFile == "-" {
		a.Sinks = []audit.Sink{audit.NewJSONLines(os.Stdout)}
		return a, nil
	}
	sink, err := audit.OpenFile(audit.FileOptions{Path: c.AuditFile, MaxSizeMB: c.AuditMaxSizeMB, MaxBackups: c.AuditMaxBackups})
	if err != nil {
		return a, err
	}
	a.Sinks = []audit.Sink{sink}
	return a, nil
}

// otlpAuditSink is the OTLP logs sink of the audit when tracing exports
// OTLP over HTTP (the exporter reads the same OTEL_EXPORTER_OTLP_*
// variables, LOGS_ ones first); nil otherwise. Over gRPC it is not
// offered: the file (or stdout) remains.
func otlpAuditSink(ctx context.Context, log *slog.Logger) (audit.Sink, error) {
	kind := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") != ""
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || kind != "otlp" && (kind != "" || !endpoint) {
		return nil, nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		log.Warn("audit: OTLP logs are sent over http/protobuf only; the audit file remains", "protocol", protocol)
		return nil, nil
	}
	// The audit log retries a failed batch itself, and refuses calls
	// meanwhile when it is required: the exporter's own retries would hide
	// the failure.
	exp, err := otlploghttp.New(ctx, otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, fmt.Errorf("audit: OTLP logs exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(buildinfo.Read().Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("audit: OTLP resource: %w", err)
	}
	log.Info("audit: records also go to OTLP logs")
	return audit.NewOTLP(exp, res), nil
}

// quotas reads the quotas of the keys file; nil without one.
func (c *gatewayConfig) quotas() (*quota.Table, error) {
	if c.KeysFile == "" {
		return nil, nil
	}
	return quota.LoadFile(c.KeysFile)
}
