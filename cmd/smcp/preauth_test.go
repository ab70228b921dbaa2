package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ws "github.com/gorilla/websocket"

	"github.com/smcpgw/smcp-gateway/sioclient"
)

// vmRSS is the resident set of process pid, in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// Until a connection has authenticated it costs the gateway little memory
// whatever it sends: 20 WebSocket connections each sending one 16 MiB frame
// and 20 polling sessions each posting a 16 MiB body (chunked, so without a
// length to refuse it by) before any namespace CONNECT leave the RSS of a
// real `smcp gateway` process within 64 MiB of what it was before, during
// the attack and after. (Before the limit per connection: ~1.3 GiB from
// the 20 frames alone.) The gateway then still serves a client with the
// key.
func TestUnauthenticatedFramesCostNoMemory(t *testing.T) {
	const key = "k-rss-0123456789abcdef"
	// The key through the environment, as the README advises.
	base, pid := startGatewayProcess(t, []string{"SMCP_API_KEY=" + key})
	addr := strings.TrimPrefix(base, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const conns, frame = 20, 16 << 20
	payload := "4" + strings.Repeat("x", frame)
	wsURL := "ws://" + addr + "/socket.io/?EIO=4&transport=websocket"
	pollURL := base + "/socket.io/?EIO=4&transport=polling"
	attackWS := func() error {
		c, _, err := ws.DefaultDialer.DialContext(ctx, wsURL, nil)
		if err != nil {
			return fmt.Errorf("dial: %w", err)
		}
		defer func() { _ = c.Close() }()
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, open, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(open), "0{") {
			return fmt.Errorf("open: %q %w", open, err)
		}
		_ = c.WriteMessage(ws.TextMessage, []byte(payload)) // the server may close midway
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
					return fmt.Errorf("the gateway kept the connection open: %w", err)
				}
				return nil // closed by the gateway
			}
		}
	}
	attackPolling := func() error {
		resp, err := http.Get(pollURL)
		if err != nil {
			return fmt.Errorf("handshake: %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var hs struct {
			SID string `json:"sid"`
		}
		if !strings.HasPrefix(string(b), "0") || json.Unmarshal(b[1:], &hs) != nil {
			return fmt.Errorf("handshake: %q", b)
		}
		// io.MultiReader hides the length: the body goes chunked.
		body := io.MultiReader(strings.NewReader(payload))
		resp, err = http.Post(pollURL+"&sid="+hs.SID, "text/plain;charset=UTF-8", body)
		if err != nil {
			return nil // the gateway closed the connection while the body was sent
		}
		_ = resp.Body.Close()
		// 413, or 429: Engine.IO answers a body still on its way when it
		// closes the session (socket.io closes one that joined no
		// namespace within 5 s, which a starved client can reach here).
		if resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusTooManyRequests {
			return fmt.Errorf("16 MiB chunked body: %d, want 413", resp.StatusCode)
		}
		return nil
	}

	// Warm up: each path once, so that the baseline includes what any first
	// connection allocates for good (pools, code pages).
	if err := attackWS(); err != nil {
		t.Fatal(err)
	}
	if err := attackPolling(); err != nil {
		t.Fatal(err)
	}
	start := vmRSS(t, pid)

	var peak atomic.Int64
	sampled := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := vmRSS(t, pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 2*conns)
	for range conns {
		wg.Go(func() { errs <- attackWS() })
		wg.Go(func() { errs <- attackPolling() })
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	end := vmRSS(t, pid)
	t.Logf("gateway RSS: %d MiB at the start, %d MiB at the peak, %d MiB after", start>>20, peak.Load()>>20, end>>20)
	const bound = 64 << 20
	if peak.Load()-start > bound || end-start > bound {
		t.Fatalf("unauthenticated frames raised the gateway's RSS by %d MiB (peak) / %d MiB (after), bound %d MiB",
			(peak.Load()-start)>>20, (end-start)>>20, bound>>20)
	}

	c, err := sioclient.Dial(ctx, sioclient.Options{URL: base, APIKey: key, NoReconnect: true})
	if err != nil {
		t.Fatalf("a client with the key after the attack: %v", err)
	}
	c.Close()
}
