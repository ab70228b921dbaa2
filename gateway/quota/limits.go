// Package quota bounds how often and how many at once a principal may call:
// calls per second with a burst (GCRA), and calls in flight, per principal
// and per (principal, tool).
//
// The rate is kept in memory on one node (golang.org/x/time/rate), or in
// Redis for a cluster (github.com/go-redis/redis_rate, the same GCRA run by
// a Lua script on Redis's clock), so that every node spends one principal's
// allowance. Calls in flight are counted per node: a node that dies would
// leave a shared count that nobody decrements, and the in-flight bound is
// about what one node's computers and goroutines hold, which is per node.
package quota

import (
	"fmt"
	"math"
	"time"
)

// Limits is the quota of one principal, as written in a keys file (the
// top-level default, a key's own, or a token claim's):
//
//	quota: {calls_per_second: 5, burst: 5, in_flight: 10, tools: {echo: {calls_per_second: 1, burst: 2}}}
//
// 0 (or absent) is unlimited. A quota given to a key replaces the default
// as a whole: fields it leaves out are unlimited, not the default's.
type Limits struct {
	Bound `yaml:",inline"`
	// Tools bound each tool of the principal on its own, beside (not
	// instead of) the principal's own bound: a call spends both. A tool is
	// named as its computer names it.
	Tools map[string]Bound `yaml:"tools,omitempty" json:"tools,omitempty"`
}

// Bound is one rate and in-flight bound.
type Bound struct {
	// CallsPerSecond is the sustained rate; 0 is unlimited.
	CallsPerSecond float64 `yaml:"calls_per_second,omitempty" json:"calls_per_second,omitempty"`
	// Burst is how many calls may come at once after a quiet spell; 0 is
	// the rate rounded up (at least 1). Without a rate it means nothing.
	Burst int `yaml:"burst,omitempty" json:"burst,omitempty"`
	// InFlight is how many calls may await their answer at once, on one
	// node; 0 is unlimited.
	InFlight int `yaml:"in_flight,omitempty" json:"in_flight,omitempty"`
}

// Validate refuses a negative or non-finite bound, naming it.
func (l *Limits) Validate() error {
	if l == nil {
		return nil
	}
	if err := l.Bound.validate(); err != nil {
		return fmt.Errorf("quota: %w", err)
	}
	for name, b := range l.Tools {
		if name == "" {
			return fmt.Errorf("quota: tools: an empty tool name")
		}
		if err := b.validate(); err != nil {
			return fmt.Errorf("quota: tools: %s: %w", name, err)
		}
	}
	return nil
}

func (b Bound) validate() error {
	switch {
	case b.CallsPerSecond < 0 || math.IsNaN(b.CallsPerSecond) || math.IsInf(b.CallsPerSecond, 0):
		return fmt.Errorf("calls_per_second %v: want a number >= 0", b.CallsPerSecond)
	case b.Burst < 0:
		return fmt.Errorf("burst %d: want >= 0", b.Burst)
	case b.InFlight < 0:
		return fmt.Errorf("in_flight %d: want >= 0", b.InFlight)
	}
	return nil
}

// Unlimited reports whether l bounds nothing.
func (l *Limits) Unlimited() bool {
	if l == nil {
		return true
	}
	if !l.Bound.unlimited() {
		return false
	}
	for _, b := range l.Tools {
		if !b.unlimited() {
			return false
		}
	}
	return true
}

func (b Bound) unlimited() bool { return b.CallsPerSecond == 0 && b.InFlight == 0 }

// burst is the bucket's size: Burst, or the rate rounded up.
func (b Bound) burst() int {
	if b.Burst > 0 {
		return b.Burst
	}
	return max(1, int(math.Ceil(b.CallsPerSecond)))
}

// interval is the time one call's allowance takes to come back.
func (b Bound) interval() time.Duration {
	return time.Duration(float64(time.Second) / b.CallsPerSecond)
}
