// Package testheap samples a test process's heap while something runs:
// the peak of the heap (live and not yet collected objects) and of the
// live heap the GC found, as growth over their values at the start.
package testheap

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// Sampler records the heap's peaks from Start until Done.
type Sampler struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu                   sync.Mutex
	baseHeap, baseLive   uint64
	peakHeap, peakLive   uint64
	baseCycles, lastCycs uint64
}

var names = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes", "/gc/cycles/total:gc-cycles"}

func read() (heap, live, cycles uint64) {
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
}

// Start collects garbage, takes the base values and samples every 2 ms.
func Start() *Sampler {
	runtime.GC()
	h := &Sampler{stop: make(chan struct{})}
	h.baseHeap, h.baseLive, h.baseCycles = read()
	h.peakHeap, h.peakLive = h.baseHeap, h.baseLive
	h.wg.Go(func() {
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			heap, live, cycles := read()
			h.mu.Lock()
			h.peakHeap, h.peakLive, h.lastCycs = max(h.peakHeap, heap), max(h.peakLive, live), cycles
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	})
	return h
}

// Done stops the sampler and returns the growths in MiB and the number of
// GC cycles seen.
func (h *Sampler) Done() (heapMiB, liveMiB float64, cycles uint64) {
	close(h.stop)
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	mib := func(peak, base uint64) float64 { return float64(int64(peak)-int64(base)) / (1 << 20) }
	return mib(h.peakHeap, h.baseHeap), mib(h.peakLive, h.baseLive), h.lastCycs - h.baseCycles
}
