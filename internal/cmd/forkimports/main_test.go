package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A file written against the upstream paths is brought onto the forks (the
// major version suffix dropped, sub-packages kept) and into the group of the
// module's own imports, other imports and the rest of the file are left
// alone, and a second run changes nothing.
func TestRewrite(t *testing.T) {
	const in = `package p

import (
	"fmt"

	socket "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zishang520/socket.io/v3/pkg/types"
	"github.com/zishang520/socket.io/v3x/other"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc" // why

	"github.com/smcpgw/smcp-gateway/smcp"
)

// "github.com/zishang520/socket.io/v3/pkg/types" in a comment stays.
var _ = fmt.Sprint(socket.Server{}, mcp.Server{}, types.Buffer{}, other.X, jsonrpc.ID{}, smcp.X)
`
	const want = `package p

import (
	"fmt"

	"github.com/zishang520/socket.io/v3x/other"

	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/jsonrpc" // why
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	socket "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// "github.com/zishang520/socket.io/v3/pkg/types" in a comment stays.
var _ = fmt.Sprint(socket.Server{}, mcp.Server{}, types.Buffer{}, other.X, jsonrpc.ID{}, smcp.X)
`
	path := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if found, err := rewrite(path, true); err != nil || !found {
		t.Fatalf("dry run: found %v, err %v; want the upstream imports found", found, err)
	}
	for run := 1; run <= 2; run++ {
		changed, err := rewrite(path, false)
		if err != nil {
			t.Fatal(err)
		}
		if changed != (run == 1) {
			t.Errorf("run %d: changed = %v", run, changed)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("run %d:\n%s\nwant:\n%s", run, got, want)
		}
	}
}

// Without a group of the module's own imports, and for an import outside
// parentheses, the path is rewritten where it stands.
func TestRewriteInPlace(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{
		in:   "package p\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/modelcontextprotocol/go-sdk/mcp\"\n)\n",
		want: "package p\n\nimport (\n\t\"fmt\"\n\n\t\"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp\"\n)\n",
	}, {
		in:   "package p\n\nimport \"github.com/modelcontextprotocol/go-sdk/mcp\"\n\nimport (\n\t\"github.com/smcpgw/smcp-gateway/smcp\"\n)\n",
		want: "package p\n\nimport \"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp\"\n\nimport (\n\t\"github.com/smcpgw/smcp-gateway/smcp\"\n)\n",
	}} {
		path := filepath.Join(t.TempDir(), "p.go")
		if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := rewrite(path, false); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
		}
	}
}
