package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const argvWarning = "visible to other users of this machine"

// TestAgentKeyOffTheCommandLine: `smcp agent` takes its key from
// $SMCP_API_KEY or --api-key-file without a word, and from --api-key with
// one warning line (ps shows every process's arguments to every user);
// both --api-key and --api-key-file is a usage error; an empty key file is
// a clear failure.
func TestAgentKeyOffTheCommandLine(t *testing.T) {
	gw := startKeyedGateway(t, "k-agent")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("k-agent\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// SMCP_API_KEY= (empty) stands for unset: the test's own environment
	// may hold one.
	base := []string{"SMCP_URL=" + gw.URL, "SMCP_OFFICE=o", "SMCP_API_KEY=", "SMCP_API_KEY_FILE="}
	for _, c := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		stderr  string // wanted in stderr ("" : stderr holds no warning)
		warning bool
	}{
		{name: "environment", env: []string{"SMCP_API_KEY=k-agent"}},
		{name: "key file", args: []string{"--api-key-file", keyFile}},
		{name: "key file from the environment", env: []string{"SMCP_API_KEY_FILE=" + keyFile}},
		{name: "command line", args: []string{"--api-key", "k-agent"}, warning: true},
		{name: "both", args: []string{"--api-key", "k-agent", "--api-key-file", keyFile}, code: exitUsage, stderr: "not both"},
		{name: "empty file", args: []string{"--api-key-file", empty}, code: exitFailure, stderr: "holds no key"},
		{name: "missing file", env: []string{"SMCP_API_KEY_FILE=" + empty + "x"}, code: exitFailure, stderr: "no such file"},
	} {
		code, out, errOut := agentRun(t, append(append([]string(nil), base...), c.env...), append(c.args, "list")...)
		if code != c.code || (c.code == 0 && !strings.Contains(out, "office o is empty")) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", c.name, code, c.code, out, errOut)
		}
		if n := strings.Count(errOut, argvWarning); n != map[bool]int{true: 1}[c.warning] {
			t.Errorf("%s: %d warnings about the command line, want %v:\n%s", c.name, n, c.warning, errOut)
		}
		if strings.Contains(errOut, "k-agent") {
			t.Errorf("%s: the key is in stderr: %s", c.name, errOut)
		}
	}
}

// TestGatewayKeyOffTheCommandLine: `smcp gateway --api-key-file` reads its
// one key from the file (which wins over a client's $SMCP_API_KEY in the
// same shell), and --api-key on the command line is accepted with one
// warning line.
func TestGatewayKeyOffTheCommandLine(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("  file-key \nrest\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SMCP_API_KEY", "the-clients-key")
	for _, c := range []struct {
		args    []string
		key     string
		warning bool
	}{
		{[]string{"--api-key-file", keyFile}, "file-key", false},
		{nil, "the-clients-key", false},
		{[]string{"--api-key", "argv-key"}, "argv-key", true},
	} {
		cfg, err := parseGatewayConfig(c.args)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		gc, err := cfg.gatewayConfig(slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if _, err := gc.Auth.Authenticate(context.Background(), c.key); err != nil {
			t.Errorf("%v: key %q refused: %v", c.args, c.key, err)
		}
		if got := strings.Count(logs.String(), argvWarning); got != map[bool]int{true: 1}[c.warning] {
			t.Errorf("%v: %d warnings, want %v:\n%s", c.args, got, c.warning, logs.String())
		}
	}
	cfg, err := parseGatewayConfig([]string{"--api-key", "k", "--api-key-file", keyFile})
	if err == nil {
		_, err = cfg.gatewayConfig(slog.New(slog.DiscardHandler))
	}
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("--api-key with --api-key-file: %v", err)
	}
}
