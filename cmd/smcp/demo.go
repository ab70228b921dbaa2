package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/console"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/rpc"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
)

// The demo's fixed names. The key is public: it is printed, and it is in the
// README; the gateway stays on loopback unless --listen says otherwise.
const (
	demoAPIKey   = "smcp-demo-key"
	demoOffice   = "demo"
	demoComputer = "demo-pc"
	// demoAgent is the agent every demo caller acts as: an office holds one
	// agent, and RPC calls and a Socket.IO agent of the same name may share it.
	demoAgent = "demo-agent"
	demoHost  = "com.example.docs"
	// demoSearch is the document server's search tool as the office
	// exposes it: a 0.4 computer names each tool <bundle_id>__<tool>, the
	// bundle id being its server's name ("docs").
	demoSearch = "docs__search_documents"
)

// runDemo runs a gateway, a computer and the document server (a child
// process over stdio) in one process, waits until the documents are visible
// through the gateway, and prints what to try. Ctrl-C stops it all: the
// computer leaves its office and stops the document server, then the gateway
// drains.
func runDemo(ctx context.Context, args []string) error {
	fs := newFlags("demo", "usage: smcp demo [--root examples/docs] [--listen 127.0.0.1:8080]\n\n"+
		"Runs a gateway, a computer and the document server over --root in one process, and prints\n"+
		"commands to try. Ctrl-C stops it all.")
	listen := fs.String("listen", "127.0.0.1:8080", "address of the gateway (Socket.IO and the Connect/gRPC API)")
	root := fs.String("root", "examples/docs", "folder the document server serves")
	apiKeyArg, apiKeyFile := fs.addAPIKey("API key of the gateway (default: the public demo key " + demoAPIKey + ")")
	readyTimeout := fs.Duration("ready-timeout", time.Minute, "how long to wait for the computer to show its documents")
	fs.addLogFlags("warn")
	if err := fs.parse(args); err != nil {
		return err
	}
	log, err := fs.logger()
	if err != nil {
		return err
	}
	// Before the document server starts, so that it joins the demo's group.
	defer takeForeground(log)()

	absRoot, err := filepath.Abs(*root)
	if err != nil {
		return fmt.Errorf("--root: %w", err)
	}
	if st, err := os.Stat(absRoot); err != nil {
		return fmt.Errorf("--root: %w (run from the repository root, or pass --root)", err)
	} else if !st.IsDir() {
		return fmt.Errorf("--root %s is not a folder", absRoot)
	}
	if !hasDocuments(absRoot) {
		return fmt.Errorf("--root %s holds no file the document server reads (%s)", absRoot, strings.Join(formats.FileTypes(), ", "))
	}
	apiKey, err := fs.apiKey(*apiKeyArg, *apiKeyFile, log)
	if err != nil {
		return err
	}
	key := demoKey{value: apiKey, source: "--api-key"}
	if fs.fromEnv["api-key"] != "" {
		// Printed commands then name the variable instead of the key.
		key.source = "$SMCP_API_KEY"
	}
	if key.value == "" {
		key = demoKey{value: demoAPIKey, source: "demo"}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("locating the smcp binary to start the document server: %w", err)
	}

	auth, err := core.NewKeyRing(core.Key{Key: key.value, ID: "demo"})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w (is another demo running? choose another address with --listen)", err)
	}
	// Metrics on: the web console charts them.
	g, err := gateway.New(gateway.Config{Auth: auth, RPC: rpc.Options{DefaultAgent: demoAgent}, Metrics: true, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	gw := startTask(func(ctx context.Context) error { return g.Serve(ctx, ln) })
	baseURL := "http://" + ln.Addr().String()

	docs, err := config.NewServer("docs", map[string]any{
		"command": exe,
		"args":    []any{"docs", "--root", absRoot, "--host", demoHost},
	})
	if err != nil {
		return errors.Join(err, gw.stop())
	}
	comp, err := computer.New(computer.Options{
		Name:     demoComputer,
		Config:   &config.Config{Servers: map[string]*config.Server{"docs": docs}},
		Confirm:  tools.ConfirmAuto,
		Logger:   log,
		Protocol: computer.Protocol04,
	})
	if err != nil {
		return errors.Join(err, gw.stop())
	}
	pc := startTask(func(ctx context.Context) error {
		return comp.Run(ctx, computer.Gateway{URL: baseURL, Office: demoOffice, APIKey: key.value})
	})
	// The computer first, so that it leaves its office while the gateway
	// can still tell the office.
	stop := func() error { return errors.Join(pc.stop(), gw.stop()) }

	client := smcpv1connect.NewAgentServiceClient(http.DefaultClient, baseURL,
		connect.WithInterceptors(apiKeyInterceptor(key.value)))
	readyCtx, cancel := context.WithTimeout(ctx, *readyTimeout)
	t, err := prepareTour(readyCtx, client, pc, gw)
	cancel()
	if ctx.Err() != nil { // Ctrl-C while starting
		return stop()
	}
	if err != nil {
		return errors.Join(err, stop())
	}
	t.addr, t.key, t.root = cmdAddr(ln.Addr().(*net.TCPAddr)), key, absRoot
	t.smcp = selfCommand()
	t.write(os.Stdout)
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() && key.source == "demo" {
		fmt.Fprintf(os.Stdout, "\nWARNING: the gateway listens on %s, beyond this machine, with the public demo key: anyone who can reach it can read these documents. Set --api-key.\n", ln.Addr())
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "smcp demo: stopping")
	case <-pc.done:
		return errors.Join(fmt.Errorf("the computer stopped: %w", pc.err), gw.stop())
	case <-gw.done:
		return errors.Join(fmt.Errorf("the gateway stopped: %w", gw.err), pc.stop())
	}
	if err := stop(); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "smcp demo: stopped")
	return nil
}

type demoKey struct {
	value  string
	source string // "--api-key", "$SMCP_API_KEY" or "demo"
}

// shell is how the printed commands spell the key: a key from the
// environment stays there, instead of being printed.
func (k demoKey) shell() string {
	if k.source == "$SMCP_API_KEY" {
		return "$SMCP_API_KEY"
	}
	return k.value
}

// hasDocuments reports whether a supported file lies under root (hidden
// folders aside, as the document server skips them).
func hasDocuments(root string) bool {
	found := false
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case p != root && strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return filepath.SkipDir
			}
		case !d.IsDir() && formats.Supported(d.Name()):
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// task is a goroutine with its own cancel: stop cancels it and waits.
type task struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // valid after done is closed
}

// startTask runs fn on a context of its own: Ctrl-C does not reach the
// parts directly, so that they stop in order.
func startTask(fn func(context.Context) error) *task {
	ctx, cancel := context.WithCancel(context.Background())
	t := &task{cancel: cancel, done: make(chan struct{})}
	go func() {
		t.err = fn(ctx)
		close(t.done)
	}()
	return t
}

func (t *task) stop() error {
	t.cancel()
	<-t.done
	if errors.Is(t.err, context.Canceled) {
		return nil
	}
	return t.err
}

func apiKeyInterceptor(key string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set(rpc.DefaultAPIKeyHeader, key)
			return next(ctx, req)
		}
	})
}

// cmdAddr is the address the printed commands dial: a wildcard listen
// address is reached through loopback.
func cmdAddr(a *net.TCPAddr) string {
	ip := a.IP
	switch {
	case ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// tour is what the banner points at: real documents of this run.
type tour struct {
	addr, root string
	// smcp is how the printed commands run this program (selfCommand).
	smcp       string
	key        demoKey
	documents  int
	doc        *smcpv1.DPEDocumentSummary
	page       int32
	pageTitle  string
	elementURI string
	query      string
}

// prepareTour waits until the computer has joined and its Finder lists
// documents, then picks a document, a page, an element and a search word
// for the printed commands.
func prepareTour(ctx context.Context, client smcpv1connect.AgentServiceClient, pc, gw *task) (*tour, error) {
	var finder *smcpv1.GetFinderResponse
	var lastErr error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		res, err := client.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: demoOffice, Computer: demoComputer, Limit: new(int32(100))})
		if err == nil && res.GetTotalCount() > 0 {
			finder = res
			break
		}
		if err == nil {
			err = errors.New("the Finder lists no documents yet")
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the computer did not show documents in time (last answer: %v)", lastErr)
		case <-pc.done:
			return nil, fmt.Errorf("the computer stopped before it was ready: %w", pc.err)
		case <-gw.done:
			return nil, fmt.Errorf("the gateway stopped: %w", gw.err)
		case <-tick.C:
		}
	}

	t := &tour{documents: int(finder.GetTotalCount())}
	// The richest Markdown document shows the most (sections, a table);
	// otherwise the document with the most pages.
	docs := slices.Clone(finder.GetDocuments())
	slices.SortStableFunc(docs, func(a, b *smcpv1.DPEDocumentSummary) int {
		if am, bm := a.GetFileType() == "md", b.GetFileType() == "md"; am != bm {
			if am {
				return -1
			}
			return 1
		}
		return int(b.GetPageCount() - a.GetPageCount())
	})
	t.doc = docs[0]
	t.page = min(1, t.doc.GetPageCount()-1)

	res, err := client.ReadResource(ctx, &smcpv1.ReadResourceRequest{
		OfficeId: demoOffice, Computer: demoComputer,
		Uri: fmt.Sprintf("%s/pages/%d", t.doc.GetUri(), t.page),
	})
	if err != nil {
		return nil, fmt.Errorf("reading a page of %s: %w", t.doc.GetUri(), err)
	}
	var page struct {
		Title    string `json:"title"`
		Elements []struct {
			ID       string `json:"element_id"`
			Category string `json:"category"`
		} `json:"elements"`
	}
	if c := res.GetContents(); len(c) == 0 || json.Unmarshal([]byte(c[0].GetText()), &page) != nil || len(page.Elements) == 0 {
		return nil, fmt.Errorf("page %d of %s has no elements to show", t.page, t.doc.GetUri())
	}
	t.pageTitle = page.Title
	el := page.Elements[0]
	for _, e := range page.Elements {
		if e.Category == "table" {
			el = e
			break
		}
	}
	t.elementURI = t.doc.GetUri() + "/elements/" + el.ID
	t.query = searchWord(page.Title, t.doc.GetTitle())
	return t, nil
}

// searchWord picks a word of the first title that has one of four letters
// or more: it is certain to be found.
func searchWord(titles ...string) string {
	for _, title := range titles {
		for _, w := range strings.FieldsFunc(title, func(r rune) bool { return !unicode.IsLetter(r) }) {
			if len([]rune(w)) >= 4 {
				return strings.ToLower(w)
			}
		}
	}
	return "document"
}

// rpcBody is a request of the tour's RPCs, fields in a readable order.
type rpcBody struct {
	OfficeID string         `json:"office_id"`
	Computer string         `json:"computer,omitempty"`
	URI      string         `json:"uri,omitempty"`
	ToolName string         `json:"tool_name,omitempty"`
	Params   map[string]any `json:"params,omitempty"`
}

// bufCurl is the buf curl command line of one RPC.
func (t *tour) bufCurl(method string, body rpcBody) string {
	data, err := json.Marshal(body)
	if err != nil {
		panic(err) // strings only
	}
	quote := "'"
	if t.key.source == "$SMCP_API_KEY" {
		quote = `"` // let the shell expand the variable
	}
	return fmt.Sprintf("tools/buf curl --protocol grpc --http2-prior-knowledge -H %sx-api-key: %s%s -d '%s' http://%s/smcp.v1.AgentService/%s",
		quote, t.key.shell(), quote, data, t.addr, method)
}

func (t *tour) read(uri string) string {
	return t.bufCurl("ReadResource", rpcBody{OfficeID: demoOffice, Computer: demoComputer, URI: uri})
}

func (t *tour) write(w io.Writer) {
	pc := rpcBody{OfficeID: demoOffice, Computer: demoComputer}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p("smcp demo is ready.")
	p("")
	p("  gateway   http://%s  (Socket.IO namespace /smcp at path %s; Connect, gRPC and gRPC-Web API)", t.addr, sio.DefaultPath)
	switch t.key.source {
	case "demo":
		p("  API key   %s  (the public demo key; the gateway listens on loopback only unless --listen says otherwise)", t.key.value)
	default:
		p("  API key   from %s", t.key.source)
	}
	p("  console   http://%s%s  (the web console: sign in with the API key)", t.addr, console.Path)
	p("  office    %s", demoOffice)
	p("  computer  %s, hosting the document server over %s (%d documents at dpe://%s)", demoComputer, t.root, t.documents, demoHost)
	p("  agent     %s: RPC calls act as this agent; an office holds one agent, and Socket.IO clients", demoAgent)
	p("            that join under the same name share it with them")
	p("")
	p("Try it from the repository root (tools/buf installs buf from npm on first use, saying so: seconds, once):")
	p("")
	p("# The Finder: the documents of the computer")
	p("%s", t.bufCurl("GetFinder", pc))
	p("")
	p("# Level 1: %q and its pages", t.doc.GetTitle())
	p("%s", t.read(t.doc.GetUri()+"?depth=pages"))
	p("")
	p("# Level 2: page %d (%q) as Markdown", t.page, t.pageTitle)
	p("%s", t.read(fmt.Sprintf("%s/pages/%d?format=markdown", t.doc.GetUri(), t.page)))
	p("")
	p("# Level 3: one element with all its content")
	p("%s", t.read(t.elementURI))
	p("")
	p("# Search every document")
	p("%s", t.bufCurl("CallTool", rpcBody{OfficeID: demoOffice, Computer: demoComputer, ToolName: demoSearch,
		Params: map[string]any{"query": t.query}}))
	p("")
	p("# Watch the office (leave it running, then edit a file under %s)", t.root)
	p("%s", t.bufCurl("WatchOffice", rpcBody{OfficeID: demoOffice}))
	p("")
	p("# The same from the command-line agent (smcp agent -h for more; --json for scripts), its key in")
	p("# $SMCP_API_KEY (or --api-key-file): a command line is visible to every user of the machine")
	if t.key.source != "$SMCP_API_KEY" {
		p("export SMCP_API_KEY=%s", t.key.value)
	}
	agentCmd := fmt.Sprintf("%s agent --url http://%s --office %s --name %s", t.smcp, t.addr, demoOffice, demoAgent)
	p("%s finder", agentCmd)
	p("%s read '%s?depth=pages'", agentCmd, t.doc.GetUri())
	p("%s call %s '{\"query\":%q}'", agentCmd, demoSearch, t.query)
	p("%s watch", agentCmd)
	p("")
	p("# Any MCP client (Cursor, VS Code, Claude Code; Claude Desktop through npx mcp-remote): the office as one MCP server")
	p(`{"mcpServers": {"smcp-%s": {"url": "http://%s/mcp/%s", "headers": {"x-api-key": "%s"}}}}`, demoOffice, t.addr, demoOffice, t.key.shell())
	p("")
	p("# A Socket.IO agent in Node.js: npm install socket.io-client@4, save as agent.mjs, node agent.mjs")
	b.WriteString(t.nodeAgent())
	p("")
	p("# The same with the A2C-SMCP Python SDK: pip install a2c-smcp, save as agent.py, python agent.py")
	b.WriteString(t.pythonAgent())
	p("")
	p("Ctrl-C stops the demo.")
	_, _ = io.WriteString(w, b.String())
}

// nodeAgent is a Socket.IO agent with the reference JavaScript client.
func (t *tour) nodeAgent() string {
	key := fmt.Sprintf("%q", t.key.value)
	if t.key.source == "$SMCP_API_KEY" {
		key = "process.env.SMCP_API_KEY"
	}
	return fmt.Sprintf(`import { io } from "socket.io-client";
const socket = io("http://%[1]s/smcp", {
  transports: ["websocket"], auth: { api_key: %[2]s }, query: { a2c_version: "0.4.0" },
});
socket.on("connect_error", (err) => { console.error("refused:", err.message); process.exit(1); });
socket.on("connect", () => {
  socket.emit("server:join_office", { role: "agent", name: %[3]q, office_id: %[4]q }, async (ok, reason) => {
    if (!ok) { console.error("join refused:", reason); process.exit(1); }
    const finder = await socket.emitWithAck("client:get_finder", { agent: %[3]q, req_id: "1", computer: %[5]q });
    for (const d of finder.documents) console.log(d.file_type, d.title, d.uri);
    const res = await socket.emitWithAck("client:tool_call", { agent: %[3]q, req_id: "2", computer: %[5]q,
      tool_name: %[7]q, params: { query: %[6]q }, timeout: 30 });
    console.log(res.content[0].text);
    socket.close();
  });
});
`, t.addr, key, demoAgent, demoOffice, demoComputer, t.query, demoSearch)
}

// pythonAgent is the same agent with the A2C-SMCP Python SDK.
func (t *tour) pythonAgent() string {
	key := fmt.Sprintf("%q", t.key.value)
	if t.key.source == "$SMCP_API_KEY" {
		key = `os.environ["SMCP_API_KEY"]`
	}
	return fmt.Sprintf(`import asyncio, os
from a2c_smcp.agent import AsyncSMCPAgentClient, DefaultAgentAuthProvider

async def main():
    auth = DefaultAgentAuthProvider(agent_id=%[3]q, office_id=%[4]q, api_key=%[2]s)
    agent = AsyncSMCPAgentClient(auth_provider=auth)
    await agent.connect_to_server("http://%[1]s", socketio_path="/socket.io")
    await agent.join_office(office_id=%[4]q, agent_name=%[3]q)
    tools = await agent.get_tools_from_computer(%[5]q)
    print([t["name"] for t in tools["tools"]])
    result = await agent.emit_tool_call(%[5]q, %[7]q, {"query": %[6]q}, timeout=30)
    print(result.content[0].text)
    await agent.disconnect()

asyncio.run(main())
`, t.addr, key, demoAgent, demoOffice, demoComputer, t.query, demoSearch)
}

// selfCommand is how a person in the current directory runs this program
// again: bin/smcp when it is the binary `make build` made there, else
// "go run ./cmd/smcp" (a `go run` binary is gone when it exits; an installed
// one may not be the checkout's).
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "go run ./cmd/smcp"
	}
	return selfCommandFor(exe, ".")
}

func selfCommandFor(exe, dir string) string {
	built := filepath.Join(dir, "bin", "smcp")
	a, errA := os.Stat(exe)
	b, errB := os.Stat(built)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		return "bin/smcp"
	}
	return "go run ./cmd/smcp"
}
