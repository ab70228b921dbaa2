// Command forkimports rewrites the imports of upstream modules that this
// module carries as patched forks (internal/fork) to the forks' own import
// paths, in every .go file under the given directories (default "."). Go
// applies a replace directive of the main module only, so the patches travel
// with the module only as its own packages: code written against the
// upstream path (another branch, a copied example) is brought onto the fork
// by running this again. It is idempotent. tools/fork-imports runs it and
// then `go mod tidy`:
//
//	go run ./internal/cmd/forkimports [-l] [dir ...]
//
// -l lists the files that import an upstream path, rewrites nothing, and
// exits 1 if there is one.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const module = "github.com/smcpgw/smcp-gateway"

// forks maps each upstream module path to the import path of its fork. A
// module's packages keep their paths below it, less the major version
// suffix, as in the upstream repository's tree.
var forks = []struct{ upstream, fork string }{
	{"github.com/zishang520/socket.io/v3", module + "/internal/fork/socketio"},
	{"github.com/zishang520/socket.io/servers/socket/v3", module + "/internal/fork/socketio/servers/socket"},
	{"github.com/zishang520/socket.io/servers/engine/v3", module + "/internal/fork/socketio/servers/engine"},
	{"github.com/zishang520/socket.io/clients/socket/v3", module + "/internal/fork/socketio/clients/socket"},
	{"github.com/zishang520/socket.io/clients/engine/v3", module + "/internal/fork/socketio/clients/engine"},
	{"github.com/zishang520/socket.io/parsers/engine/v3", module + "/internal/fork/socketio/parsers/engine"},
	{"github.com/zishang520/socket.io/parsers/socket/v3", module + "/internal/fork/socketio/parsers/socket"},
	{"github.com/modelcontextprotocol/go-sdk", module + "/internal/fork/mcpsdk"},
}

// forkPath returns the fork's import path for an upstream one.
func forkPath(path string) (string, bool) {
	for _, f := range forks {
		if path == f.upstream {
			return f.fork, true
		}
		if rest, ok := strings.CutPrefix(path, f.upstream+"/"); ok {
			return f.fork + "/" + rest, true
		}
	}
	return "", false
}

func main() {
	list := flag.Bool("l", false, "list the files importing an upstream path; rewrite nothing")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	found := false
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				// What the go command does not build: testdata, hidden
				// and underscore directories, and npm's trees.
				name := d.Name()
				if path != dir && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") {
				return nil
			}
			changed, err := rewrite(path, *list)
			if err != nil {
				return err
			}
			if changed {
				found = true
				fmt.Println(path)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "forkimports:", err)
			os.Exit(1)
		}
	}
	if *list && found {
		os.Exit(1)
	}
}

// rewrite replaces the upstream import paths of one file (or, with dryRun,
// only reports whether it has any). A rewritten import moves to the group of
// this module's own imports when the file has one (a one-line import without
// a comment of its own); the file is then formatted, which sorts each group.
func rewrite(path string, dryRun bool) (bool, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return false, fmt.Errorf("parse %s: %w", path, err)
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	line := func(p token.Pos) int { return fset.Position(p).Line - 1 }
	// ownLast is the last line of the file's group of its own imports.
	// Only imports inside parentheses move, and only into parentheses.
	ownLast := -1
	grouped := map[*ast.ImportSpec]bool{}
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.GenDecl)
		if !ok || d.Tok != token.IMPORT || !d.Lparen.IsValid() {
			continue
		}
		for _, s := range d.Specs {
			spec := s.(*ast.ImportSpec)
			grouped[spec] = true
			p, _ := strconv.Unquote(spec.Path.Value)
			if _, fork := forkPath(p); !fork && (p == module || strings.HasPrefix(p, module+"/")) {
				ownLast = max(ownLast, line(spec.End()))
			}
		}
	}
	moved := map[int][]byte{} // line index -> lines inserted after it
	found := false
	for _, spec := range f.Imports {
		old, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			return false, fmt.Errorf("%s: import %s: %w", path, spec.Path.Value, err)
		}
		to, ok := forkPath(old)
		if !ok {
			continue
		}
		found = true
		i := line(spec.Pos())
		lines[i] = bytes.Replace(lines[i], []byte(spec.Path.Value), []byte(strconv.Quote(to)), 1)
		if ownLast >= 0 && grouped[spec] && spec.Doc == nil && i == line(spec.End()) {
			moved[ownLast] = append(moved[ownLast], lines[i]...)
			lines[i] = nil
		}
	}
	if !found || dryRun {
		return found, nil
	}
	var out []byte
	for i, l := range lines {
		out = append(out, l...)
		out = append(out, moved[i]...)
	}
	formatted, err := format.Source(out)
	if err != nil {
		return false, fmt.Errorf("format %s: %w", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	if err := os.WriteFile(path, formatted, info.Mode().Perm()); err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}
