package computer_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/docserver"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestWithDocumentServer hosts the project's document MCP server (package
// docserver) over streamable HTTP: its files are in the Finder, its status
// window on the Desktop, and its DPE errors reach the agent with their codes
// (the convention of this package's doc comment).
func TestWithDocumentServer(t *testing.T) {
	root := t.TempDir()
	md := "# Quarterly notes\n\nRevenue grew.\n\n## Details\n\n- one\n- two\n"
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte(md), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := docserver.New(docserver.Options{Root: root, Host: "test.docs", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ds.Close() })
	srv := httptest.NewServer(ds.Handler())
	t.Cleanup(srv.Close)
	h := newComputer(t, map[string]map[string]any{"docs": {"url": srv.URL}})

	page, total := finderDocs(t, h.call(smcp.EventGetFinder, map[string]any{"keywords": []any{"quarterly"}}))
	if total != 1 || page[0]["server"] != "docs" || page[0]["file_type"] != "md" {
		t.Fatalf("finder: %d %v", total, page)
	}
	uri := page[0]["uri"].(string)
	if !strings.HasPrefix(uri, "dpe://test.docs/") {
		t.Fatalf("uri %s", uri)
	}
	ans := h.call(smcp.EventReadResource, map[string]any{"uri": uri + "/pages/0?format=json"})
	contents, ok := ans["contents"].([]any)
	if !ok || len(contents) == 0 {
		t.Fatalf("level 2: %v", ans)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(contents[0].(map[string]any)["text"].(string)), &p); err != nil || p["elements"] == nil {
		t.Fatalf("level 2 body: %v %v", p, err)
	}
	for suffix, code := range map[string]float64{"/pages/99": 4202, "/elements/nope": 4203, "x-missing": 4201, "?depth=all": 4204} {
		u := uri + suffix
		if suffix == "x-missing" {
			u = "dpe://test.docs/missing-doc"
		}
		if got := h.call(smcp.EventReadResource, map[string]any{"uri": u}); got["code"] != code {
			t.Errorf("%s: %v, want %v", u, got, code)
		}
	}
	desk := h.call(smcp.EventGetDesktop, map[string]any{})
	if d := desktops(t, desk); len(d) != 1 || !strings.HasPrefix(d[0], ds.StatusURI()) {
		t.Fatalf("desktop: %q", d)
	}
	// The Finder's file_uri is the file's place in the library, and
	// nothing an agent reads names the host's folders.
	if page[0]["file_uri"] != "notes.md" {
		t.Errorf("file_uri %v, want notes.md", page[0]["file_uri"])
	}
	noHostPath(t, "get_finder", h.call(smcp.EventGetFinder, map[string]any{}), root)
	noHostPath(t, "get_desktop", desk, root)
	noHostPath(t, "read_resource", h.call(smcp.EventReadResource, map[string]any{"uri": uri}), root)
}

// noHostPath fails t if the JSON of an answer names one of the host paths
// (as given, or with symlinks resolved).
func noHostPath(t *testing.T, what string, answer any, paths ...string) {
	t.Helper()
	b, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		real, _ := filepath.EvalSymlinks(p)
		for _, q := range []string{p, real} {
			if q != "" && strings.Contains(string(b), q) {
				t.Errorf("%s names the host path %s: %.500s", what, q, b)
			}
		}
	}
}
