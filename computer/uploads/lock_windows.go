//go:build windows

package uploads

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive lock on f's first byte without waiting:
// false when another handle (another process's upload) holds it. The lock
// ends when f is closed.
func tryLock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		lerr = windows.LockFileEx(windows.Handle(fd), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY,
			0, 1, 0, &windows.Overlapped{})
	}); err != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if errors.Is(lerr, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	if lerr != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), lerr)
	}
	return true, nil
}
