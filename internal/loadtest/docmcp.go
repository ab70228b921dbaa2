package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/servers"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/smcp"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

// NewDocServer is an MCP server listing n dpe://host/ documents, each read
// at level 1 as its summary, with resources.subscribe declared so that a
// computer puts them in its Finder. It also has an echo tool.
func NewDocServer(name, host string, n int) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "bench"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo the text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		u, err := dpeuri.Parse(req.Params.URI)
		if err != nil {
			return nil, err
		}
		var i int
		_, _ = fmt.Sscanf(u.DocRef, "doc-%d", &i)
		b, _ := json.Marshal(map[string]any{
			"doc_ref": u.DocRef, "uri": req.Params.URI, "file_uri": "file:///docs/" + u.DocRef + ".pdf",
			"file_type": []string{"pdf", "xlsx", "md", "csv"}[i%4], "title": fmt.Sprintf("%s report %d", name, i),
			"page_count": 1 + i%9, "keywords": []string{"k" + fmt.Sprint(i%7), "quarter"},
			"summary":       "summary of " + u.DocRef,
			"last_modified": fmt.Sprintf("2026-%02d-%02dT00:00:00Z", 1+i%12, 1+i%28),
		})
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
	}
	for i := range n {
		ref := fmt.Sprintf("doc-%05d", i)
		s.AddResource(&mcp.Resource{URI: dpeuri.Document(host, ref).String(), Name: ref, MIMEType: "application/json"}, read)
	}
	return s
}

// FinderSetup returns an Options.Finder that starts, per office, a real
// computer named "pc" whose MCP servers (servers of docsPer documents each,
// served over streamable HTTP from this process) fill its Finder cache.
func FinderSetup(servers, docsPer int, log *slog.Logger) func(ctx context.Context, url string, offices int) (func(), func() time.Duration, error) {
	return func(ctx context.Context, url string, offices int) (func(), func() time.Duration, error) {
		var stops []func()
		stop := func() {
			for i := len(stops) - 1; i >= 0; i-- {
				stops[i]()
			}
		}
		mux := http.NewServeMux()
		cfgs := map[string]map[string]any{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return stop, nil, err
		}
		for i := range servers {
			name := fmt.Sprintf("docs%02d", i)
			srv := NewDocServer(name, name+".bench", docsPer)
			mux.Handle("/"+name, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
			cfgs[name] = map[string]any{"url": "http://" + ln.Addr().String() + "/" + name}
		}
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		stops = append(stops, func() { _ = hs.Close() })
		var first *computer.Computer
		for o := range offices {
			c, err := NewComputer(cfgs, log)
			if err != nil {
				return stop, nil, err
			}
			stops = append(stops, c.Close)
			if err := c.Start(); err != nil {
				return stop, nil, err
			}
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			err = c.WaitReady(wctx)
			cancel()
			if err != nil {
				return stop, nil, err
			}
			if err := waitFinder(ctx, c, servers*docsPer); err != nil {
				return stop, nil, err
			}
			link, err := c.Connect(ctx, computer.Gateway{URL: url, Office: office(o)})
			if err != nil {
				return stop, nil, err
			}
			stops = append(stops, link.Close)
			if first == nil {
				first = c
			}
		}
		req := map[string]any{"agent": "probe", "req_id": "probe", "computer": "pc", "keywords": []any{"report 9"}, "limit": 20}
		probe := func() time.Duration {
			t0 := time.Now()
			first.Handle(ctx, smcp.EventGetFinder, req)
			return time.Since(t0)
		}
		return stop, probe, nil
	}
}

// NewComputer builds a computer named "pc" over servers (name → config
// object, as in a computer config file).
func NewComputer(servers map[string]map[string]any, log *slog.Logger) (*computer.Computer, error) {
	cfg := &config.Config{Servers: map[string]*config.Server{}}
	for name, obj := range servers {
		s, err := config.NewServer(name, obj)
		if err != nil {
			return nil, err
		}
		cfg.Servers[name] = s
	}
	return computer.New(computer.Options{
		Name: "pc", Config: cfg, Logger: log, Confirm: tools.ConfirmAuto,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
}

// StartupTime starts a computer over servers and returns how long until every
// server has connected (or failed once).
func StartupTime(ctx context.Context, cfgs map[string]map[string]any, log *slog.Logger) (time.Duration, error) {
	c, err := NewComputer(cfgs, log)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	t0 := time.Now()
	if err := c.Start(); err != nil {
		return 0, err
	}
	if err := c.WaitReady(ctx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	for _, s := range c.Servers().Snapshots() {
		if s.State != servers.StateConnected {
			return d, fmt.Errorf("MCP server %s: %s", s.Name, s.State)
		}
	}
	return d, nil
}

// ServeStdioMCP runs a doc server over stdin/stdout after delay (standing in
// for an MCP server's own start-up work), until ctx ends.
func ServeStdioMCP(ctx context.Context, delay time.Duration, docs int) error {
	time.Sleep(delay)
	return NewDocServer("stdio", "stdio.bench", docs).Run(ctx, &mcp.StdioTransport{})
}

// waitFinder waits until c's Finder holds want documents: the cache fills
// in the background once the servers are connected.
func waitFinder(ctx context.Context, c *computer.Computer, want int) error {
	req := map[string]any{"agent": "probe", "req_id": "probe", "computer": "pc", "limit": 1}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ans, _ := c.Handle(ctx, smcp.EventGetFinder, req).(map[string]any)
		got, _ := ans["total_count"].(int)
		if got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loadtest: finder cache holds %d of %d documents after 2 minutes", got, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
