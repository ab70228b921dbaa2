package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes each
// export request (protobuf) and keeps the span names by service.name.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans map[string][]string // service.name -> span names
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{spans: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &export)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP export: content type %q, %v", req.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			var service string
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans[service] = append(r.spans[service], s.GetName())
				}
			}
		}
		r.mu.Unlock()
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	r.URL = "http://" + ln.Addr().String()
	return r
}

func (r *otlpReceiver) names(service string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans[service])
}

// With only the standard OTEL_* environment set, a routed call's span
// reaches an OTLP collector, under OTEL_SERVICE_NAME.
func TestTracingOTLP(t *testing.T) {
	recv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "gw-under-test")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	log := slog.New(slog.DiscardHandler)
	tp, err := newTracerProvider(ctx, false, log)
	if err != nil || tp == nil {
		t.Fatalf("tracer provider from OTEL_EXPORTER_OTLP_ENDPOINT: %v, %v", tp, err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, TracerProvider: tp, Logger: log}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = gw.Stop() }()

	comp, err := computer.New(computer.Options{Name: "pc", Config: &config.Config{}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopComputer := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- comp.Run(runCtx, computer.Gateway{URL: gw.URL, Office: "o"}) }()
	defer func() { stopComputer(); <-ran }()

	ag, err := agent.Dial(ctx, sioclient.Options{URL: gw.URL, Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	defer ag.Close()
	if err := ag.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	deadline, _ := ctx.Deadline()
	if !testwait.Poll(time.Until(deadline), func() bool { _, err = ag.GetTools(ctx, "pc"); return err == nil }) {
		t.Fatalf("get_tools: %v", err)
	}
	// Shutdown flushes the batch to the collector.
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("flush to the OTLP receiver: %v", err)
	}
	if got := recv.names("gw-under-test"); !slices.Contains(got, "client:get_tools") {
		t.Fatalf("spans received for gw-under-test: %v; want client:get_tools", got)
	}

	// The exporter choices and their mistakes.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if tp, err := newTracerProvider(ctx, false, log); tp != nil || err != nil {
		t.Errorf("nothing set: tracing must be off, got %v, %v", tp, err)
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := newTracerProvider(ctx, false, log); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	if tp, _ := newTracerProvider(ctx, true, log); tp != nil {
		t.Error("OTEL_TRACES_EXPORTER=none must win over --trace-stdout")
	}
}
