package mcpfront_test

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/smcpgw/smcp-gateway/computer"
	"github.com/smcpgw/smcp-gateway/computer/config"
	"github.com/smcpgw/smcp-gateway/computer/tools"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/mcpfront"
	"github.com/smcpgw/smcp-gateway/internal/fork/mcpsdk/mcp"
	"github.com/smcpgw/smcp-gateway/internal/testfiles"
	"github.com/smcpgw/smcp-gateway/internal/testheap"
	"github.com/smcpgw/smcp-gateway/sioclient"
)

// startSkillComputer connects a 0.4 computer "pc" to office A whose one
// skill "big" has the files given (name: bytes).
func startSkillComputer(t *testing.T, g *gateway.Running, files map[string][]byte) {
	t.Helper()
	skills := t.TempDir()
	testfiles.Write(t, filepath.Join(skills, "big", "SKILL.md"), "---\nname: big\ndescription: Large files.\n---\n")
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(skills, "big", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pc, err := computer.New(computer.Options{Name: "pc", Config: &config.Config{Servers: map[string]*config.Server{}},
		Confirm: tools.ConfirmAuto, Logger: quiet, KeepAlive: -1, Protocol: computer.Protocol04, SkillDirs: []string{skills}})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	link, err := pc.Connect(ctxT(t), computer.Gateway{URL: g.URL, Office: "A", APIKey: keyA, Dial: sioclient.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(link.Close)
}

// Sixteen parallel resources/read of a 30 MiB skill file are refused
// before a chunk moves, naming the bound and what streams instead: an MCP
// answer is one message, and one 30 MiB read used to grow the gateway by
// 260 MiB (16 reached 3 GiB). The process's heap (gateway and computer
// both live here) stays within 16 MiB of its start. A file under the
// bound is read whole, intact, its chunks drained with a window in flight.
func TestLargeSkillFileRefusedInBoundedMemory(t *testing.T) {
	g := startGateway(t, gateway.Config{})
	small := make([]byte, mcpfront.DefaultMaxBlobBytes-12345)
	big := make([]byte, 30<<20)
	_, _ = rand.Read(small)
	_, _ = rand.Read(big)
	startSkillComputer(t, g, map[string][]byte{"small.bin": small, "big.bin": big})
	cs := mustDial(t, g, "A", nil, "X-Api-Key", keyA, "X-Smcp-Agent", "bot")
	ctx := ctxT(t)

	// The skill list arrives with the computer's join: read until it has.
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://pc/big/small.bin"})
	for i := 0; err != nil && i < 100; i++ {
		res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://pc/big/small.bin"})
	}
	if err != nil || len(res.Contents) != 1 || !bytes.Equal(res.Contents[0].Blob, small) {
		t.Fatalf("read of a file under the bound: %v", err)
	}

	h := testheap.Start()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://pc/big/big.bin"})
		})
	}
	wg.Wait()
	heap, live, _ := h.Done()
	t.Logf("16 parallel reads of 30 MiB: heap grew by at most %.1f MiB (live %.1f MiB)", heap, live)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "over the 8388608 bytes one MCP answer carries") || !strings.Contains(err.Error(), "ReadBlob") {
			t.Errorf("read %d: %v", i, err)
		}
	}
	if heap > 16 {
		t.Errorf("the heap grew by %.1f MiB, the bound is 16 MiB", heap)
	}
}
