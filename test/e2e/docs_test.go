// Package e2e checks whole journeys through every component: agents, the
// gateway, a computer and the document server, each real and on its own
// transport.
package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

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
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

const (
	apiKey    = "e2e-key"
	office    = "e2e-office"
	pcName    = "e2e-pc"
	agentName = "e2e-agent"
	host      = "org.e2e.docs"
)

// waitFor bounds every wait: a deadline for a broken test, not a timing
// assertion.
const waitFor = 30 * time.Second

// TestDocumentChangeReachesAgents is the journey of a document edit: a file
// under the served folder changes; the document server's watcher tells the
// computer; the computer tells the office; an agent on Socket.IO (the Go
// agent client) and a WatchOffice stream on the Connect API (same agent
// name: one agent per office) both get notify:update_finder; then both see
// the new content through GetFinder and ReadResource. A file added and a
// file removed travel the same way.
func TestDocumentChangeReachesAgents(t *testing.T) {
	root := t.TempDir()
	testfiles.Write(t, filepath.Join(root, "plan.md"), "---\ntitle: Launch plan\n---\n\n# Launch plan\n\nWe launch in March.\n\n## Risks\n\nNone known.\n")
	testfiles.Write(t, filepath.Join(root, "notes.txt"), "Kick-off notes.\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	// The document server over streamable HTTP, watching the folder.
	docsURL := systest.Docs(t, ctx, docserver.Options{Root: root, Host: host, Debounce: 20 * time.Millisecond}, true)

	// The gateway.
	keys, err := core.NewKeyRing(core.Key{ID: "e2e", Key: apiKey})
	if err != nil {
		t.Fatal(err)
	}
	gw := systest.Gateway(t, gateway.Config{Auth: keys, Logger: quiet})

	// The computer hosting the document server, joined to the office.
	systest.Computer(t, ctx, pcName, map[string]*config.Server{"docs": systest.Server(t, "docs", map[string]any{"url": docsURL})},
		computer.Gateway{URL: gw.URL, Office: office, APIKey: apiKey, Dial: sioclient.Options{Logger: quiet}}, quiet)

	// The agent on Socket.IO.
	ag, err := agent.Dial(ctx, sioclient.Options{URL: gw.URL, APIKey: apiKey, Logger: quiet, Version: smcp.V02.Full()}, agentName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	sioNotes := make(chan agent.Notification, 64)
	ag.OnNotification(func(n agent.Notification) { sioNotes <- n })
	if err := ag.Join(ctx, office); err != nil {
		t.Fatal(err)
	}

	// The same agent on the Connect API, watching the office.
	client := smcpv1connect.NewAgentServiceClient(http.DefaultClient, gw.URL,
		connect.WithInterceptors(identity{rpc.DefaultAPIKeyHeader: apiKey, rpc.AgentHeader: agentName}))
	watchStream, err := client.WatchOffice(ctx, &smcpv1.WatchOfficeRequest{OfficeId: office})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watchStream.Close() })
	_ = watchStream.ResponseHeader() // the watch is registered: nothing later is missed
	rpcNotes := make(chan string, 64)
	go func() {
		defer close(rpcNotes)
		for watchStream.Receive() {
			if n := watchStream.Msg(); n.GetUpdateFinder().GetComputer() == pcName {
				rpcNotes <- n.GetEvent()
			}
		}
	}()

	finderBoth := func() map[string]*smcpv1.DPEDocumentSummary {
		t.Helper()
		viaSIO, err := ag.GetFinder(ctx, &smcpv1.GetFinderReq{Computer: pcName})
		if err != nil {
			t.Fatalf("GetFinder over Socket.IO: %v", err)
		}
		viaRPC, err := client.GetFinder(ctx, &smcpv1.GetFinderRequest{OfficeId: office, Computer: pcName})
		if err != nil {
			t.Fatalf("GetFinder over Connect: %v", err)
		}
		byTitle := map[string]*smcpv1.DPEDocumentSummary{}
		for _, d := range viaSIO.GetDocuments() {
			byTitle[d.GetTitle()] = d
		}
		if len(viaRPC.GetDocuments()) != len(byTitle) {
			t.Fatalf("GetFinder: %d documents over Socket.IO, %d over Connect", len(byTitle), len(viaRPC.GetDocuments()))
		}
		for _, d := range viaRPC.GetDocuments() {
			if byTitle[d.GetTitle()].GetUri() != d.GetUri() {
				t.Fatalf("GetFinder over Connect has %q at %s; Socket.IO does not", d.GetTitle(), d.GetUri())
			}
		}
		return byTitle
	}
	readBoth := func(uri string) string {
		t.Helper()
		viaSIO, err := ag.ReadResource(ctx, pcName, uri)
		if err != nil {
			t.Fatalf("ReadResource %s over Socket.IO: %v", uri, err)
		}
		viaRPC, err := client.ReadResource(ctx, &smcpv1.ReadResourceRequest{OfficeId: office, Computer: pcName, Uri: uri})
		if err != nil {
			t.Fatalf("ReadResource %s over Connect: %v", uri, err)
		}
		a, b := viaSIO.GetContents()[0].GetText(), viaRPC.GetContents()[0].GetText()
		if a != b {
			t.Fatalf("ReadResource %s: Socket.IO and Connect differ:\n%s\n---\n%s", uri, a, b)
		}
		return a
	}
	// drain forgets notifications of earlier changes.
	drain := func() {
		for {
			select {
			case <-sioNotes:
			case <-rpcNotes:
			default:
				return
			}
		}
	}
	changed := func(what string) {
		t.Helper()
		waitSIO(t, sioNotes, what)
		select {
		case _, ok := <-rpcNotes:
			if !ok {
				t.Fatalf("%s: the WatchOffice stream ended: %v", what, watchStream.Err())
			}
		case <-time.After(waitFor):
			t.Fatalf("%s: no notify:update_finder on the WatchOffice stream", what)
		}
	}

	before := finderBoth()
	plan := before["Launch plan"]
	if len(before) != 2 || plan == nil {
		t.Fatalf("Finder before the edit: %v", before)
	}
	if text := readBoth(plan.GetUri() + "/pages/0?format=markdown"); !strings.Contains(text, "We launch in March.") {
		t.Fatalf("page 0 before the edit:\n%s", text)
	}

	// Edit: a new title and new text.
	drain()
	testfiles.Write(t, filepath.Join(root, "plan.md"), "---\ntitle: Launch plan v2\n---\n\n# Launch plan v2\n\nWe launch in May.\n\n## Risks\n\nSupplier delays.\n")
	changed("edit")
	after := finderBoth()
	edited := after["Launch plan v2"]
	if edited == nil || edited.GetUri() != plan.GetUri() || after["Launch plan"] != nil {
		t.Fatalf("Finder after the edit: %v", after)
	}
	if text := readBoth(plan.GetUri() + "/pages/0?format=markdown"); !strings.Contains(text, "We launch in May.") ||
		!strings.Contains(text, "Supplier delays.") || strings.Contains(text, "March") {
		t.Fatalf("page 0 after the edit:\n%s", text)
	}
	if text := readBoth(plan.GetUri() + "?format=text"); !strings.Contains(text, "Launch plan v2") {
		t.Fatalf("document after the edit:\n%s", text)
	}

	// A new file appears; an old one goes.
	drain()
	testfiles.Write(t, filepath.Join(root, "sub", "budget.csv"), "item,cost\nservers,1200\n")
	changed("add")
	if got := finderBoth(); len(got) != 3 || got["budget"] == nil {
		t.Fatalf("Finder after adding budget.csv: %v", got)
	}
	drain()
	if err := os.Remove(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	changed("remove")
	got := finderBoth()
	if len(got) != 2 || got["Launch plan v2"] == nil || got["budget"] == nil {
		t.Fatalf("Finder after removing notes.txt: %v", got)
	}
	var table struct {
		Elements []struct {
			Content struct {
				Rows [][]string `json:"rows"`
			} `json:"content"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(readBoth(got["budget"].GetUri()+"/pages/0")), &table); err != nil ||
		len(table.Elements) != 1 || len(table.Elements[0].Content.Rows) != 1 || table.Elements[0].Content.Rows[0][1] != "1200" {
		t.Fatalf("budget.csv page 0: %+v (%v)", table, err)
	}
}

// waitSIO waits for notify:update_finder from the computer on the agent's
// Socket.IO connection, skipping other notifications.
func waitSIO(t *testing.T, notes <-chan agent.Notification, what string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case n := <-notes:
			if n.Event != smcp.NotifyUpdateFinder {
				continue
			}
			if c := n.Payload.(*smcpv1.UpdateComputerConfigReq).GetComputer(); c != pcName {
				t.Fatalf("%s: notify:update_finder from %q, want %q", what, c, pcName)
			}
			return
		case <-deadline:
			t.Fatalf("%s: no notify:update_finder reached the Socket.IO agent", what)
		}
	}
}

// identity sets the caller's headers on every RPC, unary and streaming.
type identity map[string]string

func (h identity) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		for k, v := range h {
			req.Header().Set(k, v)
		}
		return next(ctx, req)
	}
}

func (h identity) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		for k, v := range h {
			conn.RequestHeader().Set(k, v)
		}
		return conn
	}
}

func (h identity) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
