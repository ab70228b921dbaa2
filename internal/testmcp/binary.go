package testmcp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithBinary is a TestMain body: it builds ./cmd/testmcp into a
// temporary folder, stores its path in *bin, runs the tests and removes it.
func RunWithBinary(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "testmcp")
	if err != nil {
		panic(err)
	}
	*bin = filepath.Join(dir, "testmcp")
	out, err := exec.Command("go", "build", "-o", *bin, "github.com/smcpgw/smcp-gateway/internal/testmcp/cmd/testmcp").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build testmcp: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
