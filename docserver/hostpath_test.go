package docserver

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
)

// What an agent reads names no folder of the host: the catalog's file_uri
// is relative to the library (a URI reference), and the status window and
// the server's instructions do not say where the library is. They used to
// carry the absolute path of the root.
func TestNoHostPathReachesAgents(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	hostPaths := []string{filepath.ToSlash(srv.lib.rootAbs), filepath.ToSlash(root)}
	check := func(what, text string) {
		t.Helper()
		for _, p := range hostPaths {
			if strings.Contains(text, p) {
				t.Errorf("%s names the host path %s:\n%s", what, p, text)
			}
		}
	}
	var cat dpe.Catalog
	c.readJSON("dpe://"+host, &cat)
	for _, d := range cat.Documents {
		if d.FileURI != srv.lib.pathOf(d.DocRef) {
			t.Errorf("%s: file_uri %q, want its path in the library %q", d.DocRef, d.FileURI, srv.lib.pathOf(d.DocRef))
		}
	}
	text, _ := c.readText("dpe://" + host)
	check("the catalog", text)
	status, _ := c.readText(srv.StatusURI())
	check("the status window", status)
	if !strings.Contains(status, "Serving 7 documents") {
		t.Errorf("status window:\n%s", status)
	}
	check("the instructions", c.cs.InitializeResult().Instructions)
}
