package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command line in process and returns its exit status,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Help, asked for in any of the usual ways, is a success and goes to stdout.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != exitOK || !strings.Contains(out, "usage: smcp <command>") || errOut != "" {
			t.Errorf("smcp %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	// Every subcommand: -h and `smcp help <cmd>`, both with the shared flags.
	for _, c := range commands() {
		if c.run == nil || c.name == "bench" || c.name == "soak" {
			continue
		}
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			code, out, errOut := runCLI(t, args...)
			if code != exitOK || errOut != "" {
				t.Errorf("smcp %v: exit %d, stderr %q", args, code, errOut)
			}
			for _, want := range []string{"usage: smcp " + c.name, "-log-level", "-log-json", "$SMCP_"} {
				if !strings.Contains(out, want) {
					t.Errorf("smcp %v: usage lacks %q:\n%s", args, want, out)
				}
			}
		}
	}
	// No command at all is a wrong command line.
	if code, out, errOut := runCLI(t); code != exitUsage || out != "" || !strings.Contains(errOut, "usage:") {
		t.Errorf("smcp: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// A wrong command line is one error line and a hint, exit status 2; the
// usage is not dumped.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gateway", "--bogus"}, "smcp gateway: flag provided but not defined: -bogus\nRun 'smcp gateway -h' for usage.\n"},
		{[]string{"computer", "--office", "o"}, "smcp computer: --config and --office are required\nRun 'smcp computer -h' for usage.\n"},
		{[]string{"docs", "--root", "x", "stray"}, "smcp docs: unexpected arguments: stray\nRun 'smcp docs -h' for usage.\n"},
		{[]string{"demo", "--ready-timeout", "soon"}, "smcp demo: invalid value \"soon\" for flag -ready-timeout: parse error\nRun 'smcp demo -h' for usage.\n"},
		{[]string{"agent", "tools", "--bogus"}, "smcp agent: flag provided but not defined: -bogus\nRun 'smcp agent -h' for usage.\n"},
		{[]string{"nonsense"}, "smcp: unknown command \"nonsense\"\nRun 'smcp help' for the commands.\n"},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("smcp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
	// A command that runs and fails is exit status 1.
	code, _, errOut := runCLI(t, "computer", "--config", filepath.Join(t.TempDir(), "missing.json"), "--office", "o")
	if code != exitFailure || !strings.Contains(errOut, "missing.json") {
		t.Errorf("missing config: exit %d, %q", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(t, args...)
		if code != exitOK || !strings.HasPrefix(out, "smcp ") || !strings.Contains(out, "go: go1.") || !strings.Contains(out, "revision: ") {
			t.Errorf("smcp %v: exit %d, %q", args, code, out)
		}
	}
}

// Every flag falls back to $SMCP_<FLAG>; the command line wins; a bad value
// in the environment names the variable.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Setenv("SMCP_CALL_TIMEOUT", "9s")
	t.Setenv("SMCP_MAX_CONNS_PER_ADDR", "7")
	t.Setenv("SMCP_LISTEN", "127.0.0.1:9999")
	c, err := parseGatewayConfig([]string{"--listen", "127.0.0.1:1234"})
	if err != nil {
		t.Fatal(err)
	}
	if c.CallTimeout.String() != "9s" || c.MaxConnsPerAddr != 7 || c.Listen != "127.0.0.1:1234" {
		t.Errorf("from the environment: call timeout %v, conns %d, listen %q (the command line wins)", c.CallTimeout, c.MaxConnsPerAddr, c.Listen)
	}
	// The environment wins over the --config file, as the command line does.
	file := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(file, []byte("call_timeout: 3s\nmax_pending: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseGatewayConfig([]string{"--config", file})
	if err != nil || c.CallTimeout.String() != "9s" || c.MaxPending != 5 {
		t.Errorf("env over file: %+v, %v", c, err)
	}

	t.Setenv("SMCP_MAX_PENDING", "many")
	code, _, errOut := runCLI(t, "gateway")
	if code != exitUsage || !strings.Contains(errOut, "$SMCP_MAX_PENDING: invalid value for --max-pending") {
		t.Errorf("bad env value: exit %d, %q", code, errOut)
	}
}

// --log-json makes JSON log lines, for every subcommand's logger.
func TestLogFlags(t *testing.T) {
	fs := newFlags("x", "")
	fs.addLogFlags("info")
	if err := fs.parse([]string{"--log-json", "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	log, err := fs.logger()
	if err != nil || !log.Enabled(context.Background(), -4) {
		t.Fatalf("debug logger: %v", err)
	}
	if _, err := newLogger("loud", false); err == nil {
		t.Error("a bad level was accepted")
	}
}
