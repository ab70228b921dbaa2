package docserver

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestWatcher edits, adds and removes files under a watched root and checks
// that a real go-sdk client gets the notifications MCP prescribes: updated
// only for what it subscribed to, list_changed when documents come and go.
func TestWatcher(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{Debounce: 20 * time.Millisecond}, true)
	report := refOf(t, srv, "quarterly-report.md")
	notes := refOf(t, srv, "meeting-notes.txt")
	reportURI := dpe.DocURI(host, report)
	notesPageURI := dpe.PageURI(host, notes, 0) + "?format=markdown"
	status := srv.StatusURI()

	// The status window is the last notification of every rescan, so
	// collecting up to it shows everything one change produced.
	c.subscribe(reportURI)
	c.subscribe(notesPageURI)
	c.subscribe(status)

	t.Run("edit a subscribed document", func(t *testing.T) {
		testfiles.Write(t, filepath.Join(root, "quarterly-report.md"), "# Rewritten\n\nNew body.\n")
		got := c.updatesUntil(status)
		if !slices.Equal(got, []string{reportURI, status}) {
			t.Fatalf("updates %v, want %s then the status window", got, reportURI)
		}
		var d dpe.DocumentSummary
		c.readJSON(reportURI, &d)
		if d.Title != "Rewritten" || d.PageCount != 1 {
			t.Errorf("after the edit the document reads %+v", d)
		}
	})

	t.Run("a subscription to a page variant is notified", func(t *testing.T) {
		testfiles.Write(t, filepath.Join(root, "meeting-notes.txt"), "Short notes.\n")
		got := c.updatesUntil(status)
		if !slices.Equal(got, []string{notesPageURI, status}) {
			t.Fatalf("updates %v, want %s then the status window", got, notesPageURI)
		}
	})

	t.Run("unsubscribed documents are not announced", func(t *testing.T) {
		testfiles.Write(t, filepath.Join(root, "archive", "2025-summary.md"), "# 2025\n\nChanged.\n")
		got := c.updatesUntil(status)
		if !slices.Equal(got, []string{status}) {
			t.Fatalf("updates %v, want only the status window", got)
		}
	})

	t.Run("add a file", func(t *testing.T) {
		drain(c.listChanged)
		testfiles.Write(t, filepath.Join(root, "new", "added.md"), "# Added later\n\nHello.\n")
		c.waitListChanged()
		c.updatesUntil(status)
		ref := refOf(t, srv, "new/added.md")
		res, err := c.cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == dpe.DocURI(host, ref) }) {
			t.Errorf("added document not listed")
		}
		var d dpe.DocumentSummary
		c.readJSON(dpe.DocURI(host, ref), &d)
		if d.Title != "Added later" {
			t.Errorf("added document reads %+v", d)
		}
		text, _ := c.readText(status)
		if !strings.Contains(text, "added new/added.md") {
			t.Errorf("status window does not show the addition:\n%s", text)
		}
	})

	t.Run("remove a subscribed file", func(t *testing.T) {
		drain(c.listChanged)
		if err := os.Remove(filepath.Join(root, "quarterly-report.md")); err != nil {
			t.Fatal(err)
		}
		got := c.updatesUntil(status)
		if !slices.Equal(got, []string{reportURI, status}) {
			t.Fatalf("updates %v, want %s then the status window", got, reportURI)
		}
		c.waitListChanged()
		c.readError(reportURI, 4201)
		res, err := c.cs.ListResources(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == reportURI }) {
			t.Errorf("removed document still listed")
		}
	})

	t.Run("a file that stops parsing is withdrawn and shown", func(t *testing.T) {
		drain(c.listChanged)
		testfiles.Write(t, filepath.Join(root, "inventory.json"), `{"broken": `)
		c.updatesUntil(status)
		c.waitListChanged()
		text, _ := c.readText(status)
		if !strings.Contains(text, "inventory.json") || !strings.Contains(text, "invalid JSON") {
			t.Errorf("status window does not show the broken file:\n%s", text)
		}
	})

	t.Run("removing a skipped file updates the status window", func(t *testing.T) {
		if err := os.Remove(filepath.Join(root, "inventory.json")); err != nil {
			t.Fatal(err)
		}
		if got := c.updatesUntil(status); !slices.Equal(got, []string{status}) {
			t.Fatalf("updates %v, want only the status window", got)
		}
		text, _ := c.readText(status)
		if strings.Contains(text, "invalid JSON") || !strings.Contains(text, "removed inventory.json") {
			t.Errorf("status window after removing the broken file:\n%s", text)
		}
	})
}

func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestWatchOnce: a second Watch on the same server is refused.
func TestWatchOnce(t *testing.T) {
	srv, _ := startServer(t, t.TempDir(), Options{}, true)
	// The first Watch runs in the background; wait until it holds the flag.
	if !testwait.Poll(waitFor, srv.watching.Load) {
		t.Fatal("Watch did not start")
	}
	if err := srv.Watch(context.Background()); !errors.Is(err, ErrWatching) {
		t.Fatalf("second Watch: %v, want ErrWatching", err)
	}
}

// TestRobustness: bad files are skipped with a reason, never take the
// server down, and nothing outside the root is served.
func TestRobustness(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "good.md"), "# Good\n\nFine.\n")
	testfiles.Write(t, filepath.Join(root, "broken.pdf"), "%PDF-1.4\nthis is not a PDF body\n")
	testfiles.Write(t, filepath.Join(root, "broken.xlsx"), "PK\x03\x04 not a zip")
	testfiles.Write(t, filepath.Join(root, "broken.json"), "[1, 2,")
	testfiles.Write(t, filepath.Join(root, "binary.txt"), "abc\x00def")
	testfiles.Write(t, filepath.Join(root, "big.csv"), strings.Repeat("a,b\n", 1000))
	testfiles.Write(t, filepath.Join(root, ".hidden", "secret.md"), "# Hidden\n")
	testfiles.Write(t, filepath.Join(outside, "secret.md"), "# Outside the root\n")
	testfiles.Write(t, filepath.Join(root, "notes.docx"), "unsupported")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "escape.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("good.md", filepath.Join(root, "alias.md")); err != nil {
		t.Fatal(err)
	}

	srv, c := startServer(t, root, Options{MaxFileSize: 2000}, false)
	var cat dpe.Catalog
	c.readJSON("dpe://"+host, &cat)
	var titles []string
	for _, d := range cat.Documents {
		titles = append(titles, srv.lib.pathOf(d.DocRef))
	}
	if !slices.Equal(titles, []string{"alias.md", "good.md"}) {
		t.Errorf("served %v, want only good.md and its in-root alias", titles)
	}
	text, _ := c.readText(srv.StatusURI())
	for _, want := range []string{"broken.pdf", "broken.xlsx", "broken.json", "binary.txt", "big.csv: file is 4000 bytes, over the limit of 2000", "escape.md"} {
		if !strings.Contains(text, want) {
			t.Errorf("status window does not mention %q:\n%s", want, text)
		}
	}
	for _, never := range []string{"Outside the root", "secret", "Hidden", "docx"} {
		if strings.Contains(text, never) {
			t.Errorf("status window mentions %q:\n%s", never, text)
		}
	}
}

// TestStreamableHTTP serves the documents over the streamable HTTP transport.
func TestStreamableHTTP(t *testing.T) {
	srv, err := New(Options{Root: copyDocs(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	// Cleanups run last-in first-out: the client session (registered by
	// connectClient) closes before the HTTP server waits for connections.
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := connectClient(t, ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL})
	var cat dpe.Catalog
	c.readJSON("dpe://"+host, &cat)
	if cat.TotalCount != 7 {
		t.Errorf("catalog over HTTP has %d documents", cat.TotalCount)
	}
	c.readError("dpe://"+host+"/missing", 4201)
}

// TestSubscriptionsPruned: subscriptions of sessions that ended are dropped
// at the next change, so long-running servers do not accumulate them.
func TestSubscriptionsPruned(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{Debounce: 20 * time.Millisecond}, true)
	c.subscribe(srv.StatusURI())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	gone := connectClient(t, ctx, ct)
	uri := dpe.DocURI(host, refOf(t, srv, "meeting-notes.txt")) + "?format=text"
	gone.subscribe(uri)
	if got := srv.subscribedURIs(); !slices.Contains(got, uri) {
		t.Fatalf("subscribed URIs %v lack %s", got, uri)
	}
	gone.cs.Close()
	if !testwait.Poll(waitFor, func() bool { return countSessions(srv) == 1 }) {
		t.Fatal("the closed session is still registered")
	}
	testfiles.Write(t, filepath.Join(root, "meeting-notes.txt"), "Changed.\n")
	c.updatesUntil(srv.StatusURI())
	if got := srv.subscribedURIs(); !slices.Equal(got, []string{srv.StatusURI()}) {
		t.Errorf("subscribed URIs after the session ended: %v", got)
	}
}

func countSessions(srv *Server) int {
	n := 0
	for range srv.MCP().Sessions() {
		n++
	}
	return n
}

// TestWatchBusyFile: a file written without pause still gets rescanned
// (the debounce has an upper bound), while the writes go on.
func TestWatchBusyFile(t *testing.T) {
	root := t.TempDir()
	log := filepath.Join(root, "busy.txt")
	testfiles.Write(t, log, "start\n")
	srv, c := startServer(t, root, Options{Debounce: 200 * time.Millisecond}, true)
	uri := dpe.DocURI(host, refOf(t, srv, "busy.txt"))
	c.subscribe(uri)
	// One change seen end to end: the watcher is running and its first
	// rescan is behind us.
	c.subscribe(srv.StatusURI())
	testfiles.Write(t, filepath.Join(root, "other.txt"), "other\n")
	c.updatesUntil(srv.StatusURI())

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
				fmt.Fprintf(f, "line %d\n", i)
			}
		}
	}()
	got := c.nextUpdate() // fails at the deadline if the rescan waits for the writes to stop
	close(stop)
	<-done
	if got != uri {
		t.Errorf("update for %s, want %s", got, uri)
	}
}

// TestNewestProtocolSubscription: a client on the SDK's newest protocol
// (subscriptions/listen instead of resources/subscribe) is notified too.
func TestNewestProtocolSubscription(t *testing.T) {
	root := copyDocs(t)
	srv, err := New(Options{Root: root, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan error, 1)
	t.Cleanup(func() { cancel(); <-watchDone; srv.Close() })
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	updated := make(chan string, 10)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "new", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go func() { watchDone <- srv.Watch(ctx) }()
	uri := dpe.DocURI(host, refOf(t, srv, "meeting-notes.txt"))
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// Subscribe returns before the listen stream is registered on the
	// server; wait until the server knows the subscription.
	if !testwait.Poll(waitFor, func() bool { return slices.Contains(srv.subscribedURIs(), uri) }) {
		t.Fatalf("protocol %s: subscription never reached the server", cs.InitializeResult().ProtocolVersion)
	}
	testfiles.Write(t, filepath.Join(root, "meeting-notes.txt"), "New notes.\n")
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("update for %s, want %s", got, uri)
		}
	case <-time.After(waitFor):
		t.Fatalf("protocol %s: no notifications/resources/updated", cs.InitializeResult().ProtocolVersion)
	}
}
