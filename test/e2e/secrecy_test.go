package e2e

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/systest"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestSecretsStayOutOfLogsAndAnswers runs a full flow with every component
// logging at debug level into one buffer: a gateway, a computer whose MCP
// servers carry secrets in their headers and environment (one of them keeps
// crashing, so its restarts are logged), an agent on Socket.IO and one on
// the Connect API, and callers presenting wrong keys on both front ends.
// Neither the API keys, nor the wrong keys, nor the secrets may appear in a
// log line, an ack, an answer or an error.
func TestSecretsStayOutOfLogsAndAnswers(t *testing.T) {
	const (
		wrongKey     = "wrong-key-7c1f9e2d"
		secretHeader = "header-secret-5b8a1c"
		secretEnv    = "env-secret-93d0f4"
	)
	logs := &testwait.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	root := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "plan.md"), "# Launch plan\n\nWe launch in March.\n")
	docsURL := systest.Docs(t, ctx, docserver.Options{Root: root, Host: host, Logger: log}, false)
	keys, err := core.NewKeyRing(core.Key{ID: "e2e", Key: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Logger: log})
	withHeader := systest.Server(t, "docs", map[string]any{
		"url": docsURL, "headers": map[string]any{"Authorization": "Bearer " + secretHeader},
	})
	crashing := systest.Server(t, "crashing", map[string]any{
		"command": "sh", "args": []any{"-c", "exit 3"}, "env": map[string]any{"DB_PASSWORD": secretEnv},
	})
	systest.Computer(t, ctx, pcName, map[string]*config.Server{"docs": withHeader, "crashing": crashing},
		computer.Gateway{URL: gw.URL, Office: office, APIKey: apiKey, Dial: sioclient.Options{Logger: log}}, log)

	// Refused callers on both front ends.
	if _, err := agent.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: wrongKey, Logger: log}, "intruder"); err == nil {
		t.Fatal("a wrong key was accepted on Socket.IO")
	} else if strings.Contains(err.Error(), wrongKey) {
		t.Errorf("the Socket.IO refusal repeats the key: %v", err)
	}
	intruder := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL,
		connect.WithInterceptors(identity{rpc.DefaultAPIKeyHeader: wrongKey}))
	if _, err := intruder.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: office}); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("wrong key on the Connect API: %v", err)
	} else if strings.Contains(err.Error(), wrongKey) {
		t.Errorf("the Connect refusal repeats the key: %v", err)
	}

	// An agent that uses the computer, every answer kept.
	ag, err := agent.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: apiKey, Logger: log, Version: smcp.V02.Full()}, agentName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	if err := ag.Join(ctx, office); err != nil {
		t.Fatal(err)
	}
	var answers []string
	cfg, err := ag.GetConfig(ctx, pcName)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetServers()["docs"].GetStreamable() == nil || cfg.GetServers()["crashing"].GetStdio() == nil {
		t.Fatalf("get_config lacks the servers: %v", cfg)
	}
	toolsRet, err := ag.GetTools(ctx, pcName)
	if err != nil {
		t.Fatal(err)
	}
	params, err := structpb.NewStruct(map[string]any{"query": "launch"})
	if err != nil {
		t.Fatal(err)
	}
	result, err := ag.CallTool(ctx, &smcpv1.ToolCallReq{Agent: agentName, ReqId: agent.NewReqID(), Computer: pcName,
		ToolName: "search_documents", Params: params, Timeout: 10})
	if err != nil {
		t.Fatal(err)
	}
	if result.GetIsError() {
		t.Fatalf("search_documents failed: %v", result)
	}
	rpcAgent := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL,
		connect.WithInterceptors(identity{rpc.DefaultAPIKeyHeader: apiKey, rpc.AgentHeader: agentName}))
	rpcCfg, err := rpcAgent.GetConfig(ctx, &smcpv1.GetConfigRequest{OfficeId: office, Computer: pcName})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []proto.Message{cfg, toolsRet, result, rpcCfg} {
		b, err := smcp.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, string(b))
	}

	text := logs.String()
	if !strings.Contains(text, `"connected"`) || !strings.Contains(text, "crashing") {
		t.Fatalf("the flow did not log what it should have (the check below would prove nothing):\n%.2000s", text)
	}
	for name, secret := range map[string]string{"API key": apiKey, "wrong key": wrongKey, "header secret": secretHeader, "env secret": secretEnv} {
		if i := strings.Index(text, secret); i >= 0 {
			t.Errorf("the %s appears in the logs: …%s…", name, text[max(0, i-200):min(len(text), i+100)])
		}
		for _, a := range answers {
			if strings.Contains(a, secret) {
				t.Errorf("the %s appears in an answer: %s", name, a)
			}
		}
	}
}
