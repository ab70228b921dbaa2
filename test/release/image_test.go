package release

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testdeps"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// TestImage builds the container image with `make image` (a static release
// binary, the Containerfile) and runs the gateway in it with rootful podman:
// /healthz answers from the host, the image's HEALTHCHECK (smcp healthcheck,
// run on demand: podman's timer needs systemd) reports healthy, the process
// runs as uid 65532, `smcp version` in the image prints the stamp `make image`
// set, and the image holds a CA bundle that parses.
//
// podman's defaults need two changes on machines like this sandbox, both
// harmless elsewhere: it raises RLIMIT_NOFILE and RLIMIT_NPROC, which root
// without CAP_SYS_RESOURCE may not (fixed, modest limits are passed instead),
// and crun refuses a hybrid cgroup v1/v2 host (runc is used where installed).
func TestImage(t *testing.T) {
	podman := testdeps.Program(t, "podman", "podman")
	// runc, not crun (podman's default), which refuses a hybrid cgroup host.
	runc := testdeps.Program(t, "runc", "runc")
	testdeps.Program(t, "make", "make")
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	tag := fmt.Sprintf("localhost/smcp-gateway:test-%d", os.Getpid())
	const version = "v0.0.0-imagetest"
	build := exec.CommandContext(ctx, "make", "--no-print-directory", "image",
		"IMAGE="+tag, "IMAGE_DIR="+t.TempDir(), "VERSION="+version, "CONTAINER="+podman)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })

	runFlags := []string{"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "--runtime", runc}
	podmanRun := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, podman, append(append([]string{"run"}, runFlags...), args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := podmanRun("--rm", tag, "version")
	if err != nil || !strings.Contains(out, "smcp "+version+"\n") {
		t.Errorf("smcp version in the image: %v\n%s", err, out)
	}

	// The host's network: the test reaches the gateway on loopback whatever
	// podman's network backend can do here.
	addr := freeAddr(t)
	name := fmt.Sprintf("smcp-gateway-test-%d", os.Getpid())
	out, err = podmanRun("-d", "--name", name, "--network", "host",
		"-e", "SMCP_LISTEN="+addr, "-e", "SMCP_API_KEY=image-test-key", tag)
	if err != nil {
		t.Fatalf("podman run: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(podman, "logs", name).CombinedOutput()
			t.Logf("container logs:\n%s", logs)
		}
		_ = exec.Command(podman, "rm", "-f", "-t", "5", name).Run()
	})

	testwait.Within(t, time.Minute, "the gateway in the container answers /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if out, err := exec.CommandContext(ctx, podman, "healthcheck", "run", name).CombinedOutput(); err != nil {
		t.Errorf("podman healthcheck run: %v\n%s", err, out)
	}
	status, err := exec.CommandContext(ctx, podman, "inspect", "-f", "{{.State.Health.Status}} {{.State.Pid}}", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	health, pid, _ := strings.Cut(strings.TrimSpace(string(status)), " ")
	if health != "healthy" {
		t.Errorf("health status %q after a passing check", health)
	}
	proc, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(proc), "\n") {
		if strings.HasPrefix(line, "Uid:") && strings.Join(strings.Fields(line), " ") != "Uid: 65532 65532 65532 65532" {
			t.Errorf("gateway process %s: %q, want uid 65532 throughout", pid, line)
		}
	}

	certs := filepath.Join(t.TempDir(), "ca.crt")
	if out, err := exec.CommandContext(ctx, podman, "cp", name+":/etc/ssl/certs/ca-certificates.crt", certs).CombinedOutput(); err != nil {
		t.Fatalf("podman cp: %v\n%s", err, out)
	}
	pem, err := os.ReadFile(certs)
	if err != nil {
		t.Fatal(err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		t.Error("the image's /etc/ssl/certs/ca-certificates.crt holds no certificate")
	}

	// The same check in the image fails against a closed port: it is no constant.
	if out, err := exec.CommandContext(ctx, podman, "exec", name, "/usr/local/bin/smcp", "healthcheck", "http://127.0.0.1:1/healthz").CombinedOutput(); err == nil {
		t.Errorf("smcp healthcheck of a closed port passed:\n%s", out)
	}
}

// freeAddr is a loopback address nobody listens on just now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
