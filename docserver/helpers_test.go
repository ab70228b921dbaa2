package docserver

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
)

// testProtocol is pinned: under the SDK's newest default, Subscribe succeeds
// even when a server refuses (DESIGN.md).
const testProtocol = "2025-11-25"

// fixedTime is the mtime given to test files, so that last_modified is stable.
var fixedTime = time.Date(2026, 1, 15, 8, 30, 0, 0, time.UTC)

// waitFor bounds every wait for a notification: a deadline for a broken
// test, not a timing assertion.
const waitFor = 20 * time.Second

// testClient is a real go-sdk client connected to a Server, recording the
// notifications it receives.
type testClient struct {
	t           *testing.T
	cs          *mcp.ClientSession
	updated     chan string
	listChanged chan struct{}
}

// startServer builds a Server over root and connects a client to it through
// in-memory transports. If watch is set, the server also watches root.
func startServer(t *testing.T, root string, opts Options, watch bool) (*Server, *testClient) {
	t.Helper()
	opts.Root = root
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan error, 1)
	t.Cleanup(func() {
		cancel()
		if watch {
			if err := <-watchDone; !errors.Is(err, context.Canceled) {
				t.Errorf("Watch: %v", err)
			}
		}
		srv.Close()
	})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatalf("server connect: %v", err)
	}
	c := connectClient(t, ctx, ct)
	if watch {
		go func() { watchDone <- srv.Watch(ctx) }()
	}
	return srv, c
}

func connectClient(t *testing.T, ctx context.Context, transport mcp.Transport) *testClient {
	t.Helper()
	c := &testClient{t: t, updated: make(chan string, 100), listChanged: make(chan struct{}, 100)}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.updated <- r.Params.URI
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			c.listChanged <- struct{}{}
		},
	})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: testProtocol})
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

func (c *testClient) read(uri string) (*mcp.ReadResourceResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
}

// readText reads uri and returns its only content's text and MIME type.
func (c *testClient) readText(uri string) (string, string) {
	c.t.Helper()
	res, err := c.read(uri)
	if err != nil {
		c.t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		c.t.Fatalf("read %s: %d contents, want 1", uri, len(res.Contents))
	}
	if res.Contents[0].URI != uri {
		c.t.Errorf("read %s: content uri %q", uri, res.Contents[0].URI)
	}
	return res.Contents[0].Text, res.Contents[0].MIMEType
}

func (c *testClient) readJSON(uri string, v any) {
	c.t.Helper()
	text, mime := c.readText(uri)
	if mime != "application/json" {
		c.t.Errorf("read %s: mime %q, want application/json", uri, mime)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		c.t.Fatalf("read %s: decoding %q: %v", uri, text, err)
	}
}

// readError reads uri, expecting a JSON-RPC error with code.
func (c *testClient) readError(uri string, code int64) *jsonrpc.Error {
	c.t.Helper()
	_, err := c.read(uri)
	return wantRPCError(c.t, uri, err, code)
}

func wantRPCError(t *testing.T, what string, err error, code int64) *jsonrpc.Error {
	t.Helper()
	var w *jsonrpc.Error
	if !errors.As(err, &w) {
		t.Fatalf("%s: error %v (%T), want a JSON-RPC error %d", what, err, err, code)
	}
	if w.Code != code {
		t.Fatalf("%s: error code %d (%s), want %d", what, w.Code, w.Message, code)
	}
	return w
}

func (c *testClient) subscribe(uri string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		c.t.Fatalf("subscribe %s: %v", uri, err)
	}
}

// nextUpdate waits for the next resources/updated notification.
func (c *testClient) nextUpdate() string {
	c.t.Helper()
	select {
	case uri := <-c.updated:
		return uri
	case <-time.After(waitFor):
		c.t.Fatal("no notifications/resources/updated arrived")
		return ""
	}
}

// updatesUntil collects resources/updated URIs up to and including stop.
func (c *testClient) updatesUntil(stop string) []string {
	c.t.Helper()
	var got []string
	for {
		uri := c.nextUpdate()
		got = append(got, uri)
		if uri == stop {
			return got
		}
	}
}

func (c *testClient) waitListChanged() {
	c.t.Helper()
	select {
	case <-c.listChanged:
	case <-time.After(waitFor):
		c.t.Fatal("no notifications/resources/list_changed arrived")
	}
}

// copyDocs copies the example documents into a fresh folder with a fixed
// modification time on every file.
func copyDocs(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("..", "examples", "docs")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
		return os.Chtimes(target, fixedTime, fixedTime)
	})
	if err != nil {
		t.Fatalf("copying examples: %v", err)
	}
	return dst
}

// refOf finds the doc_ref of the document served from rel.
func refOf(t *testing.T, srv *Server, rel string) string {
	t.Helper()
	for _, d := range srv.lib.documents() {
		if srv.lib.pathOf(d.DocRef) == rel {
			return d.DocRef
		}
	}
	t.Fatalf("no document for %s", rel)
	return ""
}
