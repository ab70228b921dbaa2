package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/smcpgw/smcp-gateway/buildinfo"
)

// defaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const defaultServiceName = "smcp-gateway"

// newTracerProvider builds the tracer provider the standard OpenTelemetry
// environment describes, or nil when tracing is off:
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: off.
//   - OTEL_TRACES_EXPORTER=otlp: OTLP, over HTTP/protobuf unless
//     OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL=grpc; the exporters read the
//     endpoint, headers, TLS, compression and timeout variables themselves.
//   - OTEL_TRACES_EXPORTER=console, or --trace-stdout: spans as JSON on stderr.
//   - OTEL_TRACES_EXPORTER unset: otlp when an OTLP endpoint variable is set,
//     else off. (The specification's default is otlp; a gateway that nobody
//     asked to trace should not send to localhost:4318 and log its failures.)
func newTracerProvider(ctx context.Context, traceStdout bool, log *slog.Logger) (*sdktrace.TracerProvider, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	kind := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if kind == "" {
		switch {
		case traceStdout:
			kind = "console"
		case os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
			kind = "otlp"
		default:
			kind = "none"
		}
	}
	var exp sdktrace.SpanExporter
	var err error
	switch kind {
	case "none":
		return nil, nil
	case "console":
		exp, err = stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	case "otlp":
		protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if protocol == "" {
			protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		switch protocol {
		case "", "http/protobuf":
			protocol = "http/protobuf"
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want http/protobuf or grpc", protocol)
		}
		kind += " " + protocol
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp, console or none", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter %s: %w", kind, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(defaultServiceName), semconv.ServiceVersion(buildinfo.Read().Version)),
		resource.WithFromEnv(), // later detectors win: OTEL_SERVICE_NAME over the default
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	log.Info("tracing", "exporter", kind)
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
