//go:build !(linux || darwin)

package main

import "log/slog"

// takeForeground is a no-op where the demo does not manage its terminal's
// process groups (see foreground_unix.go).
func takeForeground(*slog.Logger) (restore func()) { return func() {} }
