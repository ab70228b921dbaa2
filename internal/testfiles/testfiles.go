// Package testfiles writes files for tests that watch a folder.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces path atomically (a hidden temporary file, then a rename),
// so that a watcher never sees it half written: one edit is one change, and
// the notifications a test counts are exactly those of the edit.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
