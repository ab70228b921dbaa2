package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/smcpgw/smcp-gateway/docserver"
)

// The test binary doubles as the smcp command: with SMCP_TEST_MAIN set it
// runs main with the arguments in SMCP_TEST_ARGS (a JSON array), so tests
// can start the real command as a child process.
func TestMain(m *testing.M) {
	if os.Getenv("SMCP_TEST_MAIN") == "1" {
		var args []string
		if err := json.Unmarshal([]byte(os.Getenv("SMCP_TEST_ARGS")), &args); err != nil {
			panic(err)
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
	if err := runDocs(context.Background(), nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("no --root: %v, want usage", err)
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
