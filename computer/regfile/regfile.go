// Package regfile opens files that must be regular files (what a computer
// serves from a path an agent names) without ever blocking on one that is
// not: opening a FIFO for reading waits for a writer, forever if none comes,
// and holds an OS thread all that time.
package regfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is a path that names something other than a regular file
// (a FIFO, a device, a socket, a folder).
var ErrNotRegular = errors.New("not a regular file")

// Open opens name for reading. It opens without blocking (O_NONBLOCK where
// the platform has it) and refuses anything fstat does not call regular,
// with an error wrapping ErrNotRegular; the FileInfo is returned with it, so
// that a caller can tell a folder from the rest.
func Open(name string) (*os.File, fs.FileInfo, error) {
	return check(os.OpenFile(name, os.O_RDONLY|nonblock, 0))
}

// OpenIn is Open inside root (os.Root: no escape through symlinks).
func OpenIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	return check(root.OpenFile(name, os.O_RDONLY|nonblock, 0))
}

func check(f *os.File, err error) (*os.File, fs.FileInfo, error) {
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, st, fmt.Errorf("%s: %w (%s)", st.Name(), ErrNotRegular, kind(st.Mode()))
	}
	return f, st, nil
}

// kind names a file type for an error message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	default:
		return "type " + m.Type().String()
	}
}
