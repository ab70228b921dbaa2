package computer_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/testmcp"
	"github.com/smcpgw/smcp-gateway/internal/testwait"
	"github.com/smcpgw/smcp-gateway/smcp"
)

var fixtureBin string

func TestMain(m *testing.M) { testmcp.RunWithBinary(m, &fixtureBin) }

// TestKilledStdioServerComesBack kills an MCP server's process in the middle
// of a tool call: the call fails at once, the server is restarted, its tools
// come back (with update_tool_list) and are callable again.
func TestKilledStdioServerComesBack(t *testing.T) {
	started := filepath.Join(t.TempDir(), "slow-started")
	h := newComputer(t, map[string]map[string]any{
		"child": {"command": fixtureBin, "args": []any{"-name", "child", "-window", "window://child/main", "-started", started}},
	})
	pidOf := func() int {
		t.Helper()
		res := h.call(smcp.EventToolCall, map[string]any{"tool_name": "pid", "timeout": 10})
		n, err := strconv.Atoi(resultText(t, res))
		if err != nil || res["isError"] != false {
			t.Fatalf("pid: %v", res)
		}
		return n
	}
	first := pidOf()
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); len(got) != 1 || got[0] != "window://child/main\n\nwindow of child" {
		t.Fatalf("desktop: %q", got)
	}

	done := make(chan map[string]any, 1)
	go func() {
		done <- h.call(smcp.EventToolCall, map[string]any{"req_id": "inflight", "tool_name": "slow", "timeout": 60,
			"params": map[string]any{"tag": "x", "seconds": 30}})
	}()
	// Kill once the server is running the call.
	testwait.Until(t, "the slow call to start", func() bool { _, err := os.Stat(started); return err == nil })
	h.upd.drain()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res["isError"] != true {
			t.Fatalf("in-flight call on a killed server: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("in-flight call not answered after the server died")
	}
	h.upd.wait(t, smcp.EventUpdateToolList) // tools gone
	h.upd.wait(t, smcp.EventUpdateToolList) // tools back
	h.waitConnected("child")
	if second := pidOf(); second == first {
		t.Fatalf("same pid %d", second)
	}
	if got := desktops(t, h.call(smcp.EventGetDesktop, map[string]any{})); len(got) != 1 {
		t.Fatalf("desktop after restart: %q", got)
	}
}
