package computer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// lockedBuffer is an io.Writer shared by every logger of the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A whole flow at debug level — gateway, computer with a stdio server whose
// env holds a secret and an HTTP server whose headers hold one, a Socket.IO
// agent and an RPC caller, refused guesses included — leaves no API key and
// no secret in any log line, answer or error.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		apiKey     = "sk-gateway-key-0f1e2d3c4b5a"
		guess      = "sk-guessed-key-9a8b7c6d"
		envSecret  = "env-secret-value-5e6f7a"
		headSecret = "header-secret-value-1b2c3d"
	)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ring, err := core.NewKeyRing(core.Key{Key: apiKey, ID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.Start(gateway.Config{Auth: ring, Logger: log, Metrics: true}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })

	f := testmcp.New("web", testmcp.Options{})
	h := newComputer(t, map[string]map[string]any{
		"web":   {"url": fixture(t, f), "headers": map[string]any{"Authorization": "Bearer " + headSecret}},
		"local": {"command": fixtureBin, "env": map[string]any{"API_TOKEN": envSecret}},
	}, func(o *computer.Options) { o.Logger = log })
	dial := sioclient.Options{APIKey: apiKey, Logger: log}
	link, err := h.c.Connect(ctxT(t), computer.Gateway{URL: gw.URL, Office: "office-1", Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
	agentDial := dial
	agentDial.URL = gw.URL
	ag, err := agent.Dial(ctxT(t), agentDial, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctxT(t), "office-1"); err != nil {
		t.Fatal(err)
	}

	var answers []string
	keep := func(m any, err error) {
		b, _ := json.Marshal(m)
		answers = append(answers, string(b))
		if err != nil {
			answers = append(answers, err.Error())
		}
	}
	keep(ag.GetConfig(ctxT(t), "pc"))
	keep(ag.GetTools(ctxT(t), "pc"))
	args := params(t, map[string]any{"text": "hello"})
	keep(ag.CallTool(ctxT(t), &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Params: args, Timeout: 10}))
	keep(ag.GetTools(ctxT(t), "nobody"))
	// Refused connections: a wrong key in the header and in the auth object.
	for _, inAuth := range []bool{false, true} {
		_, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: gw.URL, APIKey: guess, KeyInAuth: inAuth, NoReconnect: true, Logger: log})
		keep(nil, err)
	}
	// RPC: a good call, a refused key, a refused office.
	rpcAs := func(key string) smcpv1connect.AgentServiceClient {
		return smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL, connect.WithInterceptors(connect.UnaryInterceptorFunc(
			func(next connect.UnaryFunc) connect.UnaryFunc {
				return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
					req.Header().Set("authorization", "Bearer "+key)
					return next(ctx, req)
				}
			})))
	}
	ag.Close()
	keep(rpcAs(apiKey).GetConfig(ctxT(t), &smcpv1.GetConfigRequest{OfficeId: "office-1", Computer: "pc"}))
	keep(rpcAs(guess).GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: "office-1", Computer: "pc"}))
	if resp, err := http.Get(gw.URL + "/metrics"); err == nil {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		_ = resp.Body.Close()
		answers = append(answers, b.String())
	}

	all := logs.String() + "\n" + strings.Join(answers, "\n")
	if !strings.Contains(all, "connection refused") || !strings.Contains(all, `"***"`) {
		t.Fatalf("the flow did not run as intended (no refusal logged or nothing redacted):\n%s", all)
	}
	for name, secret := range map[string]string{"API key": apiKey, "guessed key": guess, "env secret": envSecret, "header secret": headSecret} {
		if i := strings.Index(all, secret); i >= 0 {
			t.Errorf("the %s appears in logs or answers: …%s…", name, all[max(0, i-200):min(len(all), i+len(secret)+50)])
		}
	}
}
