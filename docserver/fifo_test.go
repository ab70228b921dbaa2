//go:build unix

package docserver

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer/regfile"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// A FIFO where the scan saw a document (swapped in since) is refused when
// read, at once: reading it used to wait for a writer, forever.
func TestReadFIFORefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "notes.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	l, err := newLibrary(dir, Options{MaxFileSize: DefaultMaxFileSize}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	done := make(chan error, 1)
	go func() { _, err := l.read("notes.md"); done <- err }()
	var got error
	testwait.Until(t, "the read of a FIFO to return", func() bool {
		select {
		case got = <-done:
			return true
		default:
			return false
		}
	})
	if !errors.Is(got, regfile.ErrNotRegular) {
		t.Fatalf("read = %v, want not a regular file", got)
	}
}
