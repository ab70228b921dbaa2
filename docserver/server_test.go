package docserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/smcpgw/smcp-gateway/docserver/dpe"
	"github.com/smcpgw/smcp-gateway/docserver/formats"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/smcp/dpeuri"
)

const host = DefaultHost

func TestCapabilitiesAndResources(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	caps := c.cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || !caps.Resources.ListChanged {
		t.Fatalf("resources capability %+v, want subscribe and listChanged", caps.Resources)
	}
	if caps.Completions == nil {
		t.Error("completions capability not advertised")
	}

	res, err := c.cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var docURIs []string
	var status *mcp.Resource
	for _, r := range res.Resources {
		switch {
		case r.URI == srv.StatusURI():
			status = r
		case dpeuri.IsDPE(r.URI):
			u, err := dpeuri.Parse(r.URI)
			if err != nil || u.Level() != dpeuri.LevelDocument {
				t.Errorf("listed %s: want a Level 1 dpe URI (%v)", r.URI, err)
			}
			if r.MIMEType != "application/json" || r.Name == "" {
				t.Errorf("listed %s: mimeType %q name %q", r.URI, r.MIMEType, r.Name)
			}
			docURIs = append(docURIs, r.URI)
		default:
			t.Errorf("unexpected resource %s", r.URI)
		}
	}
	if len(docURIs) != 7 {
		t.Errorf("listed %d documents, want the 7 examples: %v", len(docURIs), docURIs)
	}
	if status == nil {
		t.Fatal("status window not listed")
	}
	if status.URI != "window://"+host+"/status" || status.Annotations == nil ||
		status.Annotations.Priority <= 0 || !slices.Equal(status.Annotations.Audience, []mcp.Role{"assistant"}) {
		t.Errorf("status window resource %+v (annotations %+v)", status, status.Annotations)
	}

	tmpl, err := c.cs.ListResourceTemplates(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var templates []string
	for _, rt := range tmpl.ResourceTemplates {
		templates = append(templates, rt.URITemplate)
	}
	slices.Sort(templates)
	want := []string{"dpe://" + host + "/{doc_ref}/elements/{element_id}", "dpe://" + host + "/{doc_ref}/pages/{page_index}"}
	if !slices.Equal(templates, want) {
		t.Errorf("templates %v, want %v", templates, want)
	}
}

func TestLevelZero(t *testing.T) {
	root := copyDocs(t)
	_, c := startServer(t, root, Options{}, false)
	var cat dpe.Catalog
	c.readJSON("dpe://"+host, &cat)
	if cat.TotalCount != 7 || len(cat.Documents) != 7 {
		t.Fatalf("catalog has %d/%d documents, want 7", len(cat.Documents), cat.TotalCount)
	}
	types := map[string]bool{}
	for _, d := range cat.Documents {
		types[d.FileType] = true
		if d.URI != "dpe://"+host+"/"+d.DocRef || d.FileURI == "" || d.Title == "" || d.PageCount < 1 {
			t.Errorf("catalog entry %+v", d)
		}
		if d.LastModified != "2026-01-15T08:30:00Z" {
			t.Errorf("%s: last_modified %q, want the file's mtime in RFC 3339 UTC", d.DocRef, d.LastModified)
		}
	}
	for _, ft := range []string{"md", "txt", "csv", "json", "xlsx", "pdf"} {
		if !types[ft] {
			t.Errorf("no %s document in the catalog", ft)
		}
	}
	// The trailing slash form is the same catalog.
	text, _ := c.readText("dpe://" + host + "/")
	if !strings.Contains(text, `"total_count": 7`) {
		t.Errorf("dpe://host/ did not read as the catalog: %s", text)
	}
}

func TestQueryParameters(t *testing.T) {
	root := t.TempDir()
	// 25 sections → 25 pages; a mixed page for category filters.
	var b strings.Builder
	for i := range 25 {
		fmt.Fprintf(&b, "# Section %d\n\nParagraph %d.\n\n", i, i)
	}
	b.WriteString("# Mixed\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n\n```\ncode\n```\n")
	testfiles.Write(t, filepath.Join(root, "long.md"), b.String())
	srv, c := startServer(t, root, Options{}, false)
	ref := refOf(t, srv, "long.md")
	doc := "dpe://" + host + "/" + ref

	t.Run("depth", func(t *testing.T) {
		var meta map[string]any
		c.readJSON(doc, &meta)
		if _, ok := meta["pages"]; ok {
			t.Error("depth=metadata (default) returned pages")
		}
		if meta["page_count"] != float64(26) {
			t.Errorf("page_count %v, want 26", meta["page_count"])
		}
		var explicit map[string]any
		c.readJSON(doc+"?depth=metadata", &explicit)
		if fmt.Sprint(explicit) != fmt.Sprint(meta) {
			t.Error("depth=metadata differs from the default")
		}
	})

	t.Run("offset and limit", func(t *testing.T) {
		tests := []struct {
			query                    string
			offset, limit, n, first0 int
		}{
			{"?depth=pages", 0, 20, 20, 0},
			{"?depth=pages&offset=20", 20, 20, 6, 20},
			{"?depth=pages&offset=5&limit=3", 5, 3, 3, 5},
			{"?depth=pages&limit=100", 0, 100, 26, 0},
			{"?depth=pages&offset=26", 26, 20, 0, -1},
			{"?depth=pages&offset=1000&limit=1", 1000, 1, 0, -1},
		}
		for _, tc := range tests {
			var v dpe.DocumentPages
			c.readJSON(doc+tc.query, &v)
			if v.PageOffset != tc.offset || v.PageLimit != tc.limit || v.PageTotal != 26 || len(v.Pages) != tc.n {
				t.Errorf("%s: offset %d limit %d total %d pages %d, want %d %d 26 %d", tc.query, v.PageOffset, v.PageLimit, v.PageTotal, len(v.Pages), tc.offset, tc.limit, tc.n)
				continue
			}
			for i, p := range v.Pages {
				if p.PageIndex != tc.first0+i || p.URI != fmt.Sprintf("%s/pages/%d", doc, p.PageIndex) || p.DocRef != ref {
					t.Errorf("%s: page %d = %+v", tc.query, i, p)
				}
			}
		}
		// offset/limit without depth=pages leave the metadata alone.
		var meta map[string]any
		c.readJSON(doc+"?offset=3&limit=2", &meta)
		if _, ok := meta["pages"]; ok {
			t.Error("offset/limit with depth=metadata returned pages")
		}
	})

	t.Run("categories", func(t *testing.T) {
		mixed := doc + "/pages/25"
		tests := []struct {
			query string
			want  []string
		}{
			{"", []string{"heading", "table", "list", "code"}},
			{"?categories=table", []string{"table"}},
			{"?categories=table,pivot_table", []string{"table"}},
			{"?categories=list,code", []string{"list", "code"}},
			{"?categories=chart", nil},
		}
		for _, tc := range tests {
			var p dpe.PageContent
			c.readJSON(mixed+tc.query, &p)
			var got []string
			for _, e := range p.Elements {
				got = append(got, e.Category)
			}
			if !slices.Equal(got, tc.want) || p.ElementCount != len(tc.want) {
				t.Errorf("%s: categories %v (element_count %d), want %v", tc.query, got, p.ElementCount, tc.want)
			}
		}
		md, mime := c.readText(mixed + "?categories=table&format=markdown")
		if mime != "text/markdown" || md != "| a | b |\n| --- | --- |\n| 1 | 2 |\n" {
			t.Errorf("filtered markdown %q (%s)", md, mime)
		}
	})

	t.Run("format", func(t *testing.T) {
		for _, uri := range []string{"dpe://" + host, doc, doc + "?depth=pages", doc + "/pages/0"} {
			for format, mime := range map[string]string{"json": "application/json", "markdown": "text/markdown", "text": "text/plain"} {
				sep := "?"
				if strings.Contains(uri, "?") {
					sep = "&"
				}
				text, got := c.readText(uri + sep + "format=" + format)
				if got != mime || text == "" {
					t.Errorf("%s format=%s: mime %q, %d bytes", uri, format, got, len(text))
				}
				if format != "json" && json.Valid([]byte(text)) {
					t.Errorf("%s format=%s returned JSON", uri, format)
				}
			}
		}
		md, _ := c.readText(doc + "/pages/0?format=markdown")
		if md != "# Section 0\n\nParagraph 0.\n" {
			t.Errorf("page markdown %q", md)
		}
		txt, _ := c.readText(doc + "/pages/0?format=text")
		if txt != "Section 0\n\nParagraph 0.\n" {
			t.Errorf("page text %q", txt)
		}
	})
}

func TestErrors(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	ref := refOf(t, srv, "quarterly-report.md")
	doc := "dpe://" + host + "/" + ref

	t.Run("4201 document not found", func(t *testing.T) {
		for _, uri := range []string{
			"dpe://" + host + "/no-such-doc",
			"dpe://" + host + "/no-such-doc/pages/0",
			"dpe://" + host + "/no-such-doc/elements/x",
			"dpe://other.host/" + ref,
		} {
			w := c.readError(uri, 4201)
			var details map[string]any
			if err := json.Unmarshal(w.Data, &details); err != nil || details["uri"] != uri {
				t.Errorf("%s: data %s, want details with the uri", uri, w.Data)
			}
		}
	})
	t.Run("4202 page out of range", func(t *testing.T) {
		w := c.readError(doc+"/pages/4", 4202)
		var details map[string]any
		if err := json.Unmarshal(w.Data, &details); err != nil || details["page_count"] != float64(4) || details["page_index"] != float64(4) {
			t.Errorf("data %s", w.Data)
		}
		c.readError(doc+"/pages/2147483647?format=markdown", 4202)
	})
	t.Run("4203 element not found", func(t *testing.T) {
		w := c.readError(doc+"/elements/tbl-00000000", 4203)
		if !strings.Contains(w.Message, "tbl-00000000") {
			t.Errorf("message %q", w.Message)
		}
	})
	t.Run("4204 invalid URI", func(t *testing.T) {
		for _, uri := range []string{
			"dpe://",                             // rule 2: host
			doc + "/pages/-1",                    // rule 3
			doc + "/pages/x",                     // rule 3
			doc + "/elements/",                   // rule 3
			doc + "/sheets/1",                    // rule 3
			doc + "?format=html",                 // rule 4
			doc + "?depth=all",                   // rule 5
			doc + "?depth=pages&offset=-1",       // rule 6
			doc + "?depth=pages&limit=0",         // rule 7
			doc + "?depth=pages&limit=101",       // rule 7
			doc + "/pages/0?categories=tables",   // rule 8
			doc + "/pages/0?categories=table,,x", // rule 8
		} {
			w := c.readError(uri, 4204)
			var details map[string]any
			if err := json.Unmarshal(w.Data, &details); err != nil || details["rule"] == "" {
				t.Errorf("%s: data %s, want the failed rule", uri, w.Data)
			}
		}
	})
	t.Run("other schemes are not ours", func(t *testing.T) {
		_, err := c.read("file:///etc/passwd")
		if err == nil {
			t.Fatal("read of file:///etc/passwd succeeded")
		}
	})
	t.Run("subscribe validates", func(t *testing.T) {
		err := c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: doc + "?limit=0"})
		wantRPCError(t, "subscribe", err, 4204)
		err = c.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "dpe://other.host/x"})
		wantRPCError(t, "subscribe", err, 4201)
	})
}

func TestLevelThreeAndIDs(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	ref := refOf(t, srv, "quarterly-report.md")
	var page dpe.PageContent
	c.readJSON(fmt.Sprintf("dpe://%s/%s/pages/1", host, ref), &page)
	for _, e := range page.Elements {
		var d dpe.ElementDetail
		c.readJSON(fmt.Sprintf("dpe://%s/%s/elements/%s", host, ref, e.ElementID), &d)
		if d.ElementID != e.ElementID || d.Category != e.Category || d.PageIndex != 1 || d.DocRef != ref ||
			d.URI != fmt.Sprintf("dpe://%s/%s/elements/%s", host, ref, e.ElementID) || d.Summary != e.Summary {
			t.Errorf("element %s detail %+v", e.ElementID, d)
		}
		if e.Category == "table" {
			content := d.Content.(map[string]any)
			if content["total_rows"] != float64(4) || content["total_columns"] != float64(4) {
				t.Errorf("table detail content %v, want total_rows and total_columns", content)
			}
			if d.Metadata["lines"] != "16-21" {
				t.Errorf("table metadata %v", d.Metadata)
			}
		}
	}
}

// TestStableIDs: the same files give the same doc_refs and element ids in
// another server instance, and in a copy of the folder elsewhere; an edit
// keeps the ids of untouched elements.
func TestStableIDs(t *testing.T) {
	root := copyDocs(t)
	other := copyDocs(t)
	_, c1 := startServer(t, root, Options{}, false)
	_, c2 := startServer(t, root, Options{}, false)
	_, c3 := startServer(t, other, Options{}, false)
	ids := func(c *testClient) []string {
		var out []string
		var cat dpe.Catalog
		c.readJSON("dpe://"+host, &cat)
		for _, d := range cat.Documents {
			out = append(out, d.DocRef)
			for i := range d.PageCount {
				var p dpe.PageContent
				c.readJSON(fmt.Sprintf("%s/pages/%d", d.URI, i), &p)
				for _, e := range p.Elements {
					out = append(out, e.ElementID)
				}
			}
		}
		return out
	}
	a, b, cc := ids(c1), ids(c2), ids(c3)
	if len(a) < 50 || !slices.Equal(a, b) || !slices.Equal(a, cc) {
		t.Fatalf("ids differ across instances (%d, %d, %d ids)", len(a), len(b), len(cc))
	}
	seen := map[string]bool{}
	for _, id := range a {
		if seen[id] {
			t.Errorf("id %s used twice", id)
		}
		seen[id] = true
		if u, err := dpeuri.Parse("dpe://h/" + id); err != nil || u.DocRef != id || len(id) > 40 {
			t.Errorf("id %q is not a short URL-safe reference", id)
		}
	}

	// Editing one paragraph changes only that element's id.
	md := filepath.Join(other, "quarterly-report.md")
	data, _ := os.ReadFile(md)
	if err := os.WriteFile(md, []byte(strings.Replace(string(data), "fastest", "the fastest", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c4 := startServer(t, other, Options{}, false)
	d := ids(c4)
	var changed []int
	for i := range a {
		if a[i] != d[i] {
			changed = append(changed, i)
		}
	}
	if len(d) != len(a) || len(changed) != 1 || !strings.HasPrefix(d[changed[0]], "txt-") {
		t.Errorf("after editing one paragraph, %d ids changed (%v), want exactly one text id", len(changed), changed)
	}
}

func TestCompletion(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	ref := refOf(t, srv, "quarterly-report.md")
	pagesTmpl := "dpe://" + host + "/{doc_ref}/pages/{page_index}"
	elemTmpl := "dpe://" + host + "/{doc_ref}/elements/{element_id}"
	complete := func(tmpl, arg, value string, ctxArgs map[string]string) mcp.CompletionResultDetails {
		t.Helper()
		p := &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: tmpl},
			Argument: mcp.CompleteParamsArgument{Name: arg, Value: value},
		}
		if ctxArgs != nil {
			p.Context = &mcp.CompleteContext{Arguments: ctxArgs}
		}
		res, err := c.cs.Complete(context.Background(), p)
		if err != nil {
			t.Fatalf("complete %s=%q: %v", arg, value, err)
		}
		return res.Completion
	}

	got := complete(pagesTmpl, "doc_ref", "qu", nil)
	if !slices.Equal(got.Values, []string{ref}) || got.Total != 1 || got.HasMore {
		t.Errorf("doc_ref 'qu': %+v", got)
	}
	if got := complete(elemTmpl, "doc_ref", "", nil); got.Total != 7 {
		t.Errorf("doc_ref '': %+v, want all 7", got)
	}
	if got := complete(pagesTmpl, "page_index", "", map[string]string{"doc_ref": ref}); !slices.Equal(got.Values, []string{"0", "1", "2", "3"}) {
		t.Errorf("page_index: %+v", got)
	}
	if got := complete(pagesTmpl, "page_index", "", nil); len(got.Values) != 0 {
		t.Errorf("page_index without doc_ref: %+v, want none", got)
	}
	var page dpe.PageContent
	c.readJSON(fmt.Sprintf("dpe://%s/%s/pages/1", host, ref), &page)
	var pageIDs []string
	for _, e := range page.Elements {
		pageIDs = append(pageIDs, e.ElementID)
	}
	if got := complete(elemTmpl, "element_id", "", map[string]string{"doc_ref": ref, "page_index": "1"}); !slices.Equal(got.Values, pageIDs) {
		t.Errorf("element_id on page 1: %v, want %v", got.Values, pageIDs)
	}
	if got := complete(elemTmpl, "element_id", "tbl", map[string]string{"doc_ref": ref}); len(got.Values) != 1 || !strings.HasPrefix(got.Values[0], "tbl-") {
		t.Errorf("element_id 'tbl': %+v", got)
	}
	if got := complete("dpe://other.host/{doc_ref}/pages/{page_index}", "doc_ref", "", nil); len(got.Values) != 0 {
		t.Errorf("another host's template completed: %+v", got)
	}

	// More than 100 candidates: the first 100, hasMore, the true total.
	big := t.TempDir()
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "Paragraph number %d.\n\n", i)
	}
	testfiles.Write(t, filepath.Join(big, "many.txt"), b.String())
	srv2, c2 := startServer(t, big, Options{}, false)
	res, err := c2.cs.Complete(context.Background(), &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: elemTmpl},
		Argument: mcp.CompleteParamsArgument{Name: "element_id"},
		Context:  &mcp.CompleteContext{Arguments: map[string]string{"doc_ref": refOf(t, srv2, "many.txt")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Completion.Values) != 100 || !res.Completion.HasMore || res.Completion.Total != 150 {
		t.Errorf("150 candidates: %d values, hasMore %v, total %d", len(res.Completion.Values), res.Completion.HasMore, res.Completion.Total)
	}
}

// TestLongTable: a page shows the first rows of a long table and says so;
// the element has them all.
func TestLongTable(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	b.WriteString("n,square\n")
	for i := range 450 {
		fmt.Fprintf(&b, "%d,%d\n", i, i*i)
	}
	testfiles.Write(t, filepath.Join(root, "squares.csv"), b.String())
	srv, c := startServer(t, root, Options{Formats: formatsOptions(1000)}, false)
	doc := dpe.DocURI(host, refOf(t, srv, "squares.csv"))

	var page struct {
		Elements []struct {
			ElementID string `json:"element_id"`
			Content   struct {
				Rows      [][]string `json:"rows"`
				TotalRows int        `json:"total_rows"`
				Truncated bool       `json:"truncated"`
			} `json:"content"`
		} `json:"elements"`
	}
	c.readJSON(doc+"/pages/0", &page)
	got := page.Elements[0]
	if len(got.Content.Rows) != dpe.MaxPageTableRows || got.Content.TotalRows != 450 || !got.Content.Truncated {
		t.Errorf("page table: %d rows, total %d, truncated %v", len(got.Content.Rows), got.Content.TotalRows, got.Content.Truncated)
	}
	elemURI := dpe.ElementURI(host, refOf(t, srv, "squares.csv"), got.ElementID)
	md, _ := c.readText(doc + "/pages/0?format=markdown")
	if !strings.HasSuffix(md, "| 199 | 39601 |\n\n_250 more rows: "+elemURI+"_\n") {
		t.Errorf("markdown page does not end with the pointer to the element:\n…%s", md[max(0, len(md)-200):])
	}
	var detail struct {
		Content struct {
			Rows      [][]string `json:"rows"`
			TotalRows int        `json:"total_rows"`
		} `json:"content"`
	}
	c.readJSON(elemURI, &detail)
	if len(detail.Content.Rows) != 450 || detail.Content.TotalRows != 450 {
		t.Errorf("element: %d rows, total %d", len(detail.Content.Rows), detail.Content.TotalRows)
	}
}

func formatsOptions(rowsPerPage int) formats.Options {
	return formats.Options{RowsPerPage: rowsPerPage}
}

func TestNewRejects(t *testing.T) {
	for _, h := range []string{"a/b", "a b", "a?b", "a#b", "ä%zz"} {
		if _, err := New(Options{Root: t.TempDir(), Host: h}); err == nil {
			t.Errorf("host %q accepted", h)
		}
	}
	if _, err := New(Options{Root: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("missing root accepted")
	}
	if _, err := New(Options{}); err == nil {
		t.Error("empty root accepted")
	}
}

// TestShapesMatchProto decodes the document server's JSON into the
// project's proto types (strictly: unknown fields fail), so what a computer
// parses with them is exactly what this server writes.
func TestShapesMatchProto(t *testing.T) {
	root := copyDocs(t)
	srv, c := startServer(t, root, Options{}, false)
	for _, d := range srv.lib.documents() {
		uri := dpe.DocURI(host, d.DocRef)
		text, _ := c.readText(uri)
		var sum smcpv1.DPEDocumentSummary
		if err := protojson.Unmarshal([]byte(text), &sum); err != nil || sum.GetDocRef() != d.DocRef || int(sum.GetPageCount()) != len(d.Pages) {
			t.Errorf("%s as DPEDocumentSummary: %v (%v)", uri, err, &sum)
		}
		var pages struct {
			Pages []json.RawMessage `json:"pages"`
		}
		c.readJSON(uri+"?depth=pages", &pages)
		for _, raw := range pages.Pages {
			var p smcpv1.DPEPageSummary
			if err := protojson.Unmarshal(raw, &p); err != nil || p.GetUri() == "" {
				t.Errorf("%s page as DPEPageSummary: %v", uri, err)
			}
		}
		for i := range d.Pages {
			var page struct {
				Elements []json.RawMessage `json:"elements"`
			}
			c.readJSON(dpe.PageURI(host, d.DocRef, i), &page)
			for _, raw := range page.Elements {
				var e smcpv1.DPEElementDetail
				if err := protojson.Unmarshal(raw, &e); err != nil || e.GetContent() == nil {
					t.Errorf("%s page %d element as DPEElementDetail: %v", uri, i, err)
					continue
				}
				text, _ := c.readText(dpe.ElementURI(host, d.DocRef, e.GetElementId()))
				var detail smcpv1.DPEElementDetail
				if err := protojson.Unmarshal([]byte(text), &detail); err != nil || int(detail.GetPageIndex()) != i {
					t.Errorf("%s level 3 as DPEElementDetail: %v", e.GetElementId(), err)
				}
			}
		}
	}
}
