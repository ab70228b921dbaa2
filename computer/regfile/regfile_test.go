//go:build unix

package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// A FIFO is refused at once, by name and inside an os.Root, and a regular
// file is read as usual. Opening the FIFO plainly would wait for a writer.
func TestFIFORefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Frees an open that did block (the test then fails, but ends).
	t.Cleanup(func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, open := range map[string]func(string) (*os.File, error){
		"Open":   func(n string) (*os.File, error) { f, _, err := Open(filepath.Join(dir, n)); return f, err },
		"OpenIn": func(n string) (*os.File, error) { f, _, err := OpenIn(root, n); return f, err },
	} {
		done := make(chan error, 1)
		go func() {
			f, err := open("pipe")
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		var got error
		testwait.Until(t, name+" of a FIFO to return", func() bool {
			select {
			case got = <-done:
				return true
			default:
				return false
			}
		})
		if !errors.Is(got, ErrNotRegular) {
			t.Errorf("%s(fifo) = %v, want ErrNotRegular", name, got)
		}
		f, err := open("file")
		if err != nil {
			t.Fatalf("%s(file): %v", name, err)
		}
		b := make([]byte, 8)
		if n, err := f.ReadAt(b, 0); n != 4 || string(b[:n]) != "data" {
			t.Errorf("%s(file) read %q %v", name, b[:n], err)
		}
		f.Close()
	}
}
