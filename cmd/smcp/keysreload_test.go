package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
)

// SIGHUP to a real `smcp gateway` process reloads its keys file, also a
// change its watch of the file's folder cannot see (the file is a link
// into another folder, changed in place): the removed key is refused from
// its next request, the added one admitted, the reload logged without a
// key; the process goes on.
func TestGatewayReloadsKeysOnSIGHUP(t *testing.T) {
	target := filepath.Join(t.TempDir(), "real.yaml")
	if err := os.WriteFile(target, []byte("keys:\n  - {key: old-secret, id: old}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var stderr testwait.Buffer
	cmd := smcpCommand(t, "gateway", "--listen", addr, "--keys-file", path)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitFor(t, ctx, "gateway ready", func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	admitted := func(key string) bool {
		cl := smcpv1connect.NewAgentServiceClient(http.DefaultClient, base, connecttest.Headers("x-api-key", key))
		_, err := cl.ListRoom(ctx, &smcpv1.ListRoomRequest{OfficeId: "o"})
		return err == nil
	}
	if !admitted("old-secret") || admitted("new-secret") {
		t.Fatal("the keys file's key is not the one admitted")
	}

	if err := os.WriteFile(target, []byte("keys:\n  - {key: new-secret, id: new}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the keys reloaded", func() bool { return admitted("new-secret") && !admitted("old-secret") })
	select {
	case err := <-exited:
		t.Fatalf("the gateway exited on SIGHUP: %v\n%s", err, stderr.String())
	default:
	}
	out := stderr.String()
	if !strings.Contains(out, "keys reloaded") || !strings.Contains(out, "trigger=hangup") || !strings.Contains(out, "revoked=[old]") {
		t.Errorf("the reload is not logged:\n%s", out)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a key is in the log:\n%s", out)
	}
}
