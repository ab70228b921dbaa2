package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smcpgw/smcp-gateway/gateway/quota"
)

// The audit file comes from --audit-file, $SMCP_AUDIT_FILE or audit_file:
// in the config file (relative to the file's folder); audit: required
// needs it, and a path that cannot be written stops the gateway at start.
func TestAuditFileFlags(t *testing.T) {
	if cfg, err := buildGatewayConfig(t); err != nil || len(cfg.Audit.Sinks) != 0 {
		t.Fatalf("default: %+v, %v", cfg.Audit, err)
	}
	dir := t.TempDir()
	if cfg, err := buildGatewayConfig(t, "--audit-file", filepath.Join(dir, "a.jsonl"), "--audit", "required"); err != nil ||
		len(cfg.Audit.Sinks) != 1 || !cfg.Audit.Required {
		t.Fatalf("flags: %+v, %v", cfg.Audit, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.jsonl")); err != nil {
		t.Fatalf("the audit file is not made at start: %v", err)
	}
	file := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(file, []byte("audit_file: logs/audit.jsonl\naudit: required\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := buildGatewayConfig(t, "--config", file); err != nil || len(cfg.Audit.Sinks) != 1 || !cfg.Audit.Required {
		t.Fatalf("file: %+v, %v", cfg.Audit, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "audit.jsonl")); err != nil {
		t.Fatalf("audit_file is not read from the config file's folder: %v", err)
	}
	t.Setenv("SMCP_AUDIT_FILE", "-")
	if cfg, err := buildGatewayConfig(t); err != nil || len(cfg.Audit.Sinks) != 1 {
		t.Fatalf("environment (stdout): %+v, %v", cfg.Audit, err)
	}
	t.Setenv("SMCP_AUDIT_FILE", "")
	for args, want := range map[string][]string{
		"--audit":      {"--audit", "always"},
		"--audit-file": {"--audit", "required"},
		"audit file":   {"--audit-file", filepath.Join(dir, "a.jsonl", "under-a-file")},
	} {
		if _, err := buildGatewayConfig(t, want...); err == nil || !strings.Contains(err.Error(), args) {
			t.Errorf("%v: %v, want an error naming %s", want, err, args)
		}
	}
}

// The quotas of the keys file reach the gateway; a bad one stops it,
// naming the key.
func TestQuotasFromKeysFile(t *testing.T) {
	c, err := parseGatewayConfig([]string{"--keys-file", filepath.Join("..", "..", "examples", "governance", "keys.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := c.quotas()
	if err != nil {
		t.Fatal(err)
	}
	if l := tb.For("slow", nil); l == nil || l.Bound != (quota.Bound{CallsPerSecond: 5, Burst: 5}) {
		t.Fatalf("slow-key's quota: %+v", l)
	}
	if l := tb.For("full", nil); !l.Unlimited() {
		t.Fatalf("full-key is bound: %+v", l)
	}
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(keys, []byte("keys:\n  - {id: x, key: k, quota: {calls_per_second: -5}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseGatewayConfig([]string{"--keys-file", keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.gatewayConfig(slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "key x: quota") {
		t.Fatalf("a bad quota: %v", err)
	}
}
