// Package testdeps is how a test asks for something from outside Go: a
// program (redis-server, chromium, podman, nginx...) or Python modules of
// Debian's python3. Present, the test gets its path and goes on. Missing, the
// test is skipped with one line naming what is missing and the Debian package
// that brings it (tools/test-deps installs them all), so that `make test` is
// green on a machine without them and says exactly what it did not run.
//
// Two environment variables change that:
//   - SMCP_TEST_DEPS=require makes a missing one a failure instead: .ci/run
//     sets it, since CI installs everything and a skip there would be a pass
//     by not running.
//   - SMCP_TEST_DEPS_HIDE=name,name treats those programs as missing, so that
//     a test can check what the suite does on a machine without them.
package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// DebianPython is the python3 whose modules Debian's packages install (a
// python3 earlier on PATH, pyenv's say, does not see them).
const DebianPython = "/usr/bin/python3"

// Program returns the path of program, looked up on PATH and then at the
// usual paths given (nginx lives in /usr/sbin, which a user's PATH may
// lack). Missing, the test is skipped (or fails, see the package comment),
// naming pkg, the Debian package that brings it.
func Program(t testing.TB, program, pkg string, usual ...string) string {
	t.Helper()
	if !hidden(program) {
		if p, err := exec.LookPath(program); err == nil {
			return p
		}
		for _, p := range usual {
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	missing(t, fmt.Sprintf("%s is not installed (apt-get install %s, or tools/test-deps)", program, pkg))
	return ""
}

// Python checks that Debian's python3 imports modules (comma-separated, as
// in an import statement) and returns its path; pkgs names the Debian
// packages that bring them.
func Python(t testing.TB, modules, pkgs string) string {
	t.Helper()
	why := "python3 is hidden by SMCP_TEST_DEPS_HIDE"
	if !hidden("python3") {
		out, err := exec.Command(DebianPython, "-c", "import "+modules).CombinedOutput()
		if err == nil {
			return DebianPython
		}
		why = fmt.Sprintf("%s cannot import %s (%v: %s)", DebianPython, modules, err, lastLine(out))
	}
	missing(t, fmt.Sprintf("%s (apt-get install %s, or tools/test-deps)", why, pkgs))
	return ""
}

func hidden(program string) bool {
	return slices.Contains(strings.Split(os.Getenv("SMCP_TEST_DEPS_HIDE"), ","), program)
}

// SkipPrefix begins every skip line of this package, so that a run's skips
// for missing tools can be found (and counted) in `go test -v` output.
const SkipPrefix = "testdeps: "

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("SMCP_TEST_DEPS") == "require" {
		t.Fatal(SkipPrefix + why + "; SMCP_TEST_DEPS=require makes this a failure")
	}
	t.Skip(SkipPrefix + why)
}

// lastLine is the last line of a Python traceback: the error itself.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
