//go:build unix

package uploads

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive advisory lock on f without waiting: false
// when another open file (another process's upload) holds it. The lock
// ends when f is closed.
func tryLock(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return false, nil
	}
	if lerr != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), lerr)
	}
	return true, nil
}
