package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func resolved(name string, forbidden []string, meta map[string]config.ToolMeta) *config.Resolved {
	return &config.Resolved{ServerConfig: smcp.ServerConfig{Name: name, Type: config.TypeStdio, ForbiddenTools: forbidden, ToolMeta: meta}}
}

func tools(names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, len(names))
	for i, n := range names {
		out[i] = &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestCatalog(t *testing.T) {
	cat := Build([]ServerTools{
		{Server: "a", Config: resolved("a", []string{"rm"}, map[string]config.ToolMeta{"read": {Alias: ptr("write")}}), Tools: tools("read", "rm", "list")},
		{Server: "b", Config: resolved("b", nil, nil), Tools: tools("write", "stat")},
		{Server: "c", Config: resolved("c", nil, map[string]config.ToolMeta{"list": {Alias: ptr("c_list")}}), Tools: tools("list")},
		{Server: "down", Config: nil, Tools: tools("ghost")},
	}, nil)
	var names []string
	for _, e := range cat.Entries() {
		names = append(names, e.Server+"/"+e.Tool.Name+"="+e.Name)
	}
	if got := strings.Join(names, " "); got != "c/list=c_list a/list=list b/stat=stat" {
		t.Fatalf("entries: %s", got)
	}
	if _, err := cat.Lookup("rm"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("forbidden: %v", err)
	}
	// a's alias "write" collides with b's tool "write".
	_, err := cat.Lookup("write")
	if cl, ok := err.(Clash); !ok || strings.Join(cl.Tools, ",") != "a/read,b/write" {
		t.Fatalf("clash: %v", err)
	}
	if len(cat.Clashes()) != 1 {
		t.Fatalf("clashes: %v", cat.Clashes())
	}
}

func TestToolWireMeta(t *testing.T) {
	cfg := resolved("a", nil, map[string]config.ToolMeta{"t": {AutoApply: ptr(true)}})
	cfg.DefaultToolMeta = &config.ToolMeta{Tags: []string{"x"}, Alias: ptr("from-default")}
	tl := &mcp.Tool{Name: "t", Meta: mcp.Meta{"nested": map[string]any{"k": 1}, "n": 2.0},
		Annotations: &mcp.ToolAnnotations{Title: "T"}}
	cat := Build([]ServerTools{{Server: "a", Config: cfg, Tools: []*mcp.Tool{tl}}}, nil)
	e, err := cat.Lookup("from-default")
	if err != nil {
		t.Fatal(err)
	}
	w := e.Wire()
	if w.Meta["a2c_tool_meta"] != `{"auto_apply":true,"alias":"from-default","tags":["x"]}` {
		t.Fatalf("a2c_tool_meta: %v", w.Meta["a2c_tool_meta"])
	}
	if w.Meta["nested"] != `{"k":1}` || w.Meta["n"] != 2.0 || !strings.Contains(w.Meta["MCP_TOOL_ANNOTATION"].(string), `"title":"T"`) {
		t.Fatalf("meta: %v", w.Meta)
	}
	plain := Build([]ServerTools{{Server: "a", Config: resolved("a", nil, nil), Tools: tools("p")}}, nil)
	if w := plain.Entries()[0].Wire(); len(w.Meta) != 0 || w.ReturnSchema != nil {
		t.Fatalf("tool without meta: %+v", w)
	}
}

type callerFunc func(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)

func (f callerFunc) CallTool(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return f(ctx, server, tool, args)
}

func TestHistoryIsBounded(t *testing.T) {
	var st []ServerTools
	for i := range 5 {
		s := fmt.Sprintf("s%d", i)
		st = append(st, ServerTools{Server: s, Config: resolved(s, nil, map[string]config.ToolMeta{"t": {Alias: ptr("t" + s)}}), Tools: tools("t")})
	}
	cat := Build(st, nil)
	x := NewExecutor(ExecOptions{
		Caller: callerFunc(func(context.Context, string, string, map[string]any) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		}),
		Catalog:     func() *Catalog { return cat },
		Policy:      ConfirmAuto,
		HistorySize: 3,
	})
	for _, s := range []string{"s0", "s1", "s2", "s3", "s4", "s1"} {
		if res := x.Execute(context.Background(), Call{Agent: "a", ReqID: s, Name: "t" + s}); res["isError"] != false {
			t.Fatalf("%s: %v", s, res)
		}
	}
	if got := strings.Join(x.History(), ","); got != "s3,s4,s1" {
		t.Fatalf("history: %s", got)
	}
}

// blockingAsker never answers: only the call's context ends the question.
type blockingAsker struct{}

func (blockingAsker) ConfirmToolCall(ctx context.Context, _ Call, _ *Entry) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

func TestUnansweredConfirmationTimesOut(t *testing.T) {
	cat := Build([]ServerTools{{Server: "s", Config: resolved("s", nil, nil), Tools: tools("t")}}, nil)
	x := NewExecutor(ExecOptions{
		Caller: callerFunc(func(context.Context, string, string, map[string]any) (*mcp.CallToolResult, error) {
			t.Error("an unconfirmed call ran")
			return nil, nil
		}),
		Catalog: func() *Catalog { return cat },
		Asker:   blockingAsker{},
	})
	res := x.Execute(context.Background(), Call{Agent: "a", ReqID: "r", Name: "t", Timeout: time.Millisecond})
	if meta, _ := res["meta"].(map[string]any); res["isError"] != true || meta["a2c_timeout"] != true {
		t.Fatalf("unanswered confirmation: %v", res)
	}
	done := make(chan map[string]any)
	go func() {
		done <- x.Execute(context.Background(), Call{Agent: "a", ReqID: "c", Name: "t", Timeout: time.Minute})
	}()
	testwait.Until(t, "the cancel to find the call awaiting confirmation", func() bool { return x.Cancel("a", "c") })
	if meta, _ := (<-done)["meta"].(map[string]any); meta["a2c_cancelled"] != true {
		t.Fatalf("cancel during confirmation: %v", meta)
	}
}
