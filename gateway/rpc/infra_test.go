package rpc_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testtls"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestWatchSlowReaderIsDropped: a stream reader that does not read never
// holds up the hub. Its HTTP/2 window is 64 bytes, so the gateway's sends to
// it block at once; the office's notifications still reach everyone else,
// and the slow stream ends with ResourceExhausted.
func TestWatchSlowReaderIsDropped(t *testing.T) {
	const buffer, updates = 8, 200
	g := startGateway(t, func(c *gateway.Config) { c.Core.WatchBuffer = buffer })
	comp := startComputer(t, g, "pc-s", officeA)
	ctx := testContext(t)

	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	tiny := &http.Client{Transport: &http.Transport{Protocols: p, HTTP2: &http.HTTP2Config{MaxReceiveBufferPerStream: 64}}}
	t.Cleanup(tiny.CloseIdleConnections)
	slow := smcpv1connect.NewAgentServiceClient(tiny, g.URL, connect.WithGRPC(), connecttest.Headers("x-api-key", keyAgent))
	stream, err := slow.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: officeA})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	_ = stream.ResponseHeader()

	fast := openWatch(t, ctx, newClient(t, g, protocols[2], "x-api-key", keyAgent), officeA)
	// In batches half the watch buffer, so that the reading watcher keeps up.
	for range updates / (buffer / 2) {
		for range buffer / 2 {
			if err := comp.c.Emit(smcp.EventUpdateToolList, &smcpv1.UpdateComputerConfigReq{Computer: "pc-s"}); err != nil {
				t.Fatal(err)
			}
		}
		for range buffer / 2 {
			fast.next(t, smcp.NotifyUpdateToolList)
		}
	}

	got := 0
	for stream.Receive() {
		got++
	}
	if connect.CodeOf(stream.Err()) != connect.CodeResourceExhausted {
		t.Fatalf("slow stream ended with %v after %d messages; want ResourceExhausted", stream.Err(), got)
	}
	if got >= updates {
		t.Fatalf("slow stream received all %d notifications: it was never slow", got)
	}
	fast.close(t)
}

func TestHealth(t *testing.T) {
	g := startGateway(t)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			hc := p.http()
			t.Cleanup(hc.CloseIdleConnections)
			health := grpchealth.NewClient(hc, g.URL, p.opts...)
			for _, svc := range []string{"", smcpv1connect.AgentServiceName} {
				res, err := health.Check(testContext(t), &grpchealth.CheckRequest{Service: svc})
				if err != nil {
					t.Fatalf("Check(%q): %v", svc, err)
				}
				if res.Status != grpchealth.StatusServing {
					t.Fatalf("Check(%q) = %v", svc, res.Status)
				}
			}
			if _, err := health.Check(testContext(t), &grpchealth.CheckRequest{Service: "no.Such"}); connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("Check of an unknown service: %v", err)
			}
		})
	}
}

// TestClose: closing the front end (the gateway does it on shutdown) reports
// NOT_SERVING and ends open watches with Unavailable.
func TestClose(t *testing.T) {
	hub := core.New(core.Config{})
	srv := rpc.New(hub, core.AllowAll{}, rpc.Options{})
	mux := http.NewServeMux()
	srv.Mount(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	ctx := testContext(t)
	cl := smcpv1connect.NewAgentServiceClient(ts.Client(), ts.URL)
	stream, err := cl.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: "o"})
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.ResponseHeader()
	srv.Close()
	for stream.Receive() {
		t.Fatalf("unexpected message %v", stream.Msg())
	}
	if connect.CodeOf(stream.Err()) != connect.CodeUnavailable {
		t.Fatalf("watch ended with %v; want Unavailable", stream.Err())
	}
	res, err := grpchealth.NewClient(ts.Client(), ts.URL).Check(ctx, &grpchealth.CheckRequest{})
	if err != nil || res.Status != grpchealth.StatusNotServing {
		t.Fatalf("health after Close: %v, %v", res, err)
	}
}

// TestShutdownEndsWatch: a gateway shutting down ends open watches at once
// instead of waiting its grace period for them.
func TestShutdownEndsWatch(t *testing.T) {
	g, err := gateway.Start(gateway.Config{Auth: testKeys(t)}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)
	stream, err := cl.WatchOffice(testContext(t), &smcpv1.WatchOfficeRequest{OfficeId: officeA})
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.ResponseHeader()
	stopped := make(chan error, 1)
	go func() { stopped <- g.Stop() }()
	for stream.Receive() {
		t.Fatalf("unexpected message %v", stream.Msg())
	}
	if err := stream.Err(); connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("watch ended with %v; want Unavailable: gateway is shutting down", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestCORS(t *testing.T) {
	g := startGateway(t)
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, g.URL+smcpv1connect.AgentServiceListRoomProcedure, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		req.Header.Set("Access-Control-Request-Headers", "connect-protocol-version,content-type,x-api-key,x-smcp-agent") // sorted, as browsers send it
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := preflight("https://app.example")
	if res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("allowed origin refused: %d %v", res.StatusCode, res.Header)
	}
	if h := strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")); !strings.Contains(h, "x-api-key") || !strings.Contains(h, "x-smcp-agent") {
		t.Fatalf("allowed headers %q", h)
	}
	if res := preflight("https://evil.example"); res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin allowed: %v", res.Header)
	}

	// A browser-style gRPC-Web call sees the gRPC status headers.
	cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, g.URL, connect.WithGRPCWeb(),
		connecttest.Headers("origin", "https://app.example", "x-api-key", keyAgent))
	stream, err := cl.WatchOffice(testContext(t), &smcpv1.WatchOfficeRequest{OfficeId: officeA})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	h := stream.ResponseHeader()
	if h.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(strings.ToLower(h.Get("Access-Control-Expose-Headers")), "grpc-status") {
		t.Fatalf("gRPC-Web response headers %v", h)
	}
}

// TestTLS: with certificates the one port speaks HTTPS, gRPC over TLS
// (HTTP/2 by ALPN) and Connect over HTTP/1.1.
func TestTLS(t *testing.T) {
	cert, pool := testtls.SelfSigned(t)
	g := startGateway(t, func(c *gateway.Config) { c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}} })
	if !strings.HasPrefix(g.URL, "https://") {
		t.Fatalf("URL %s", g.URL)
	}
	startComputer(t, g, "pc-tls", officeA, func(o *sioclient.Options) { o.TLSConfig = &tls.Config{RootCAs: pool} })
	h2 := new(http.Protocols)
	h2.SetHTTP2(true)
	h1 := new(http.Protocols)
	h1.SetHTTP1(true)
	for _, c := range []struct {
		name  string
		proto *http.Protocols
		opts  []connect.ClientOption
	}{
		{"grpc-h2", h2, []connect.ClientOption{connect.WithGRPC()}},
		{"connect-h1", h1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			hc := &http.Client{Transport: &http.Transport{Protocols: c.proto, TLSClientConfig: &tls.Config{RootCAs: pool}}}
			t.Cleanup(hc.CloseIdleConnections)
			cl := smcpv1connect.NewAgentServiceClient(hc, g.URL, append(c.opts, connecttest.Headers("x-api-key", keyAgent))...)
			res, err := cl.ListRoom(testContext(t), &smcpv1.ListRoomRequest{OfficeId: officeA})
			if err != nil {
				t.Fatalf("ListRoom over TLS: %v", err)
			}
			if len(res.GetSessions()) != 1 || res.GetSessions()[0].GetName() != "pc-tls" {
				t.Fatalf("ListRoom: %v", res)
			}
		})
	}
}
