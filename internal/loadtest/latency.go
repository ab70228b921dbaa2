package loadtest

import (
	"slices"
	"time"
)

// Latencies summarises sorted samples.
type Latencies struct {
	P50, P90, P99, Max time.Duration
}

// Summarise sorts samples in place and picks the percentiles (nearest rank).
func Summarise(samples []time.Duration) Latencies {
	if len(samples) == 0 {
		return Latencies{}
	}
	slices.Sort(samples)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(samples))+0.5) - 1
		return samples[max(0, min(i, len(samples)-1))]
	}
	return Latencies{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: samples[len(samples)-1]}
}
