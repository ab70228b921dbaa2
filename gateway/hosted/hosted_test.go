package hosted_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// A mistake in computers: stops the gateway at start, naming the computer
// and what is wrong.
func TestNewRefusesBadSpecs(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"x": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := hosted.Spec{Name: "pc", Office: "o", Config: cfg}
	for _, c := range []struct {
		name  string
		specs []hosted.Spec
		want  string
	}{
		{"no office", []hosted.Spec{{Name: "pc", Config: cfg}}, "name, office and config are required"},
		{"twice", []hosted.Spec{ok, ok}, `"pc": named twice in office "o"`},
		{"protocol", []hosted.Spec{{Name: "pc", Office: "o", Config: cfg, Protocol: "0.9"}}, `"pc": protocol "0.9"`},
		{"confirm", []hosted.Spec{{Name: "pc", Office: "o", Config: cfg, Confirm: "maybe"}}, `"pc": computer: confirm policy "maybe"`},
		{"missing file", []hosted.Spec{{Name: "pc", Office: "o", Config: filepath.Join(dir, "none.json")}}, "none.json"},
		{"bad server", []hosted.Spec{ok, {Name: "pc2", Office: "o", Config: bad}}, `"pc2"`},
		{"store key file", []hosted.Spec{{Name: "pc", Office: "o", Config: cfg, AuthStoreKeyFile: filepath.Join(dir, "none.key")}}, `"pc": token store key file`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := hosted.New(core.New(core.Config{}), c.specs, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
	s, err := hosted.New(core.New(core.Config{}), []hosted.Spec{ok}, slog.New(slog.DiscardHandler))
	if err != nil || s.Len() != 1 {
		t.Fatalf("a good spec: %v", err)
	}
	pc := s.Computer("o", "pc")
	defer pc.Close()
	if pc.Protocol() != "0.4" {
		t.Fatalf("protocol %s, want 0.4 by default", pc.Protocol())
	}
}

// stubConn is a session of an external computer that never answers.
type stubConn struct{}

func (stubConn) Notify(core.Notification) {}
func (stubConn) Request(string, json.RawMessage, func(json.RawMessage, error)) func() {
	return nil
}

// writeConfig writes an mcpServers file of streamable HTTP servers.
func writeConfig(t *testing.T, path string, urls map[string]string) {
	t.Helper()
	servers := map[string]any{}
	for n, u := range urls {
		servers[n] = map[string]any{"url": u}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// While another holds its name, a hosted computer starts no MCP server,
// even when its configuration is reloaded; once the name is free it joins
// and starts the servers of the configuration as last reloaded.
func TestReloadBeforeHostingStartsNothing(t *testing.T) {
	a := httptest.NewServer(testmcp.New("a", testmcp.Options{}).HTTPHandler())
	t.Cleanup(a.Close)
	b := httptest.NewServer(testmcp.New("b", testmcp.Options{}).HTTPHandler())
	t.Cleanup(b.Close)
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	writeConfig(t, cfg, map[string]string{"a": a.URL})

	hub := core.New(core.Config{})
	holder, err := hub.Attach("external", &core.Principal{ID: "ext"}, stubConn{}, core.Protocol{Version: smcp.V04})
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Join(&smcpv1.EnterOfficeReq{Role: smcp.RoleComputer, Name: "pc", OfficeId: "o"}); err != nil {
		t.Fatal(err)
	}
	s, err := hosted.New(hub, []hosted.Spec{{Name: "pc", Office: "o", Config: cfg}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	pc := s.Computer("o", "pc")

	writeConfig(t, cfg, map[string]string{"a": a.URL, "b": b.URL})
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := len(pc.Servers().Snapshots()); n != 0 {
		t.Fatalf("%d MCP servers started on a node that does not host the computer", n)
	}

	holder.Close()
	testwait.Until(t, "the reloaded configuration's servers", func() bool {
		var names []string
		for _, sn := range pc.Servers().Snapshots() {
			names = append(names, sn.Name)
		}
		slices.Sort(names)
		return slices.Equal(names, []string{"a", "b"})
	})
}
