package rpc_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

type textIn struct {
	Text string `json:"text"`
}

// prefixTool is an MCP tool answering prefix + text.
func prefixTool(prefix string) mcp.ToolHandlerFor[textIn, any] {
	return func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: prefix + in.Text}}}, nil, nil
	}
}

// TestRealComputer drives the computer runtime (package computer) hosting a
// go-sdk MCP server over streamable HTTP, through the gateway, over gRPC: the
// whole chain with nothing faked. A tool added on the MCP server reaches a
// WatchOffice stream as notify:update_tool_list.
func TestRealComputer(t *testing.T) {
	g := startGateway(t)
	ctx := testContext(t)

	srv := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1.0.0"}, &mcp.ServerOptions{HasTools: true})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo the text"}, prefixTool("mcp: "))
	mcpHTTP := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(mcpHTTP.Close)

	server, err := config.NewServer("tools", map[string]any{"url": mcpHTTP.URL})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	comp, err := computer.New(computer.Options{
		Name: "pc-real", Config: &config.Config{Servers: map[string]*config.Server{"tools": server}},
		Logger: quiet, Confirm: tools.ConfirmAuto,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(comp.Close)
	if err := comp.Start(); err != nil {
		t.Fatal(err)
	}
	if err := comp.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	link, err := comp.Connect(ctx, computer.Gateway{URL: g.URL, Office: officeA, APIKey: keyComputer,
		Dial: sioclient.Options{NoReconnect: true, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)

	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)
	w := openWatch(t, ctx, cl, officeA)
	toolNames := func() []string {
		res, err := cl.GetTools(ctx, &smcpv1.GetToolsRequest{OfficeId: officeA, Computer: "pc-real"})
		if err != nil {
			t.Fatalf("GetTools: %v", err)
		}
		var names []string
		for _, tl := range res.GetTools() {
			names = append(names, tl.GetName())
		}
		slices.Sort(names)
		return names
	}
	call := func(tool, text string) string {
		params, _ := structpb.NewStruct(map[string]any{"text": text})
		res, err := cl.CallTool(ctx, &smcpv1.CallToolRequest{OfficeId: officeA, Computer: "pc-real", ToolName: tool, Params: params, Timeout: 10})
		if err != nil {
			t.Fatalf("CallTool %s: %v", tool, err)
		}
		if res.GetResult().GetIsError() {
			t.Fatalf("CallTool %s: %v", tool, res.GetResult())
		}
		return res.GetResult().GetContent()[0].GetFields()["text"].GetStringValue()
	}

	if got := toolNames(); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("tools %v", got)
	}
	if got := call("echo", "hi"); got != "mcp: hi" {
		t.Fatalf("echo: %q", got)
	}
	cfg, err := cl.GetConfig(ctx, &smcpv1.GetConfigRequest{OfficeId: officeA, Computer: "pc-real"})
	if err != nil {
		t.Fatalf("GetConfig: %v", err)
	}
	if s := cfg.GetServers()["tools"]; s.GetStreamable().GetUrl() != mcpHTTP.URL {
		t.Fatalf("GetConfig: %v", cfg)
	}
	// No server here serves windows or documents: empty answers, not errors.
	desk, err := cl.GetDesktop(ctx, &smcpv1.GetDesktopRequest{OfficeId: officeA, Computer: "pc-real"})
	if err != nil || len(desk.GetDesktops()) != 0 {
		t.Fatalf("GetDesktop: %v %v", desk, err)
	}
	finder, err := cl.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: officeA, Computer: "pc-real"})
	if err != nil || finder.GetTotalCount() != 0 {
		t.Fatalf("GetFinder: %v %v", finder, err)
	}

	mcp.AddTool(srv, &mcp.Tool{Name: "shout", Description: "shout the text"}, prefixTool("MCP: "))
	if n := w.next(t, smcp.NotifyUpdateToolList); n.GetUpdateToolList().GetComputer() != "pc-real" {
		t.Fatalf("watch: %v", n)
	}
	if got := toolNames(); !slices.Equal(got, []string{"echo", "shout"}) {
		t.Fatalf("tools after the change %v", got)
	}
	if got := call("shout", "hi"); got != "MCP: hi" {
		t.Fatalf("shout: %q", got)
	}
	w.close(t)
}
