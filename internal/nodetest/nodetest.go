// Package nodetest prepares the Node.js programs that interop tests drive
// (official socket.io-client, MCP and Connect clients from npm).
package nodetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// installs serialises npm ci per directory: several tests of one binary may
// share a Node project, and concurrent installs into one node_modules corrupt it.
var installs sync.Map // dir → *sync.Once

// Require returns the absolute path of the Node project in dir with its
// node_modules installed from the committed lockfile (npm ci), installing it
// when missing. Without node the test is skipped, except under CI (CI=true),
// where a missing toolchain is a failure: an interop test must not pass by
// not running.
func Require(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("nodetest: %v", err)
	}
	testdeps.Program(t, "node", "nodejs")
	testdeps.Program(t, "npm", "npm")
	once, _ := installs.LoadOrStore(abs, new(sync.Once))
	var installErr error
	var out []byte
	once.(*sync.Once).Do(func() {
		if _, err := os.Stat(filepath.Join(abs, "node_modules", ".package-lock.json")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = abs
		out, installErr = cmd.CombinedOutput()
	})
	if installErr != nil {
		t.Fatalf("nodetest: npm ci in %s: %v\n%s", abs, installErr, out)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules")); err != nil {
		t.Fatalf("nodetest: %s has no node_modules after npm ci", abs)
	}
	return abs
}

// EverythingServer returns the entry point of the npm package
// @modelcontextprotocol/server-everything pinned in the Node project
// npmMCP (the repository's test/npm-mcp, relative to the test's package),
// installed from its lockfile as Require does.
func EverythingServer(t testing.TB, npmMCP string) string {
	t.Helper()
	entry := filepath.Join(Require(t, npmMCP), "node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("server-everything not installed: %v", err)
	}
	return entry
}
