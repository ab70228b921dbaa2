// Package buildinfo describes the running binary from the information the Go
// toolchain embeds (runtime/debug.ReadBuildInfo): module version, Go version
// and the VCS revision it was built from. `smcp version` prints it and the
// gateway exports it as the smcp_build_info metric.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info is what is known about the binary; unknown parts are "unknown".
type Info struct {
	// Version is the main module's version: a tag or pseudo-version for
	// `go install ...@version`, "(devel)" for a build in a checkout.
	Version string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Revision is the VCS commit, with "-dirty" when the work tree had
	// changes; "unknown" when built without VCS stamping (-buildvcs=false).
	Revision string
	// Time is the commit time (RFC 3339), "" when unknown.
	Time string
}

// Read returns the binary's Info.
func Read() Info {
	info := Info{Version: "unknown", GoVersion: runtime.Version(), Revision: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "unknown" {
		info.Revision += "-dirty"
	}
	return info
}
