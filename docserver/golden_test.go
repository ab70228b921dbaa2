package docserver

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var formatsUnderTest = []string{dpe.FormatJSON, dpe.FormatMarkdown, dpe.FormatText}

// TestGolden reads every example document through a real MCP client at
// levels 1-3 in the three formats (and the catalog at level 0) and compares
// with testdata/golden/<document>.<format>.golden. Each golden file holds
// one "=== <uri>" section per read. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	// Nothing an agent reads names the host's folders (file_uri is
	// relative to the library).
	hostPath := filepath.ToSlash(srv.lib.rootAbs)

	check := func(name string, uris []string, format string) {
		t.Helper()
		var b strings.Builder
		for _, uri := range uris {
			if format != dpe.FormatJSON {
				sep := "?"
				if strings.Contains(uri, "?") {
					sep = "&"
				}
				uri += sep + "format=" + format
			}
			text, mime := c.readText(uri)
			if mime != dpe.MIMEType(format) {
				t.Errorf("%s: mime %q, want %q", uri, mime, dpe.MIMEType(format))
			}
			if strings.Contains(text, hostPath) {
				t.Errorf("%s names the host path %s:\n%s", uri, hostPath, text)
			}
			fmt.Fprintf(&b, "=== %s\n%s\n", uri, text)
		}
		compareGolden(t, filepath.Join("testdata", "golden", name+"."+format+".golden"), b.String())
	}

	for _, format := range formatsUnderTest {
		check("catalog", []string{"dpe://" + DefaultHost}, format)
	}
	for _, doc := range srv.lib.documents() {
		name := strings.TrimSuffix(filepath.Base(srv.lib.pathOf(doc.DocRef)), filepath.Ext(srv.lib.pathOf(doc.DocRef))) + "-" + doc.FileType
		base := dpe.DocURI(DefaultHost, doc.DocRef)
		uris := []string{base, base + "?depth=pages"}
		for i := range doc.Pages {
			uris = append(uris, dpe.PageURI(DefaultHost, doc.DocRef, i))
		}
		// Level 3: the first element of each category.
		seen := map[string]bool{}
		for _, p := range doc.Pages {
			for _, e := range p.Elements {
				if !seen[e.Category] {
					seen[e.Category] = true
					uris = append(uris, dpe.ElementURI(DefaultHost, doc.DocRef, e.ID))
				}
			}
		}
		for _, format := range formatsUnderTest {
			check(name, uris, format)
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output (run with -update after checking):\n%s", path, diff(string(want), got))
	}
}

// diff shows the first differing line with some context.
func diff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %q\n  got:  %q", i+1, w, g)
		}
	}
	return "(no line differs)"
}
