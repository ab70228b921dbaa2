//go:build linux || darwin

package main

import (
	"log/slog"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// takeForeground puts the demo in a process group of its own and makes that
// group the terminal's foreground group, when it runs in the foreground of a
// terminal inside another program's group: under `make run`, Ctrl-C then
// reaches the demo (and the document server it starts) but not make, so the
// demo stops in order, exits 0, and make exits 0 instead of reporting an
// interrupt. The returned function hands the terminal back to the previous
// group; call it before exiting.
//
// Nothing is done when stdin is not a terminal, when the process is not in
// the terminal's foreground group, or when it already leads its group (a
// shell with job control started it directly).
//
// While the demo holds the terminal, Ctrl-Z is ignored: the shell waits on
// make, not on the demo, and could not resume a stopped demo.
func takeForeground(log *slog.Logger) (restore func()) {
	const tty = 0 // stdin
	pid, pgrp := syscall.Getpid(), syscall.Getpgrp()
	fg, err := unix.IoctlGetInt(tty, unix.TIOCGPGRP)
	if err != nil || fg != pgrp || pgrp == pid {
		return func() {}
	}
	if err := syscall.Setpgid(0, 0); err != nil {
		log.Debug("demo: own process group", "err", err)
		return func() {}
	}
	// A background group that sets the foreground group is sent SIGTTOU,
	// which would stop the demo: ignored while doing it.
	setForeground := func(g int) error {
		signal.Ignore(syscall.SIGTTOU)
		defer signal.Reset(syscall.SIGTTOU)
		return unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, g)
	}
	if err := setForeground(pid); err != nil {
		log.Debug("demo: terminal foreground", "err", err)
		_ = syscall.Setpgid(0, pgrp) // back in the group Ctrl-C reaches
		return func() {}
	}
	signal.Ignore(syscall.SIGTSTP)
	return func() {
		if err := setForeground(pgrp); err != nil {
			log.Debug("demo: terminal foreground back", "err", err)
		}
	}
}
