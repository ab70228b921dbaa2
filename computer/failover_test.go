package computer_test

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestFailoverBetweenNodes gives a computer three gateway URLs: a port
// nobody listens on, then nodes A and B of one cluster (one Redis). It
// joins through A, skipping the dead URL; A stops; the link fails over to
// B and joins the office there, where an agent's call reaches it. The log
// names each switch, never the key.
func TestFailoverBetweenNodes(t *testing.T) {
	redisURL := "redis://" + miniredis.RunT(t).Addr()
	node := func(id string) *gateway.Running {
		gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}, Redis: redisURL, NodeID: id,
			HeartbeatTTL: 600 * time.Millisecond, Logger: quietLogger()}, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gw.Stop() })
		return gw
	}
	a, b := node("a"), node("b")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()

	f := testmcp.New("s", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{"s": {"url": fixture(t, f)}})
	var logs testwait.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	const key = "failover-secret-key"
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: dead, Fallbacks: []string{a.URL, b.URL}, Office: "office-1", APIKey: key,
		Dial: sioclient.Options{Logger: log, ReconnectDelay: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	if got := link.Conn().URL(); got != a.URL {
		t.Fatalf("joined through %s, want node A %s", got, a.URL)
	}

	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: b.URL, Logger: quietLogger(), Version: smcp.V02.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "office-1"); err != nil {
		t.Fatal(err)
	}
	echo := func() (string, error) {
		res, err := ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Timeout: 10,
			Params: params(t, map[string]any{"text": "hi"})})
		if err != nil {
			return "", err
		}
		if res.GetIsError() {
			return "", &smcp.Error{Code: 500, Message: text0(res)}
		}
		return text0(res), nil
	}
	if got, err := echo(); err != nil || got != "s: hi" {
		t.Fatalf("call across nodes before the failover: %q %v", got, err)
	}

	h.upd.drain()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// The computer tells the office's agent to refresh once it is back.
	h.upd.wait(t, smcp.EventUpdateConfig)
	if got := link.Conn().URL(); got != b.URL {
		t.Fatalf("after A stopped the link is on %s, want node B %s", got, b.URL)
	}
	var got string
	if !testwait.Poll(20*time.Second, func() bool { got, err = echo(); return err == nil }) {
		t.Fatalf("agent's call after the failover: %q %v", got, err)
	}
	if got != "s: hi" {
		t.Fatalf("echo after the failover: %q", got)
	}

	out := logs.String()
	if !strings.Contains(out, "trying the next node") || !strings.Contains(out, "url="+dead) {
		t.Errorf("no line for skipping the dead URL:\n%s", out)
	}
	if n := strings.Count(out, "failing over"); n != 1 || !strings.Contains(out, "from="+a.URL+" to="+b.URL) {
		t.Errorf("want one failover line from A to B, got %d:\n%s", n, out)
	}
	if strings.Contains(out, key) {
		t.Errorf("the API key is in the log:\n%s", out)
	}
}
