package computer_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/upstreamauth"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/internal/oauthtest"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// A computer whose sign-ins go through its gateway (SignInRedirect and no
// OnSignIn) reports a sign-in that started before it joined once it
// joins, and reports it again to a gateway restarted on the same address
// (which knew nothing of it) once it re-joins: the same state, so the
// operator's link still works.
func TestGatewaySignInReportedAtEveryJoin(t *testing.T) {
	as := oauthtest.StartAS(t, time.Hour)
	url := oauthtest.Protected(t, as, testmcp.New("guarded", testmcp.Options{}).HTTPHandler(), "mcp:tools")
	st, err := upstreamauth.OpenStore(filepath.Join(t.TempDir(), "store"), []byte("a key of the test store 0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(gw.URL, "http://")
	h := newComputerFrom(t, computer.Protocol04, fmt.Sprintf(`{"mcpServers": {"Guarded API": {"type": "streamable-http", "url": %q}}}`, url),
		nil, func(o *computer.Options) {
			o.AuthStore = st
			o.SignInRedirect = computer.GatewaySignInRedirect(gw.URL, "o", "pc")
		})
	listed := func(g *gateway.Running) []core.SignIn {
		var l []core.SignIn
		testwait.Until(t, "the sign-in listed by the gateway", func() bool { l = g.Hub.SignIns("o"); return len(l) == 1 })
		return l
	}
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "o",
		Dial: sioclient.Options{Logger: quietLogger(), ReconnectDelay: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	first := listed(gw)[0]
	if first.Computer != "pc" || first.Server != "Guarded API" || !strings.HasPrefix(first.URL, as.Issuer) || first.State == "" {
		t.Fatalf("listed: %+v", first)
	}
	if err := gw.Stop(); err != nil {
		t.Fatal(err)
	}
	gw2, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Logger: quietLogger()}, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw2.Stop() })
	if again := listed(gw2)[0]; again.State != first.State || again.URL != first.URL {
		t.Fatalf("after the re-join: %+v, want %+v", again, first)
	}
}
