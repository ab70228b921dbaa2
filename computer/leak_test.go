package computer_test

import (
	"runtime"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// TestCloseLeavesNoGoroutines runs a computer with a stdio and an HTTP
// server through a few restarts and calls, closes it, and checks that its
// goroutines are gone (in the 0.4 profile too).
func TestCloseLeavesNoGoroutines(t *testing.T) {
	f := testmcp.New("h", testmcp.Options{})
	f.SetDocs("h.docs", docs("h", 3)...)
	url := fixture(t, f)
	before := runtime.NumGoroutine()
	skills, landing := t.TempDir(), t.TempDir()
	for i := range 3 {
		cfg := &config.Config{Servers: map[string]*config.Server{}}
		for name, obj := range map[string]map[string]any{
			"h":     {"url": url},
			"child": {"command": fixtureBin, "tool_meta": map[string]any{"echo": map[string]any{"alias": "c_echo"}}, "forbidden_tools": []any{"add", "slow", "pid"}},
		} {
			s, err := config.NewServer(name, obj)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Servers[name] = s
		}
		opts := computer.Options{Name: "pc", Config: cfg, Logger: quietLogger(), Confirm: "auto"}
		if i%2 == 1 { // the skill watcher, the blob spool and the upload sweeper too
			opts.Protocol, opts.SkillDirs, opts.LandingRoot = computer.Protocol04, []string{skills}, landing
		}
		c, err := computer.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, c: c, upd: newUpdates()}
		h.waitConnected("h")
		h.waitConnected("child")
		h.call(smcp.EventToolCall, map[string]any{"tool_name": "c_echo", "params": map[string]any{"text": "x"}})
		h.call(smcp.EventGetFinder, map[string]any{})
		c.Close()
	}
	var n int
	if !testwait.Poll(testwait.Timeout, func() bool { n = runtime.NumGoroutine(); return n <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after closing:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
