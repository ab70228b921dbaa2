package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The example configuration file is complete and valid, the file is read
// strictly, and flags given on the command line win over it.
func TestGatewayConfigFile(t *testing.T) {
	example := filepath.Join("..", "..", "docs", "gateway.example.yaml")
	c, err := parseGatewayConfig([]string{"--config", example})
	if err != nil {
		t.Fatalf("example configuration: %v", err)
	}
	if c.Listen != "127.0.0.1:8080" || c.MaxMessageBytes != 1<<20 || !c.Metrics {
		t.Fatalf("example configuration read as %+v", c)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "gw.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("listen: 0.0.0.0:9000\ncall_timeout: 7s\nevents_per_second: 10\nredis: redis://r:6379/0\n")
	c, err = parseGatewayConfig([]string{"--config", file, "--listen", "127.0.0.1:9100"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9100" {
		t.Errorf("listen = %q: the flag must win over the file", c.Listen)
	}
	if c.CallTimeout != 7*time.Second || c.EventsPerSecond != 10 || c.Redis != "redis://r:6379/0" {
		t.Errorf("file values not applied: %+v", c)
	}
	// Flags after --config win too, and the order does not matter.
	c, err = parseGatewayConfig([]string{"--call-timeout", "3s", "--config", file})
	if err != nil || c.CallTimeout != 3*time.Second || c.Listen != "0.0.0.0:9000" {
		t.Errorf("flag before --config: %+v, %v", c, err)
	}

	write("listen: 0.0.0.0:9000\nlisten_adress: typo\n")
	if _, err := parseGatewayConfig([]string{"--config", file}); err == nil || !strings.Contains(err.Error(), "listen_adress") {
		t.Errorf("an unknown key must be refused by name, got %v", err)
	}
	if _, err := parseGatewayConfig([]string{"--config", filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("a missing file must be an error")
	}
}
