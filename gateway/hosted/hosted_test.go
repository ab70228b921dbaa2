package hosted_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/hosted"
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
