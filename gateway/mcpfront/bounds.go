package mcpfront

import (
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// bound counts what the front end holds of one kind (sessions, listen
// streams, office views) against a gateway-wide bound and bounds per client
// address and per key (a principal's ID: an API key, a token's subject), so
// that one client, or one key used from many addresses, cannot take what
// every other client needs. Guarded by Server.mu.
type bound struct {
	what                   string // "MCP sessions", in refusals
	total, perAddr, perKey int    // perAddr, perKey <= 0: no such bound
	n                      int
	byAddr, byKey          map[string]int
}

func newBound(what string, total, perAddr, perKey int) *bound {
	return &bound{what: what, total: total, perAddr: perAddr, perKey: perKey,
		byAddr: map[string]int{}, byKey: map[string]int{}}
}

// hit says which bounds one more holder would exceed.
type hit struct{ total, addr, key bool }

func (h hit) any() bool { return h.total || h.addr || h.key }

// check reports the bounds that one more holder at ip with key would
// exceed, and the refusal naming the first of them (nil when none). ip ""
// is never bounded (office views are not counted per address).
func (b *bound) check(ip, key string) (hit, error) {
	h := hit{
		total: b.n >= b.total,
		addr:  ip != "" && b.perAddr > 0 && b.byAddr[ip] >= b.perAddr,
		key:   b.perKey > 0 && b.byKey[key] >= b.perKey,
	}
	switch {
	case h.total:
		return h, smcp.Errorf(core.CodeTooManyPending, "too many %s (%d)", b.what, b.total)
	case h.addr:
		return h, smcp.Errorf(core.CodeTooManyPending, "too many %s from this address (%d)", b.what, b.perAddr)
	case h.key:
		return h, smcp.Errorf(core.CodeTooManyPending, "too many %s for this key (%d)", b.what, b.perKey)
	}
	return h, nil
}

// take counts one holder; the caller checked first.
func (b *bound) take(ip, key string) {
	b.n++
	if ip != "" {
		b.byAddr[ip]++
	}
	b.byKey[key]++
}

// give returns what take counted.
func (b *bound) give(ip, key string) {
	b.n--
	if ip != "" {
		if b.byAddr[ip]--; b.byAddr[ip] <= 0 {
			delete(b.byAddr, ip)
		}
	}
	if b.byKey[key]--; b.byKey[key] <= 0 {
		delete(b.byKey, key)
	}
}

// relieves reports whether giving back a holder at ip with key makes room
// for a newcomer at newIP with newKey under every bound h says it hit, and
// whether the two share an address or a key: what may be reclaimed for a
// newcomer is its own address's or key's, never another client's.
func (h hit) relieves(ip, key, newIP, newKey string) bool {
	sameAddr, sameKey := ip != "" && ip == newIP, key == newKey
	return (sameAddr || sameKey) && (!h.addr || sameAddr) && (!h.key || sameKey)
}

// takeListen counts a subscriptions/listen stream of key at ip, or refuses
// it naming the bound it would exceed; release gives it back.
func (s *Server) takeListen(ip, key string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.listens.check(ip, key); err != nil {
		return nil, err
	}
	s.listens.take(ip, key)
	return func() {
		s.mu.Lock()
		s.listens.give(ip, key)
		s.mu.Unlock()
	}, nil
}

// ListenStreams is how many subscriptions/listen streams are open.
func (s *Server) ListenStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listens.n
}

// OfficeViews is how many offices' shared views are open.
func (s *Server) OfficeViews() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.views)
}
