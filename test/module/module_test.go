// Package module checks the module as those who do not build it from a
// clone get it: through a module proxy, where Go applies no replace
// directive of ours. The patched Socket.IO and MCP go-sdk code must travel
// as this module's own packages (internal/fork), so that `go install
// .../cmd/smcp@version` builds and a program importing agent links the
// patched Socket.IO client.
package module

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

const modPath = "github.com/smcpgw/smcp-gateway"

// upstream are the modules this one forks: requiring one means some import
// was written against the upstream path and builds the unpatched code
// (tools/fork-imports brings it onto the fork).
var upstream = []string{"github.com/zishang520/socket.io/", "github.com/modelcontextprotocol/go-sdk"}

// enginePkg is the patched Engine.IO client; raceTests are its tests of the
// upgrade window (PATCHED.md, "The upgrade window"), each failing on
// upstream's code.
const (
	enginePkg = modPath + "/internal/fork/socketio/clients/engine"
	raceTests = "^(TestPauseSeesPollAnsweredMeanwhile|TestNoPollAfterPause|TestFlushRacingUpgradeIsDelivered)$"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestGoModHasNoReplace(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replace {
		t.Errorf("go.mod: replace %s => %s: a module that imports this one would not get it", r.Old.Path, r.New.Path)
	}
	for _, r := range f.Require {
		for _, u := range upstream {
			if strings.HasPrefix(r.Mod.Path, u) {
				t.Errorf("go.mod requires %s %s, which internal/fork carries patched: run tools/fork-imports", r.Mod.Path, r.Mod.Version)
			}
		}
	}
}

// TestInstallAndImportFromProxy serves the working tree (what git tracks
// and does not ignore, committed or not) from a module proxy on disk at a
// pseudo-version, and, with that proxy in front of the usual ones:
//   - `go install .../cmd/smcp@version` builds, and the binary's build
//     information lists no upstream Socket.IO or go-sdk module;
//   - a separate module whose program imports agent builds, links the
//     patched engine client (go list -deps), and the upgrade-window race
//     tests of that client pass as that module builds it.
func TestInstallAndImportFromProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the module twice from a module proxy: a minute or more")
	}
	goBin := testdeps.Program(t, "go", "golang")
	git := testdeps.Program(t, "git", "git")
	root := repoRoot(t)
	// End the go commands before the test binary's own timeout would end
	// it and leave them running.
	deadline := time.Now().Add(15 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-30*time.Second).Before(deadline) {
		deadline = d.Add(-30 * time.Second)
	}
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()

	files := treeFiles(t, git, root)
	version := pseudoVersion(t, git, files)
	proxy := t.TempDir()
	writeProxy(t, proxy, root, files, version)

	work := t.TempDir()
	env := goEnv(t, ctx, goBin, proxy, work, version)
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = dir
		cmd.Env = env
		// Interrupted, the go command stops the compilers it started.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}

	// -race, as make test builds: the dependencies come from its build
	// cache; without it a cold run compiles all of them a second time.
	run(work, "install", "-race", modPath+"/cmd/smcp@"+version)
	bin := filepath.Join(work, "bin", "smcp")
	info := run(work, "version", "-m", bin)
	if !slices.ContainsFunc(strings.Split(info, "\n"), func(line string) bool {
		f := strings.Fields(line)
		return len(f) >= 3 && f[0] == "mod" && f[1] == modPath && f[2] == version
	}) {
		t.Errorf("go version -m smcp: main module %s %s not found:\n%s", modPath, version, info)
	}
	checkNoUpstream(t, "smcp", info)

	importer := filepath.Join(work, "importer")
	if err := os.Mkdir(importer, 0o755); err != nil {
		t.Fatal(err)
	}
	goMod := fmt.Sprintf("module example.com/importer\n\ngo 1.26\n\nrequire %s %s\n", modPath, version)
	// This module's go.sum holds the sums of every module the importer's
	// graph shares with it; the proxy's module itself is GONOSUMDB.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	const mainGo = `// Command importer dials a gateway with the agent package.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

func main() {
	a, err := agent.Dial(context.Background(), sioclient.Options{URL: os.Args[1]}, "importer")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	a.Close()
}
`
	for name, data := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sums, "main.go": []byte(mainGo)} {
		if err := os.WriteFile(filepath.Join(importer, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(importer, "mod", "tidy")
	run(importer, "build", "-race", "-o", filepath.Join(work, "importer.bin"), ".")
	checkNoUpstream(t, "importer", run(work, "version", "-m", filepath.Join(work, "importer.bin")))
	if deps := strings.Fields(run(importer, "list", "-deps", ".")); !slices.Contains(deps, enginePkg) {
		t.Fatalf("the importer does not link %s; its packages:\n%s", enginePkg, strings.Join(deps, "\n"))
	}
	out := run(importer, "test", "-race", "-count=1", "-v", "-run", raceTests, enginePkg)
	for _, name := range []string{"TestPauseSeesPollAnsweredMeanwhile", "TestNoPollAfterPause", "TestFlushRacingUpgradeIsDelivered"} {
		if !strings.Contains(out, "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass in the importer's build:\n%s", name, out)
		}
	}
}

// checkNoUpstream fails if a binary's build information lists a module this
// one forks: the binary would have been built with the unpatched code.
func checkNoUpstream(t *testing.T, name, info string) {
	t.Helper()
	for _, line := range strings.Split(info, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "dep" {
			continue
		}
		for _, u := range upstream {
			if strings.HasPrefix(fields[1], u) {
				t.Errorf("%s is built with upstream %s", name, strings.Join(fields[1:], " "))
			}
		}
	}
}

// treeFiles lists the working tree as git sees it: tracked files that
// still exist and untracked ones not ignored (node_modules, bin/, ...).
func treeFiles(t *testing.T, git, root string) []string {
	t.Helper()
	cmd := exec.Command(git, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// pseudoVersion names the tree by its content, as a commit hash would, at
// the time of the commit it is on: the same tree gets the same version, and
// a second run finds its packages in the build cache.
func pseudoVersion(t *testing.T, git string, files []string) string {
	t.Helper()
	root := repoRoot(t)
	cmd := exec.Command(git, "show", "-s", "--format=%ct", "HEAD")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git show HEAD: %v", err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("git show HEAD: commit time %q: %v", out, err)
	}
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f)
		if fi, err := os.Lstat(filepath.Join(root, f)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%d\x00", len(data))
		h.Write(data)
	}
	return module.PseudoVersion("v0", "", time.Unix(sec, 0), hex.EncodeToString(h.Sum(nil))[:12])
}

// writeProxy lays out a GOPROXY directory serving the tree at version.
func writeProxy(t *testing.T, proxy, root string, files []string, version string) {
	t.Helper()
	dir := filepath.Join(proxy, modPath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	var zfiles []modzip.File
	for _, f := range files {
		zfiles = append(zfiles, treeFile{root: root, path: f})
	}
	if err := modzip.Create(zf, module.Version{Path: modPath, Version: version}, zfiles); err != nil {
		t.Fatalf("module zip: %v", err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	stamp, err := module.PseudoVersionTime(version)
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, stamp})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{version + ".mod": goMod, version + ".info": info, "list": []byte(version + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// goEnv is the go command's environment for a user of the module: the proxy
// on disk in front of the usual GOPROXY, GOBIN under work, no workspace, no
// GOFLAGS of ours; only this module is exempt from the checksum database.
// The module cache is this machine's, so that the dependencies are neither
// fetched nor compiled again (the build cache knows them by their path):
// what the test adds to it, this module at version, is removed after.
func goEnv(t *testing.T, ctx context.Context, goBin, proxy, work, version string) []string {
	t.Helper()
	out, err := exec.CommandContext(ctx, goBin, "env", "GOPROXY", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[1] == "" {
		t.Fatalf("go env GOPROXY GOMODCACHE: %q", out)
	}
	proxies := "file://" + filepath.ToSlash(proxy)
	if lines[0] != "" && lines[0] != "off" {
		proxies += "," + lines[0]
	}
	modcache := lines[1]
	t.Cleanup(func() {
		escaped, err := module.EscapePath(modPath)
		if err != nil {
			t.Error(err)
			return
		}
		removeAll(t, filepath.Join(modcache, escaped+"@"+version))
		dl := filepath.Join(modcache, "cache", "download", escaped, "@v")
		for _, name := range []string{version + ".info", version + ".mod", version + ".zip", version + ".ziphash", version + ".lock", version + ".partial", "list"} {
			if err := os.Remove(filepath.Join(dl, name)); err != nil && !os.IsNotExist(err) {
				t.Error(err)
			}
		}
		// The folders made for it, if nothing else is in them.
		for _, dir := range []string{dl, filepath.Dir(dl), filepath.Dir(filepath.Dir(dl)), filepath.Dir(filepath.Join(modcache, escaped))} {
			_ = os.Remove(dir)
		}
	})
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"GOFLAGS", "GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GOBIN", "GOWORK", "GOTOOLCHAIN"}, name)
	})
	return append(env,
		"GOPROXY="+proxies,
		"GONOSUMDB="+modPath,
		"GOBIN="+filepath.Join(work, "bin"),
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)
}

// removeAll removes a tree of the module cache, which the go command
// leaves read-only.
func removeAll(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		t.Error(err)
	}
}

// treeFile is a file of the working tree for modzip.Create.
type treeFile struct{ root, path string }

func (f treeFile) Path() string                 { return f.path }
func (f treeFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.path)) }
func (f treeFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.path)) }
