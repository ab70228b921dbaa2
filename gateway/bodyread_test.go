package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// An h2c request that sends half a body and stalls has its body read fail
// after BodyReadTimeout and gets its answer (an error), its stream no longer
// held; the connection's other streams are not touched. The HTTP/2 deadline
// is never lifted (TestSilentConnectionsAreClosed shows that an h2c call
// slower than the timeout, its body read, is still answered).
func TestH2CHalfBodyIsCut(t *testing.T) {
	const limit = 300 * time.Millisecond
	g := startGateway(t, gateway.Config{Auth: core.AllowAll{}, BodyReadTimeout: limit})
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)

	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/smcp.v1.AgentService/CallTool", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	go func() { _, _ = io.WriteString(pw, `{"officeId":"o","comp`) }() // then silence
	start := time.Now()
	res, err := hc.Do(req)
	took := time.Since(start)
	if err == nil {
		_ = res.Body.Close()
	}
	if took > 5*time.Second || ctx.Err() != nil {
		t.Fatalf("half a body held its stream for %v (limit %v): %v", took, limit, err)
	}
	if err == nil && res.StatusCode == http.StatusOK {
		t.Fatalf("half a body answered 200")
	}
	if took < limit {
		t.Fatalf("cut after %v, before the %v limit", took, limit)
	}

	// The same connection still serves.
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	hres, err := hc.Do(hreq)
	if err != nil {
		t.Fatalf("/healthz after the cut stream: %v", err)
	}
	body, _ := io.ReadAll(hres.Body)
	_ = hres.Body.Close()
	if hres.StatusCode != http.StatusOK || hres.ProtoMajor != 2 || !strings.Contains(string(body), "ok") {
		t.Fatalf("/healthz after the cut stream: %s %s %q", hres.Proto, hres.Status, body)
	}
}
