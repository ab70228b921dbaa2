package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/nodetest"
)

// The test binary doubles as the smcp command: with SMCP_TEST_MAIN set it
// runs main with the arguments in SMCP_TEST_ARGS (a JSON array), so tests
// can start the real command as a child process. Without SMCP_TEST_ARGS it
// takes its own arguments, as a real binary does: that is how `smcp demo`,
// re-executing itself as `smcp docs ...`, starts the document server when
// the test binary plays smcp. SMCP_TEST_ARGS is dropped before main runs,
// so that it does not reach such grandchildren.
func TestMain(m *testing.M) {
	// `smcp demo` re-executes itself as `smcp docs ...` through its
	// computer, which starts MCP servers with a minimal environment (no
	// SMCP_* variables): a first argument that is not a test flag means the
	// test binary plays smcp.
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-test.") && os.Getenv("SMCP_TEST_MAIN") == "" {
		os.Args[0] = "smcp"
		main()
		os.Exit(0)
	}
	if os.Getenv("SMCP_TEST_MAIN") == "1" {
		args := os.Args[1:]
		if env, ok := os.LookupEnv("SMCP_TEST_ARGS"); ok {
			if err := json.Unmarshal([]byte(env), &args); err != nil {
				panic(err)
			}
			os.Unsetenv("SMCP_TEST_ARGS")
		}
		os.Args = append([]string{"smcp"}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func smcpCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SMCP_TEST_MAIN=1", "SMCP_TEST_ARGS="+string(enc))
	cmd.Stderr = os.Stderr
	return cmd
}

// TestDocsOverStdio runs `smcp docs` as a child process and talks to it with
// a go-sdk client over stdio: catalog, a page as Markdown, a DPE error, and a
// change notification from the watcher.
func TestDocsOverStdio(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# Notes\n\nFirst.\n\n## Two\n\nSecond.\n\n## Three\n\nThird.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	updated := make(chan string, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: smcpCommand(t, "docs", "--root", root, "--host", "org.test.docs", "--debounce", "20ms")},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to smcp docs: %v", err)
	}
	defer cs.Close()

	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Fatalf("capabilities %+v: want resources.subscribe", caps)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "dpe://org.test.docs"})
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Documents []struct {
			DocRef    string `json:"doc_ref"`
			URI       string `json:"uri"`
			PageCount int    `json:"page_count"`
		} `json:"documents"`
		TotalCount int `json:"total_count"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &cat); err != nil || cat.TotalCount != 1 || cat.Documents[0].PageCount != 3 {
		t.Fatalf("catalog %s (%v)", res.Contents[0].Text, err)
	}
	doc := cat.Documents[0].URI

	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc + "/pages/1?format=markdown"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Contents[0].Text; got != "## Two\n\nSecond.\n" || res.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("page 1 as markdown: %q (%s)", got, res.Contents[0].MIMEType)
	}

	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: doc + "/pages/3"})
	var w *jsonrpc.Error
	if !errors.As(err, &w) || w.Code != 4202 {
		t.Fatalf("page 3: %v, want JSON-RPC error 4202", err)
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: doc}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# Notes\n\nRewritten.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != doc {
			t.Errorf("updated %s, want %s", uri, doc)
		}
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated from the child process")
	}
}

func TestDocsFlags(t *testing.T) {
	var bad *usageError
	if err := runDocs(context.Background(), nil); !errors.As(err, &bad) {
		t.Errorf("no --root: %v, want a usage error", err)
	}
	err := runDocs(context.Background(), []string{"--root", t.TempDir(), "--host", ""})
	if err == nil || !strings.Contains(err.Error(), "host") {
		t.Errorf("empty host: %v", err)
	}
	err = runDocs(context.Background(), []string{"--root", filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("missing root: %v", err)
	}
}

// TestDocsOverHTTP serves --http mode on a loopback listener and reads the
// catalog with a streamable HTTP client; cancelling the context stops it.
func TestDocsOverHTTP(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.csv"), []byte("x,y\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := docserver.New(docserver.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, srv, ln) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String()}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "dpe://" + docserver.DefaultHost + "?format=text"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Contents[0].Text, "Documents (1)") {
		t.Errorf("catalog over HTTP: %q", res.Contents[0].Text)
	}
	cs.Close()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serveHTTP: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serveHTTP did not stop after cancel")
	}
}

// TestDocsWithTypeScriptClient drives `smcp docs` (this test binary re-executed
// as the command) from the official TypeScript MCP SDK, a client written
// independently of the Go SDK, from
// testdata/node-client (installed on demand by nodetest).
func TestDocsWithTypeScriptClient(t *testing.T) {
	dir := nodetest.Require(t, filepath.Join("testdata", "node-client"))
	root := t.TempDir()
	md := filepath.Join(root, "guide.md")
	if err := os.WriteFile(md, []byte("# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n## Use\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"docs", "--root", root, "--host", "org.node.docs", "--debounce", "20ms"})
	docsCmd, _ := json.Marshal([]string{os.Args[0]})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"SMCP_TEST_MAIN=1", "SMCP_TEST_ARGS="+string(args),
		"SMCP_DOCS_CMD="+string(docsCmd), "SMCP_DOCS_HOST=org.node.docs", "SMCP_EDIT_FILE="+md)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, stdout)
	}
	var out struct {
		Capabilities struct {
			Resources struct {
				Subscribe   bool `json:"subscribe"`
				ListChanged bool `json:"listChanged"`
			} `json:"resources"`
		} `json:"capabilities"`
		Resources []struct {
			URI         string `json:"uri"`
			MIMEType    string `json:"mimeType"`
			Annotations *struct {
				Audience []string `json:"audience"`
				Priority float64  `json:"priority"`
			} `json:"annotations"`
		} `json:"resources"`
		Templates []string `json:"templates"`
		Catalog   struct {
			Documents []struct {
				DocRef    string `json:"doc_ref"`
				URI       string `json:"uri"`
				PageCount int    `json:"page_count"`
			} `json:"documents"`
			TotalCount int `json:"total_count"`
		} `json:"catalog"`
		Page struct {
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"page"`
		Error struct {
			Code int
			Data map[string]any
		} `json:"error"`
		Invalid struct {
			Code int
			Data map[string]any
		} `json:"invalid"`
		Completion struct {
			Values []string `json:"values"`
		} `json:"completion"`
		Updated string `json:"updated"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("node client output %q: %v", stdout, err)
	}
	if !out.Capabilities.Resources.Subscribe || !out.Capabilities.Resources.ListChanged {
		t.Errorf("capabilities %+v", out.Capabilities)
	}
	if out.Catalog.TotalCount != 1 || out.Catalog.Documents[0].PageCount != 3 {
		t.Fatalf("catalog %+v", out.Catalog)
	}
	doc := out.Catalog.Documents[0]
	var sawDoc, sawStatus bool
	for _, r := range out.Resources {
		sawDoc = sawDoc || (r.URI == doc.URI && r.MIMEType == "application/json")
		sawStatus = sawStatus || (r.URI == "window://org.node.docs/status" && r.Annotations != nil && r.Annotations.Priority > 0 && len(r.Annotations.Audience) == 1)
	}
	if !sawDoc || !sawStatus {
		t.Errorf("resources %+v", out.Resources)
	}
	if len(out.Templates) != 2 || out.Templates[1] != "dpe://org.node.docs/{doc_ref}/pages/{page_index}" {
		t.Errorf("templates %v", out.Templates)
	}
	if out.Page.MIMEType != "text/markdown" || out.Page.Text != "## Install\n\nRun it.\n" {
		t.Errorf("page 1 as markdown: %+v", out.Page)
	}
	if out.Error.Code != 4202 || out.Error.Data["page_count"] != float64(3) {
		t.Errorf("out-of-range page: %+v", out.Error)
	}
	if out.Invalid.Code != 4204 || out.Invalid.Data["rule"] != "limit" {
		t.Errorf("invalid URI: %+v", out.Invalid)
	}
	if strings.Join(out.Completion.Values, ",") != "0,1,2" {
		t.Errorf("completion %v", out.Completion.Values)
	}
	if out.Updated != doc.URI {
		t.Errorf("resources/updated for %q, want %q", out.Updated, doc.URI)
	}
}
