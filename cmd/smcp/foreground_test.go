//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// `make run` in a terminal, stopped with Ctrl-C: make runs the demo under a
// pseudo-terminal as a shell with job control runs a job (its own session
// and group, the terminal's foreground group), the test types ^C once the
// banner is out, and make must exit 0 without reporting an interrupt, the
// demo having stopped in order. Without takeForeground the terminal's
// SIGINT reaches make too, which then exits 130 with "*** [...] Interrupt".
func TestMakeRunCtrlC(t *testing.T) {
	makePath := testdeps.Program(t, "make", "make")
	root := copyExamples(t)
	dir := t.TempDir()
	makefile := fmt.Sprintf("run:\n\t%q demo --listen 127.0.0.1:0 --root %q --log-level warn\n", os.Args[0], root)
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}

	master, slave := openPTY(t)
	cmd := exec.Command(makePath, "run")
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "SMCP_API_KEY"), "SMCP_TEST_MAIN=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	var mu sync.Mutex
	var out bytes.Buffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil { // EIO once the last holder of the terminal has gone
				return
			}
		}
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}

	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(output(), "Ctrl-C stops the demo.") {
		select {
		case err := <-exited:
			<-readDone
			t.Fatalf("make run exited before the demo was ready: %v\n%s", err, output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner from make run:\n%s", output())
		}
	}
	if _, err := master.Write([]byte{0x03}); err != nil { // ^C, as typed
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		<-readDone
		text := output()
		if err != nil {
			t.Fatalf("make run after Ctrl-C: %v (want exit status 0)\n%s", err, text)
		}
		if strings.Contains(text, "Interrupt") || strings.Contains(text, "make: ***") {
			t.Errorf("make reported the interrupt:\n%s", text)
		}
		if !strings.Contains(text, "smcp demo: stopped") {
			t.Errorf("the demo did not stop in order:\n%s", text)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("make run still running two minutes after Ctrl-C:\n%s", output())
	}
}

// openPTY opens a pseudo-terminal pair (as posix_openpt, unlockpt and
// ptsname do).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}
