package rpc_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
)

// heapSampler records, while it runs, the largest heap of the process
// (live and not yet collected objects) and the largest live heap the GC
// found (what was still reachable after a cycle), as growth over the
// values when it started, after a GC.
type heapSampler struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu                   sync.Mutex
	baseHeap, baseLive   uint64
	peakHeap, peakLive   uint64
	baseCycles, lastCycs uint64
}

var heapMetrics = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes", "/gc/cycles/total:gc-cycles"}

func readHeap() (heap, live, cycles uint64) {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	h := &heapSampler{stop: make(chan struct{})}
	h.baseHeap, h.baseLive, h.baseCycles = readHeap()
	h.peakHeap, h.peakLive = h.baseHeap, h.baseLive
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			heap, live, cycles := readHeap()
			h.mu.Lock()
			h.peakHeap, h.peakLive, h.lastCycs = max(h.peakHeap, heap), max(h.peakLive, live), cycles
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// done stops the sampler and returns the growths in MiB and the number of
// GC cycles seen.
func (h *heapSampler) done() (heapMiB, liveMiB float64, cycles uint64) {
	close(h.stop)
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	mib := func(peak, base uint64) float64 { return float64(int64(peak)-int64(base)) / (1 << 20) }
	return mib(h.peakHeap, h.baseHeap), mib(h.peakLive, h.baseLive), h.lastCycs - h.baseCycles
}

// TestBlobTransferMemory measures the heap while 100 MiB go through the
// gateway each way (ReadBlob, then PutBlob); 24 MiB under the race
// detector, which makes 100 MiB take minutes. The process holds the
// gateway, the fake computer and the client, so its growth bounds the
// gateway's. The live heap after each GC cycle (what is still referenced,
// not the garbage the GC pacing leaves between cycles) must stay within
// 16 MiB of the start, which a gateway holding the blob whole could not;
// the peak heap including garbage is reported. Run alone for the figures:
//
//	go test -count=1 -run TestBlobTransferMemory -v ./gateway/rpc/
func TestBlobTransferMemory(t *testing.T) {
	size := int64(100 << 20)
	if raceDetector {
		size = 24 << 20
	}
	const limitMiB = 16
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	path := writeRandomFile(t, t.TempDir(), "big.bin", size)
	b := pc.addBlob(t, path, "application/octet-stream")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)

	check := func(what string, h *heapSampler, elapsed time.Duration) {
		t.Helper()
		heap, live, cycles := h.done()
		t.Logf("%s of %d MiB in %v: live heap grew by at most %.1f MiB, heap with garbage by at most %.1f MiB (%d GC cycles)",
			what, size>>20, elapsed.Round(time.Millisecond), live, heap, cycles)
		if cycles < 5 {
			t.Fatalf("%s: only %d GC cycles during the transfer: the live heap was hardly measured", what, cycles)
		}
		if live >= limitMiB {
			t.Fatalf("%s: live heap grew by %.1f MiB, the limit is %d MiB", what, live, limitMiB)
		}
	}

	h := startHeapSampler()
	start := time.Now()
	got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-big.bin"})
	elapsed := time.Since(start)
	if got.err != nil || got.size != size || got.sha != b.sha {
		t.Fatalf("ReadBlob: %+v", got)
	}
	check("ReadBlob", h, elapsed)

	h = startHeapSampler()
	start = time.Now()
	res, err := putFile(ctx, cl, &smcpv1.PutBlobHeader{OfficeId: officeA, Computer: "pc-04", TotalSize: size, Sha256: b.sha}, path, 1<<20-1024)
	elapsed = time.Since(start)
	if err != nil || res.GetSha256() != b.sha {
		t.Fatalf("PutBlob: %v %v", res, err)
	}
	check("PutBlob", h, elapsed)
}
