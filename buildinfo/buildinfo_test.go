package buildinfo

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/smcpgw/smcp-gateway", Version: "v0.0.0-20261126090000-abcdef012345+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abcdef0123456789"},
			{Key: "vcs.time", Value: "2026-11-26T09:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	noVCS := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/smcpgw/smcp-gateway", Version: Devel}}
	release := stamp{version: "v1.2.3", revision: "0123456789abcdef", date: "2026-11-27T10:00:00Z"}
	for _, tc := range []struct {
		name string
		s    stamp
		bi   *debug.BuildInfo
		want Info
	}{
		{"stamp wins over VCS", release, vcs, Info{Version: "v1.2.3", GoVersion: "go1.26.8", Revision: "0123456789abcdef", Time: "2026-11-27T10:00:00Z"}},
		{"stamp without VCS", release, noVCS, Info{Version: "v1.2.3", GoVersion: "go1.26.8", Revision: "0123456789abcdef", Time: "2026-11-27T10:00:00Z"}},
		{"version stamp only keeps VCS revision", stamp{version: "v1.2.3"}, vcs, Info{Version: "v1.2.3", GoVersion: "go1.26.8", Revision: "abcdef0123456789-dirty", Time: "2026-11-26T09:00:00Z"}},
		{"VCS", stamp{}, vcs, Info{Version: "v0.0.0-20261126090000-abcdef012345+dirty", GoVersion: "go1.26.8", Revision: "abcdef0123456789-dirty", Time: "2026-11-26T09:00:00Z"}},
		{"nothing known", stamp{}, noVCS, Info{Version: Devel, GoVersion: "go1.26.8", Revision: "unknown"}},
		{"no build info", stamp{}, nil, Info{Version: Devel, GoVersion: "go1.x", Revision: "unknown"}},
	} {
		if got := resolve(tc.s, tc.bi, "go1.x"); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// The -X flags documented in the package comment reach Read in a real binary
// built without VCS stamping, as a release build from a source archive is;
// without them that binary says "(devel)".
func TestLinkerStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	const pkg = "github.com/smcpgw/smcp-gateway/buildinfo"
	build := func(name string, ldflags string) Info {
		t.Helper()
		bin := filepath.Join(dir, name)
		out, err := exec.Command("go", "build", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, "./testdata/printinfo").CombinedOutput()
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		out, err = exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var info Info
		if err := json.Unmarshal(out, &info); err != nil {
			t.Fatalf("%s: %v in %q", name, err, out)
		}
		return info
	}
	got := build("stamped", "-s -w -X "+pkg+".version=v9.8.7 -X "+pkg+".revision=feedface -X "+pkg+".date=2026-11-27T10:00:00Z")
	if got.Version != "v9.8.7" || got.Revision != "feedface" || got.Time != "2026-11-27T10:00:00Z" {
		t.Errorf("stamped build: %+v", got)
	}
	got = build("plain", "")
	if got.Version != Devel || got.Revision != "unknown" || got.Time != "" {
		t.Errorf("unstamped build without VCS: %+v", got)
	}
}
