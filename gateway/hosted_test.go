package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/agent"
	smcpcomputer "github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// hostedConfig writes the MCP configuration of a hosted computer:
// @modelcontextprotocol/server-everything over stdio, and the go-sdk
// fixture over streamable HTTP with its add tool listed as sum.
func hostedConfig(t *testing.T) string {
	t.Helper()
	entry := nodetest.EverythingServer(t, filepath.Join("..", "test", "npm-mcp"))
	web := httptest.NewServer(testmcp.New("web", testmcp.Options{}).HTTPHandler())
	t.Cleanup(web.Close)
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []any{entry, "stdio"}},
		"web":        map[string]any{"url": web.URL, "tool_meta": map[string]any{"add": map[string]any{"alias": "sum"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A computer the gateway hosts (no Socket.IO connection of its own), with
// a stdio server from npm and a streamable HTTP one, is called by agents
// on Socket.IO, Connect, gRPC and MCP as an external computer is, in the
// 0.2 and 0.4 profiles, and is listed as a hosted connection.
func TestHostedComputerOnEveryFrontEnd(t *testing.T) {
	for _, protocol := range []string{smcpcomputer.Protocol02, smcpcomputer.Protocol04} {
		t.Run(protocol, func(t *testing.T) { testHostedComputer(t, protocol) })
	}
}

func testHostedComputer(t *testing.T, protocol string) {
	r := startGateway(t, gateway.Config{Logger: testLogger, Computers: []hosted.Spec{{
		Name: govPC, Office: govOffice, Config: hostedConfig(t), Protocol: protocol, Confirm: tools.ConfirmAuto,
	}}})
	e := &govEnv{g: r, version: protocol}
	// A tool of each server: server-everything's get-sum (stdio) and the
	// fixture's add listed as sum (streamable HTTP); from 0.3 each under
	// its server's bundle id.
	callable := []string{"get-sum", "sum"}
	if protocol != smcpcomputer.Protocol02 {
		callable = []string{"everything__get-sum", "web__sum", "everything__echo"}
	}
	full := rpcClient(t, r.URL, false, connecttest.Headers(rpc.AgentHeader, "bot"))
	testwait.Until(t, "the hosted computer's tools", func() bool {
		res, err := full.GetTools(ctxT(t), &smcpv1.GetToolsRequest{OfficeId: govOffice, Computer: govPC})
		if err != nil {
			return false
		}
		var names []string
		for _, tool := range res.GetTools() {
			names = append(names, tool.GetName())
		}
		return !slices.ContainsFunc(callable, func(tool string) bool { return !slices.Contains(names, tool) })
	})
	hostedConn := slices.IndexFunc(r.Hub.Connections(), func(c core.Connection) bool {
		return c.Kind == core.ConnComputer && c.Front == core.FrontHosted && c.Name == govPC && c.Office == govOffice &&
			c.Protocol == protocol
	})
	if hostedConn < 0 {
		t.Fatalf("no hosted computer among the connections: %+v", r.Hub.Connections())
	}
	check := func(t *testing.T, fe frontEnd, prefix string) {
		t.Helper()
		listed := fe.list(t)
		for _, tool := range callable {
			if !slices.Contains(listed, prefix+tool) {
				t.Fatalf("%s not listed: %v", prefix+tool, listed)
			}
			if refused := fe.call(t, prefix+tool); refused != "" {
				t.Fatalf("%s refused: %s", prefix+tool, refused)
			}
		}
	}
	// One agent seat per office: each front end in turn.
	t.Run("socket.io", func(t *testing.T) { check(t, e.sioFront(t, ""), "") })
	t.Run("connect", func(t *testing.T) { check(t, e.rpcFront(t, false, rpc.DefaultAPIKeyHeader, ""), "") })
	t.Run("grpc", func(t *testing.T) { check(t, e.rpcFront(t, true, rpc.DefaultAPIKeyHeader, ""), "") })
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("mcp "+version, func(t *testing.T) { check(t, e.mcpFront(t, version, "x-api-key", ""), govPC+"__") })
	}
}

// A hosted computer behaves as an external one beyond tools: its Desktop
// (window:// resources), its Finder (dpe:// documents), its skill folder, an upload to its landing root
// (put_blob in chunks), update_desktop when a window
// appears, and an agent's tool_call_cancel stopping its call at the MCP
// server. Its name stays its own while it runs: an external computer of
// the same name is refused.
func TestHostedComputerDesktopFinderSkillsUploadCancel(t *testing.T) {
	web := testmcp.New("web", testmcp.Options{})
	web.SetWindow(testmcp.Window{URI: "window://web/status", Text: "all good"})
	web.SetDocs("h", testmcp.Doc{DocRef: "d1", Title: "Doc one", Pages: []testmcp.Page{{Title: "p1"}}})
	srv := httptest.NewServer(web.HTTPHandler())
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	skills := filepath.Join(dir, "skills", "report")
	if err := os.MkdirAll(skills, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "SKILL.md"), []byte("---\nname: report\ndescription: Write reports.\n---\n# Report\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"web": map[string]any{"url": srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	landing := filepath.Join(dir, "landing")
	if err := os.Mkdir(landing, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := startGateway(t, gateway.Config{Logger: testLogger, Computers: []hosted.Spec{{
		Name: "pc", Office: "o", Config: cfg, Skills: []string{filepath.Join(dir, "skills")}, Confirm: tools.ConfirmAuto,
		LandingRoot: landing,
	}}})
	ag, err := agent.Dial(ctxT(t), sioclient.Options{URL: r.URL, Logger: testLogger, Version: smcp.V04.Full()}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	updates := make(chan string, 64)
	ag.OnNotification(func(n agent.Notification) {
		select {
		case updates <- n.Event:
		default:
		}
	})
	if err := ag.Join(ctxT(t), "o"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, "the hosted computer's window", func() bool {
		d, err := ag.GetDesktop(ctxT(t), &smcpv1.GetDeskTopReq{Computer: "pc", ReqId: agent.NewReqID()})
		return err == nil && len(d.GetDesktops()) == 1 && strings.Contains(d.GetDesktops()[0], "all good")
	})
	testwait.Until(t, "the hosted computer's document", func() bool {
		fin, err := ag.GetFinder(ctxT(t), &smcpv1.GetFinderReq{Computer: "pc", ReqId: agent.NewReqID()})
		return err == nil && fin.GetTotalCount() == 1 && fin.GetDocuments()[0].GetUri() == "dpe://h/d1"
	})
	sk, err := ag.GetSkills(ctxT(t), "pc")
	if err != nil {
		t.Fatal(err)
	}
	if len(sk.GetSkills()) != 1 || sk.GetSkills()[0].GetName() != "report" {
		t.Fatalf("skills: %v", sk)
	}

	// An upload of several chunks lands in the landing root.
	upload := bytes.Repeat([]byte("hosted upload\n"), 40<<10)
	digest := sha256.Sum256(upload)
	put, err := ag.PutBlob(ctxT(t), "pc", bytes.NewReader(upload), int64(len(upload)), hex.EncodeToString(digest[:]), "up.txt")
	if err != nil {
		t.Fatal(err)
	}
	// landing_path is relative to the landing root.
	if landed, err := os.ReadFile(filepath.Join(landing, put.GetLandingPath())); err != nil || !bytes.Equal(landed, upload) {
		t.Fatalf("upload landed at %q (%v), want its bytes in %s", put.GetLandingPath(), err, landing)
	}

	web.SetWindow(testmcp.Window{URI: "window://web/second", Text: "more"})
	testwait.Until(t, "notify:update_desktop", func() bool {
		for {
			select {
			case ev := <-updates:
				if ev == smcp.NotifyUpdateDesktop {
					return true
				}
			default:
				return false
			}
		}
	})

	params, err := structpb.NewStruct(map[string]any{"tag": "cancel-me", "seconds": 60})
	if err != nil {
		t.Fatal(err)
	}
	reqID := agent.NewReqID()
	answered := make(chan error, 1)
	go func() {
		_, err := ag.CallTool(context.Background(), &smcpv1.ToolCallReq{Agent: "bot", ReqId: reqID, Computer: "pc",
			ToolName: "web__slow", Params: params, Timeout: 120})
		answered <- err
	}()
	recv(t, web.SlowStarted, "the slow call at the MCP server")
	if err := ag.CancelToolCall(reqID); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, web.SlowCancelled, "the cancellation at the MCP server"); got != "cancel-me" {
		t.Fatalf("cancelled %q", got)
	}
	recv(t, answered, "the cancelled call's answer")

	other, err := sioclient.Dial(ctxT(t), sioclient.Options{URL: r.URL, Logger: testLogger, Version: smcp.V04.Full()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	if err := other.JoinOffice(ctxT(t), smcp.RoleComputer, "pc", "o"); err == nil || !strings.Contains(err.Error(), "already in office") {
		t.Fatalf("an external computer named as the hosted one: %v", err)
	}
}

// recv is the next value of ch, within testwait.Timeout.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testwait.Timeout):
		var zero T
		t.Fatalf("timed out waiting for %s", what)
		return zero
	}
}
