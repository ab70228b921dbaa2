//go:build linux

package skills

import (
	"io/fs"
	"strconv"
	"syscall"
)

func fileID(st fs.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(s.Dev), 10) + ":" + strconv.FormatUint(uint64(s.Ino), 10) + ":" +
			strconv.FormatInt(s.Ctim.Sec, 10) + "." + strconv.FormatInt(s.Ctim.Nsec, 10)
	}
	return ""
}
