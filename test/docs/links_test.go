// Package docs checks the repository's Markdown: every relative link
// resolves to a file or folder, and every #fragment to a heading (or an
// explicit anchor) of its target, as GitHub renders them.
package docs

import (
	"bufio"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The Markdown checked: the README and everything under docs/, plus every
// other tracked .md of this project (examples/docs/ are sample documents,
// not documentation).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "examples/docs/") || strings.Contains(f, "node_modules/") {
			continue
		}
		files = append(files, f)
	}
	return files
}

func TestLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	for _, must := range []string{"README.md", "docs/API.md", "docs/ARCHITECTURE.md", "docs/PROTOCOL.md", "docs/TOUR.md"} {
		found := false
		for _, f := range files {
			found = found || f == must
		}
		if !found {
			t.Errorf("%s is not checked (missing?)", must)
		}
	}
	anchors := map[string]map[string]bool{} // file -> its anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if doc, err := os.ReadFile(path); err == nil {
			a = headingAnchors(string(doc))
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(doc)) {
			u, err := url.Parse(l.target)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", f, l.line, l.target, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // the web is not checked: the machines here cannot reach it
			}
			checked++
			target := filepath.Join(root, f)
			if u.Path != "" {
				target = filepath.Join(filepath.Dir(target), filepath.FromSlash(u.Path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: %s: no such file or folder", f, l.line, l.target)
					continue
				}
			}
			if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if !anchorsOf(target)[u.Fragment] {
				t.Errorf("%s:%d: %s: no heading with anchor #%s", f, l.line, l.target, u.Fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the parser is broken")
	}
	t.Logf("%d relative links in %d files", checked, len(files))
}

type link struct {
	target string
	line   int
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	// [text](target "title") and ![alt](target); text may hold one level of brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// HTML href="..." in inline HTML.
	href = regexp.MustCompile(`\bhref="([^"]+)"`)
)

// links returns the link targets of a Markdown document, outside code
// (the docs here put code in fences or backticks, not in indented blocks).
func links(doc string) []link {
	var out []link
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{inlineLink, refDef, href} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, link{target: m[1], line: n})
			}
		}
	}
	return out
}

var (
	headingLine = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	explicitID  = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkText    = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)`)
	htmlTag     = regexp.MustCompile(`<[^>]+>`)
)

// headingAnchors are the fragments GitHub gives a document's headings (and
// its explicit <a id> anchors).
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := headingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// Slug is GitHub's anchor of a heading: its rendered text in lower case,
// without punctuation but '-' and '_', spaces as '-'.
func Slug(heading string) string {
	text := linkText.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	for _, entity := range []string{"&lt;", "&gt;", "&amp;", "&quot;"} {
		text = strings.ReplaceAll(text, entity, "")
	}
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"A five-minute tour":                "a-five-minute-tour",
		"The Connect API":                   "the-connect-api",
		"smcp.v1.AgentService":              "smcpv1agentservice",
		"`make run`: the demo":              "make-run-the-demo",
		"Several gateway nodes (Redis)":     "several-gateway-nodes-redis",
		"[Unreleased]":                      "unreleased",
		"See [the API](docs/API.md) & more": "see-the-api--more",
		"1. The Finder":                     "1-the-finder",
		"snake_case stays":                  "snake_case-stays",
		"Unicode: Grüße":                    "unicode-grüße",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
	anchors := headingAnchors("# Title\n## Usage\n```\n# not a heading\n```\n## Usage\n<a id=\"custom\"></a>\n")
	for _, want := range []string{"title", "usage", "usage-1", "custom"} {
		if !anchors[want] {
			t.Errorf("anchor %q missing from %v", want, anchors)
		}
	}
	if anchors["not-a-heading"] {
		t.Error("a line in a code fence made an anchor")
	}
	got := links("[a](x.md) `[b](y.md)` ![c](img.png \"t\")\n```\n[d](z.md)\n```\n[ref]: docs/API.md#x\n<a href=\"h.md\">h</a>\n")
	var targets []string
	for _, l := range got {
		targets = append(targets, l.target)
	}
	if strings.Join(targets, " ") != "x.md img.png docs/API.md#x h.md" {
		t.Errorf("links: %v", targets)
	}
}

// The README opens with the project's two commands, `make run` then `make
// test`, in its first code block (a project rule: a newcomer sees them
// before anything else).
func TestReadmeOpensWithTheTwoCommands(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	var block []string
	for i, in := 0, false; i < len(lines) && i < 12; i++ {
		switch {
		case strings.HasPrefix(lines[i], "```") && !in:
			in = true
		case strings.HasPrefix(lines[i], "```"):
			i = len(lines)
		case in:
			block = append(block, lines[i])
		}
	}
	if len(block) < 2 || !strings.HasPrefix(block[0], "make run ") || !strings.HasPrefix(block[1], "make test ") {
		t.Fatalf("README.md's first lines must show `make run` then `make test` in a code block; its first block: %q", block)
	}
}
