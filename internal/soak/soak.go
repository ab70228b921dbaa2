// Package soak drives steady traffic through an in-process gateway for a
// while — agents calling computers, connections coming and going — and
// samples the process's goroutines, heap and RSS, so that leaks show as
// growth between the first and the last samples.
package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Options of a run. Zero fields take small defaults.
type Options struct {
	Duration time.Duration // measured traffic (default 20 s)
	Interval time.Duration // between samples (default 1 s)
	Offices  int           // one agent and one computer each (default 4)
	// Churn reconnects one computer (leave, close, dial, join) this often,
	// so that connection set-up and tear-down is soaked too (default 1 s).
	Churn time.Duration
	// Progress, when set, gets one line per sample.
	Progress io.Writer
}

// Sample is the process at one instant.
type Sample struct {
	At         time.Duration
	Calls      int64
	Goroutines int
	HeapBytes  uint64
	RSSBytes   uint64
}

// Report is a run's samples, the baseline before any traffic and the state
// after everything was closed.
type Report struct {
	Baseline, After Sample
	Samples         []Sample
	Errors          int64
}

// Run starts a gateway on loopback, drives traffic and samples.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Offices <= 0 {
		o.Offices = 4
	}
	if o.Churn <= 0 {
		o.Churn = time.Second
	}
	rep := &Report{Baseline: sample(0, 0)}
	gw, err := gateway.Start(gateway.Config{Auth: core.AllowAll{}}, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer func() { _ = gw.Stop() }()

	var calls, errs atomic.Int64
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var wg sync.WaitGroup
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range o.Offices {
		office := fmt.Sprintf("office-%d", i)
		pc, err := dialComputer(ctx, gw.URL, "pc", office)
		if err != nil {
			return nil, err
		}
		closers = append(closers, func() { pc.Close() })
		a, err := agent.Dial(ctx, sioclient.Options{URL: gw.URL}, "agent")
		if err != nil {
			return nil, err
		}
		closers = append(closers, a.Close)
		if err := a.Join(ctx, office); err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				_, err := a.CallTool(runCtx, &smcpv1.ToolCallReq{Computer: "pc", ToolName: "echo", Timeout: 10})
				if err == nil {
					calls.Add(1)
				} else if runCtx.Err() == nil {
					errs.Add(1)
				}
				if _, err := a.GetTools(runCtx, "pc"); err == nil {
					calls.Add(1)
				}
			}
		}()
	}
	// Churn: a computer of its own office comes and goes.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.Churn)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			c, err := dialComputer(runCtx, gw.URL, "churn", "churn")
			if err != nil {
				if runCtx.Err() == nil {
					errs.Add(1)
				}
				continue
			}
			c.Close()
		}
	}()

	start := time.Now()
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-runCtx.Done():
			done = true
		case <-tick.C:
		}
		s := sample(time.Since(start), calls.Load())
		rep.Samples = append(rep.Samples, s)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "%6.1fs calls=%d goroutines=%d heap=%.1fMiB rss=%.1fMiB\n",
				s.At.Seconds(), s.Calls, s.Goroutines, mib(s.HeapBytes), mib(s.RSSBytes))
		}
	}
	wg.Wait()
	for _, c := range closers {
		c()
	}
	closers = nil
	if err := gw.Stop(); err != nil {
		return nil, err
	}
	// Give the library's per-connection goroutines a moment to end.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > rep.Baseline.Goroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rep.After = sample(time.Since(start), calls.Load())
	rep.Errors = errs.Load()
	return rep, ctx.Err()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func dialComputer(ctx context.Context, url, name, office string) (*sioclient.Client, error) {
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: url, NoReconnect: true, Version: smcp.V04.Full()})
	if err != nil {
		return nil, err
	}
	c.Handle(smcp.EventToolCall, func(_ context.Context, p json.RawMessage) (any, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}],"isError":false}`), nil
	})
	c.Handle(smcp.EventGetTools, func(_ context.Context, p json.RawMessage) (any, error) {
		return json.RawMessage(`{"tools":[]}`), nil
	})
	if err := c.JoinOffice(ctx, smcp.RoleComputer, name, office); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func sample(at time.Duration, calls int64) Sample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Sample{At: at, Calls: calls, Goroutines: runtime.NumGoroutine(), HeapBytes: ms.HeapInuse, RSSBytes: rss()}
}

// rss reads VmRSS from /proc (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Growth compares the second half of the run with its first: the largest
// goroutine and heap figures of each half. Steady state means no growth.
func (r *Report) Growth() (goroutines int, heapBytes int64) {
	n := len(r.Samples)
	if n < 4 {
		return 0, 0
	}
	first, second := r.Samples[1:n/2], r.Samples[n/2:]
	maxOf := func(s []Sample) (int, uint64) {
		g, h := 0, uint64(0)
		for _, x := range s {
			g, h = max(g, x.Goroutines), max(h, x.HeapBytes)
		}
		return g, h
	}
	g1, h1 := maxOf(first)
	g2, h2 := maxOf(second)
	return g2 - g1, int64(h2) - int64(h1)
}
