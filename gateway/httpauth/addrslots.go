package httpauth

import "sync"

// AddrSlots counts what each client address (ClientIP) holds, connections
// or sessions, against a bound per address: the per-address limit of every
// front end, counted one way.
type AddrSlots struct {
	limit int // <= 0: no limit
	mu    sync.Mutex
	held  map[string]int
}

// NewAddrSlots bounds each address to limit slots (<= 0: no limit).
func NewAddrSlots(limit int) *AddrSlots {
	return &AddrSlots{limit: limit, held: map[string]int{}}
}

// Take counts one slot of ip; false, with nothing counted, when ip holds
// the limit already.
func (a *AddrSlots) Take(ip string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limit > 0 && a.held[ip] >= a.limit {
		return false
	}
	a.held[ip]++
	return true
}

// Give returns one slot of ip.
func (a *AddrSlots) Give(ip string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held[ip]--; a.held[ip] <= 0 {
		delete(a.held, ip)
	}
}
