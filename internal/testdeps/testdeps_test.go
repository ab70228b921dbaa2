package testdeps_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// The tests that need podman, runc, nginx or chromium, on a machine without
// them (SMCP_TEST_DEPS_HIDE stands in for a PATH without them): each skips
// with a line naming what is missing, none fails, and go test passes. A new
// test that calls one of these programs without testdeps fails here instead
// of failing a newcomer's `make test`.
func TestMissingToolsSkipNamingThem(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on three packages")
	}
	goBin := testdeps.Program(t, "go", "golang")
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	// -race as make test builds: the packages come from its build cache
	// instead of a second, uninstrumented compilation of all of cmd/smcp.
	cmd := exec.CommandContext(ctx, goBin, "test", "-race", "-count=1", "-v",
		"-run", "^(TestImage|TestClusterExample|TestConsoleInBrowser)$",
		"./test/release", "./cmd/smcp", "./gateway/console")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "SMCP_TEST_DEPS=")
	}), "SMCP_TEST_DEPS_HIDE=podman,runc,nginx,chromium")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test with the tools hidden: %v\n%s", err, out)
	}
	for test, program := range map[string]string{
		"TestImage":            "podman",
		"TestClusterExample":   "nginx",
		"TestConsoleInBrowser": "chromium",
	} {
		skip := regexp.MustCompile(`(?m)^\s+\S+_test\.go:\d+: ` + testdeps.SkipPrefix + program + ` is not installed \(apt-get install ` + program)
		if !bytes.Contains(out, []byte("--- SKIP: "+test+" ")) || !skip.Match(out) {
			t.Errorf("%s did not skip naming %s:\n%s", test, program, out)
		}
	}
}
