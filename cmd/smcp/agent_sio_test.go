package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func startOpenGateway(t *testing.T, cfg gateway.Config) string {
	t.Helper()
	cfg.Auth = core.AllowAll{}
	gw, err := gateway.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	return gw.URL
}

// agentRunWithin is agentRun bounded by limit: a command still running
// then is killed and the test fails (a retry loop would run until its own
// --timeout, minutes later).
func agentRunWithin(t *testing.T, limit time.Duration, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := smcpCommand(t, append([]string{"agent"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("smcp agent %v still running after %v\n%s", args, limit, errOut.String())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String()
	}
	t.Fatalf("smcp agent %v: %v", args, err)
	return 0, "", ""
}

// `smcp agent` speaks 0.4 by default: a gateway serving only 0.2 refuses
// it at the handshake, and the command says so in one line naming what the
// gateway serves, exit 1, at once (its --timeout is 5 minutes: no retry).
func TestAgentProtocolRefused(t *testing.T) {
	url := startOpenGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V02}}})
	env := []string{"SMCP_URL=" + url, "SMCP_OFFICE=o", "SMCP_TIMEOUT=5m"}
	for _, args := range [][]string{{"skills"}, {"--protocol", "0.4", "blob", "h", "-o", filepath.Join(t.TempDir(), "x")}, {"--protocol", "0.4", "list"}, {"tools"}} {
		code, out, errOut := agentRunWithin(t, time.Minute, env, args...)
		t.Logf("%v: %s", args, errOut)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		want := "this command needs 0.3 or later" // skills and blob
		if args[len(args)-1] == "list" || args[0] == "tools" {
			want = "use --protocol 0.2" // the Connect API's subcommands
		}
		if code != exitFailure || len(lines) != 1 || out != "" ||
			!strings.Contains(errOut, "refused protocol 0.4") || !strings.Contains(errOut, "supports 0.2") ||
			!strings.Contains(errOut, want) || !strings.Contains(errOut, "4008") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// In 0.2 the same gateway answers.
	if code, out, errOut := agentRunWithin(t, time.Minute, env, "--protocol", "0.2", "list"); code != 0 || !strings.Contains(out, "office o is empty") {
		t.Errorf("list in 0.2: exit %d, %q, %q", code, out, errOut)
	}
	// A gateway serving 0.3 but not 0.4: the line names the flag to pass.
	url03 := startOpenGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V02, smcp.V03}}})
	code, _, errOut := agentRunWithin(t, time.Minute, []string{"SMCP_URL=" + url03, "SMCP_OFFICE=o"}, "skills")
	if code != exitFailure || !strings.Contains(errOut, "it supports 0.2, 0.3; use --protocol 0.3") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("0.3 gateway: exit %d, %q", code, errOut)
	}
	// $SMCP_PROTOCOL picks the profile; the 0.3 events need 0.3 or later.
	code, _, errOut = agentRunWithin(t, time.Minute, append(env, "SMCP_PROTOCOL=0.2"), "skills")
	if code != exitUsage || !strings.Contains(errOut, "skills needs --protocol 0.3 or later (it is 0.2)") {
		t.Errorf("skills in 0.2: exit %d, %q", code, errOut)
	}
	if code, _, errOut = agentRunWithin(t, time.Minute, env, "--protocol", "0.3", "put", "f"); code != exitUsage || !strings.Contains(errOut, "put needs --protocol 0.4") {
		t.Errorf("put in 0.3: exit %d, %q", code, errOut)
	}
	if code, _, errOut = agentRunWithin(t, time.Minute, env, "--protocol", "0.9", "skills"); code != exitUsage || !strings.Contains(errOut, "--protocol") {
		t.Errorf("--protocol 0.9: exit %d, %q", code, errOut)
	}
}

func randomFile(t *testing.T, path string, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func fileEquals(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes differ from the %d expected", path, len(got), len(want))
	}
}

// skills, skill, blob -o and put end to end: a gateway serving every
// profile and a real 0.4 computer with a skill folder and a landing root.
func TestAgentSkillsBlobsPut(t *testing.T) {
	url := startOpenGateway(t, gateway.Config{})
	skillDir, landing, work := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(skillDir, "demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skillDir, "demo", "SKILL.md"),
		[]byte("---\nname: demo\ndescription: Shows the agent's skill commands\n---\n# Demo body\n\nUse data.bin.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Three chunks and a bit: not text, so always a blob handle.
	data := randomFile(t, filepath.Join(skillDir, "demo", "data.bin"), 3*256<<10+4321)
	comp, err := computer.New(computer.Options{Name: "pc", Confirm: tools.ConfirmAuto, Config: &config.Config{Servers: map[string]*config.Server{}},
		Protocol: computer.Protocol04, SkillDirs: []string{skillDir}, LandingRoot: landing})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- comp.Run(ctx, computer.Gateway{URL: url, Office: "o"}) }()
	defer func() { cancel(); <-ran }()

	env := []string{"SMCP_URL=" + url, "SMCP_OFFICE=o", "SMCP_NAME=operator"}
	var code int
	var out, errOut string
	if !testwait.Poll(time.Minute, func() bool {
		code, out, errOut = agentRun(t, env, "skills")
		return code == 0 && strings.Contains(out, "demo")
	}) {
		t.Fatalf("skills: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "pc (1 skills)") || !strings.Contains(out, "Shows the agent's skill commands") {
		t.Errorf("skills:\n%s", out)
	}
	// SKILL.md comes inline, without its front matter.
	if code, out, errOut = agentRun(t, env, "skill", "demo"); code != 0 || out != "# Demo body\n\nUse data.bin.\n" {
		t.Errorf("skill demo: exit %d, %q, %s", code, out, errOut)
	}
	// data.bin comes as a handle; blob -o drains it in chunks, sha256 checked.
	code, out, errOut = agentRun(t, env, "skill", "demo", "data.bin", "--json")
	var ret smcpv1.GetSkillRet
	if err := protojson.Unmarshal([]byte(out), &ret); code != 0 || err != nil || ret.GetBlobHandle() == "" {
		t.Fatalf("skill demo data.bin --json: exit %d, %v, %q, %s", code, err, out, errOut)
	}
	sum := sha256.Sum256(data)
	if ret.GetSha256() != hex.EncodeToString(sum[:]) || ret.GetTotalSize() != int64(len(data)) {
		t.Errorf("get_skill declares %d bytes, %s", ret.GetTotalSize(), ret.GetSha256())
	}
	dst := filepath.Join(work, "sub", "..", "data.bin")
	if code, out, errOut = agentRun(t, env, "blob", ret.GetBlobHandle(), "-o", dst); code != 0 || !strings.Contains(out, "(checked)") {
		t.Fatalf("blob -o: exit %d, %q, %s", code, out, errOut)
	}
	fileEquals(t, filepath.Join(work, "data.bin"), data)
	if code, _, errOut = agentRun(t, env, "skill", "demo", "data.bin", "--output", filepath.Join(work, "d2.bin")); code != 0 {
		t.Fatalf("skill -o: exit %d, %s", code, errOut)
	}
	fileEquals(t, filepath.Join(work, "d2.bin"), data)

	// put: the file lands in the landing root, byte for byte; the answer
	// names it there, not by the host's path.
	up := randomFile(t, filepath.Join(work, "upload.bin"), 2*256<<10+99)
	code, out, errOut = agentRun(t, env, "put", filepath.Join(work, "upload.bin"))
	landed := strings.TrimSpace(out)
	if code != 0 || landed == "" || strings.ContainsRune(landed, filepath.Separator) {
		t.Fatalf("put: exit %d, %q, %s", code, out, errOut)
	}
	fileEquals(t, filepath.Join(landing, landed), up)
	if err := os.WriteFile(filepath.Join(work, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = agentRun(t, env, "put", filepath.Join(work, "empty")); code != exitFailure || !strings.Contains(errOut, "empty") {
		t.Errorf("put empty: exit %d, %s", code, errOut)
	}
}

// A corrupted chunk fails `blob -o` with a clear error and leaves no file:
// neither the one asked for nor a partial one (an older file of that name
// stays as it was).
func TestAgentBlobCorrupted(t *testing.T) {
	url := startOpenGateway(t, gateway.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	data := make([]byte, 2*256<<10+10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	fake, err := sioclient.Dial(ctx, sioclient.Options{URL: url, Version: "0.4.0", NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	fake.Handle(smcp.EventGetBlob, func(_ context.Context, raw json.RawMessage) (any, error) {
		var req smcpv1.GetBlobReq
		if err := smcp.Unmarshal(raw, &req); err != nil {
			return nil, err
		}
		off := req.GetChunkOffset()
		end := min(off+req.GetMaxChunkBytes(), int64(len(data)))
		chunk := bytes.Clone(data[off:end])
		if off > 0 && req.GetBlobHandle() == "flip" {
			chunk[0] ^= 0xff
		}
		return map[string]any{"blob_handle": req.GetBlobHandle(), "mime_type": "application/octet-stream",
			"total_size": len(data), "sha256": hex.EncodeToString(sum[:]), "chunk_offset": off,
			"eof": end == int64(len(data)), "blob": base64.StdEncoding.EncodeToString(chunk), "req_id": req.GetReqId()}, nil
	})
	if err := fake.JoinOffice(ctx, smcp.RoleComputer, "pc", "o"); err != nil {
		t.Fatal(err)
	}
	env := []string{"SMCP_URL=" + url, "SMCP_OFFICE=o"}
	dir := t.TempDir()
	// The same fake serves the blob intact: the failure below is the flip.
	if code, _, errOut := agentRun(t, env, "blob", "good", "-o", filepath.Join(dir, "good.bin")); code != 0 {
		t.Fatalf("intact blob: exit %d, %s", code, errOut)
	}
	fileEquals(t, filepath.Join(dir, "good.bin"), data)

	if err := os.WriteFile(filepath.Join(dir, "old.bin"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new.bin", "old.bin"} {
		code, _, errOut := agentRun(t, env, "blob", "flip", "-o", filepath.Join(dir, name))
		if code != exitFailure || !strings.Contains(errOut, "integrity check failed") || !strings.Contains(errOut, "sha256") {
			t.Errorf("corrupted blob into %s: exit %d, %s", name, code, errOut)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "good.bin,old.bin" {
		t.Errorf("files left: %v", names)
	}
	fileEquals(t, filepath.Join(dir, "old.bin"), []byte("old"))
}
