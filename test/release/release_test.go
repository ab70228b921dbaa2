// Package release checks what a release is made of: the goreleaser
// configuration and the Makefile's release flags, the container image (built
// and started with podman), and the systemd unit (systemd-analyze).
package release

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
)

// repoRoot is the repository root, two levels above this package.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

const buildinfoPkg = "github.com/smcpgw/smcp-gateway/buildinfo"

type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		Files []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		Algorithm string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

// stampVars are the linker variables named by -X in ldflags.
func stampVars(ldflags string) []string {
	var vars []string
	for _, m := range regexp.MustCompile(`-X\s+`+regexp.QuoteMeta(buildinfoPkg)+`\.(\w+)=`).FindAllStringSubmatch(ldflags, -1) {
		vars = append(vars, m[1])
	}
	slices.Sort(vars)
	return vars
}

// The goreleaser configuration builds what docs/INSTALL.md promises: smcp for
// Linux, macOS and Windows on amd64 and arm64, static, stripped, with the
// version stamp; its archives carry the license files; checksums are made.
// Its ldflags, with goreleaser's templates filled in, stamp a real binary;
// the Makefile's release flags (release-cross, image) stamp the same
// variables.
func TestGoreleaserConfig(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg goreleaserConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || len(cfg.Builds) != 1 {
		t.Fatalf("want goreleaser v2 with one build, got version %d and %d builds", cfg.Version, len(cfg.Builds))
	}
	b := cfg.Builds[0]
	if b.Main != "./cmd/smcp" || b.Binary != "smcp" {
		t.Errorf("build: main %q binary %q", b.Main, b.Binary)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0 (static binaries)", b.Env)
	}
	for _, os := range []string{"linux", "darwin", "windows"} {
		if !slices.Contains(b.Goos, os) {
			t.Errorf("goos %v lacks %s", b.Goos, os)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		if !slices.Contains(b.Goarch, arch) {
			t.Errorf("goarch %v lacks %s", b.Goarch, arch)
		}
	}
	if !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("flags %v: want -trimpath", b.Flags)
	}
	ldflags := strings.Join(b.Ldflags, " ")
	if !strings.Contains(ldflags, "-s -w") {
		t.Errorf("ldflags %q: want -s -w (stripped)", ldflags)
	}
	want := []string{"date", "revision", "version"}
	if got := stampVars(ldflags); !slices.Equal(got, want) {
		t.Errorf("goreleaser stamps %v, want %v", got, want)
	}
	for _, f := range []string{"LICENSE", "NOTICE", "CHANGELOG.md"} {
		if len(cfg.Archives) == 0 || !slices.Contains(cfg.Archives[0].Files, f) {
			t.Errorf("archives do not carry %s", f)
		} else if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("archives carry %s: %v", f, err)
		}
	}
	if cfg.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum algorithm %q", cfg.Checksum.Algorithm)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RELEASE_LDFLAGS = ((?:.*\\\n)*.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile has no RELEASE_LDFLAGS")
	}
	makeFlags := strings.ReplaceAll(strings.ReplaceAll(string(m[1]), "$(BUILDINFO)", buildinfoPkg), "\\\n", " ")
	if !strings.Contains(makeFlags, "-s -w") {
		t.Errorf("Makefile RELEASE_LDFLAGS %q: want -s -w", makeFlags)
	}
	if got := stampVars(makeFlags); !slices.Equal(got, want) {
		t.Errorf("Makefile stamps %v, want %v", got, want)
	}

	// goreleaser's templates as a tag build fills them in.
	filled := strings.NewReplacer("{{ .Version }}", "1.2.3", "{{ .FullCommit }}", "0123456789abcdef0123456789abcdef01234567",
		"{{ .CommitDate }}", "2026-11-26T10:00:00Z").Replace(ldflags)
	if strings.Contains(filled, "{{") {
		t.Fatalf("ldflags use a template this test does not fill in: %q", filled)
	}
	info := buildPrintinfo(t, root, strings.Fields(filled))
	if info["Version"] != "1.2.3" || info["Revision"] != "0123456789abcdef0123456789abcdef01234567" || info["Time"] != "2026-11-26T10:00:00Z" {
		t.Errorf("a binary built with goreleaser's ldflags reports %v", info)
	}
}

// buildPrintinfo builds buildinfo's printinfo program with the
// given ldflags, without VCS stamping, and returns what it prints.
func buildPrintinfo(t *testing.T, root string, ldflags []string) map[string]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "printinfo")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.Join(ldflags, " "), "-o", bin, "./buildinfo/testdata/printinfo")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build printinfo: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]string
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("printinfo: %v in %q", err, out)
	}
	return info
}

// `goreleaser check` on the configuration, when goreleaser is built already
// (bin/goreleaser, by `make release-check` or `make release-snapshot`):
// building it takes minutes, too long for every test run.
func TestGoreleaserCheck(t *testing.T) {
	root := repoRoot(t)
	bin := filepath.Join(root, "bin", "goreleaser")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/goreleaser is not built (make release-check builds it and runs this check)")
	}
	cmd := exec.Command(bin, "check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// The systemd unit passes `systemd-analyze verify` without a word (unknown
// keys and bad values are only warned about, with exit 0, so any output
// fails), and `systemd-analyze security` rates its exposure "OK" or better.
// verify insists that ExecStart's program exists: the copy checked names an
// existing executable instead of /usr/local/bin/smcp, nothing else changed.
func TestSystemdUnit(t *testing.T) {
	analyze := testdeps.Program(t, "systemd-analyze", "systemd")
	root := repoRoot(t)
	const name = "smcp-gateway.service"
	unit, err := os.ReadFile(filepath.Join(root, "examples", "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	const binary = "ExecStart=/usr/local/bin/smcp "
	if !bytes.Contains(unit, []byte(binary)) {
		t.Fatalf("the unit does not start %q", binary)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	checked := filepath.Join(dir, name)
	if err := os.WriteFile(checked, bytes.Replace(unit, []byte(binary), []byte("ExecStart="+self+" "), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", checked).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	out, err = exec.Command(analyze, "security", "--offline=true", "--no-pager", checked).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+) (\S+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
	}
	if level := string(m[2]); level != "OK" && level != "SAFE" {
		t.Errorf("exposure %s %s, want OK or SAFE:\n%s", m[1], level, out)
	}
	t.Logf("systemd-analyze security: exposure %s %s", m[1], m[2])
}

// The Containerfile's promises, read from it: a scratch image (nothing but
// the binary and the CA certificates), a numeric non-root user, the health
// check through the binary itself. TestImage builds and runs it where podman
// can; this check runs everywhere.
func TestContainerfile(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(raw), "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	has := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Errorf("Containerfile has no %q line", prefix)
		return ""
	}
	if l := has("FROM "); l != "FROM scratch" {
		t.Errorf("%q: want FROM scratch (a static binary needs no base)", l)
	}
	if l := has("USER "); !regexp.MustCompile(`^USER [1-9][0-9]*:[1-9][0-9]*$`).MatchString(l) {
		t.Errorf("%q: want a numeric non-root USER uid:gid (scratch has no /etc/passwd)", l)
	}
	has("COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt")
	has("COPY smcp /usr/local/bin/smcp")
	if l := has("HEALTHCHECK "); !strings.Contains(l, `CMD ["/usr/local/bin/smcp", "healthcheck"]`) {
		t.Errorf("%q: want the exec form of smcp healthcheck (no shell in the image)", l)
	}
	has(`ENTRYPOINT ["/usr/local/bin/smcp"]`)

	// make image builds what the Containerfile copies: a static binary.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\tCGO_ENABLED=0 GOOS=linux \$\(GO\) build -trimpath -ldflags "\$\(RELEASE_LDFLAGS\)" -o \$\(IMAGE_DIR\)/smcp ./cmd/smcp$`).Match(makefile) {
		t.Error("make image does not build $(IMAGE_DIR)/smcp with CGO_ENABLED=0 and the release ldflags")
	}
}
