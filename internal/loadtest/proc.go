package loadtest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is USER_HZ, 100 on every Linux this runs on.
const clockTick = 10 * time.Millisecond

// ProcSample is one reading of a process from /proc.
type ProcSample struct {
	CPU time.Duration // user + system
	Sys time.Duration // system
	RSS int64         // bytes
	// IO counts the read and write system calls (syscr + syscw of
	// /proc/<pid>/io: read, write and their vector forms, sockets
	// included); 0 when unreadable.
	IO int64
}

// ReadProc reads the CPU time, resident set and read/write system calls of
// pid ("self" for this process) from /proc/<pid>/stat, status and io.
func ReadProc(pid string) (ProcSample, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ProcSample{}, fmt.Errorf("loadtest: read /proc/%s/stat: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: fields count from after ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ProcSample{}, fmt.Errorf("loadtest: /proc/%s/stat: unexpected format", pid)
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, stime field 15.
	if len(f) < 13 {
		return ProcSample{}, fmt.Errorf("loadtest: /proc/%s/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return ProcSample{}, fmt.Errorf("loadtest: /proc/%s/stat: bad utime/stime", pid)
	}
	s := ProcSample{CPU: time.Duration(utime+stime) * clockTick, Sys: time.Duration(stime) * clockTick, IO: readIO(pid)}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return ProcSample{}, fmt.Errorf("loadtest: read /proc/%s/status: %w", pid, err)
	}
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
			if err != nil {
				return ProcSample{}, fmt.Errorf("loadtest: /proc/%s/status VmRSS: %w", pid, err)
			}
			s.RSS = kb << 10
		}
	}
	return s, nil
}

// readIO sums syscr and syscw of /proc/<pid>/io.
func readIO(pid string) int64 {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return 0
	}
	var n int64
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(": "))
		if ok && (bytes.Equal(k, []byte("syscr")) || bytes.Equal(k, []byte("syscw"))) {
			c, _ := strconv.ParseInt(string(v), 10, 64)
			n += c
		}
	}
	return n
}

// LoadAvg is the first field of /proc/loadavg ("" when unreadable).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return ""
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}
