// Package buildinfo describes the running binary: the version a release build
// stamps into it with the linker, else what the Go toolchain embeds
// (runtime/debug.ReadBuildInfo: module version, Go version, VCS revision).
// `smcp version` prints it and the gateway exports it as the smcp_build_info
// metric.
//
// A release build sets the stamp (goreleaser and `make build` do):
//
//	go build -ldflags "-X github.com/smcpgw/smcp-gateway/buildinfo.version=v1.2.3 \
//	  -X github.com/smcpgw/smcp-gateway/buildinfo.revision=<commit> \
//	  -X github.com/smcpgw/smcp-gateway/buildinfo.date=<RFC 3339>" ./cmd/smcp
//
// so the binary knows its version wherever it was built: from a source
// archive, in a container, with -buildvcs=false.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set by the linker (-ldflags -X) in release builds; empty otherwise. They
// are variables only because -X can set nothing else; nothing writes them.
var (
	version  string
	revision string
	date     string
)

// Devel is the version of a build that knows none: no stamp, no module
// version, no VCS information.
const Devel = "(devel)"

// Info is what is known about the binary.
type Info struct {
	// Version is, in order: the release stamp; the main module's version
	// (a tag or pseudo-version for `go install ...@version`, or derived
	// from the checkout's VCS state by the go command); "(devel)".
	Version string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
	// Revision is the VCS commit, with "-dirty" when the work tree had
	// changes; "unknown" when neither a stamp nor VCS stamping
	// (-buildvcs=false) gave one.
	Revision string
	// Time is the commit (or, from a stamp, the build) time in RFC 3339;
	// "" when unknown.
	Time string
}

// Read returns the binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo() // nil when the binary has none
	return resolve(stamp{version: version, revision: revision, date: date}, bi, runtime.Version())
}

// stamp is what the linker set.
type stamp struct{ version, revision, date string }

// resolve merges the stamp with the embedded build information (nil when the
// binary has none); the stamp wins where it says something.
func resolve(s stamp, bi *debug.BuildInfo, goVersion string) Info {
	info := Info{Version: Devel, GoVersion: goVersion, Revision: "unknown"}
	if bi != nil {
		if v := bi.Main.Version; v != "" {
			info.Version = v
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		dirty := false
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				info.Revision = kv.Value
			case "vcs.time":
				info.Time = kv.Value
			case "vcs.modified":
				dirty = kv.Value == "true"
			}
		}
		if dirty && info.Revision != "unknown" {
			info.Revision += "-dirty"
		}
	}
	if s.version != "" {
		info.Version = s.version
	}
	if s.revision != "" {
		info.Revision = s.revision
	}
	if s.date != "" {
		info.Time = s.date
	}
	return info
}
