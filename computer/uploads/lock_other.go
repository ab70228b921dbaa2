//go:build !unix && !windows

package uploads

import (
	"errors"
	"os"
)

// tryLock cannot lock here: orphans are left in place rather than risk
// removing another process's upload.
func tryLock(*os.File) (bool, error) { return false, errors.New("no file locks on this system") }
