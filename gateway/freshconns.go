package gateway

import (
	"net"
	"net/http"
	"sync"
)

// freshConns holds the connections that have not sent a request yet, so that
// shutdown can close them. http.Server.Shutdown closes idle keep-alive
// connections at once but counts one that has not sent its first request
// (http.StateNew) as busy until it is 5 s old (golang.org/issue/22682), and
// so waits that long, or for the whole grace when shorter, for a connection
// that will never carry a call: the spare one Go's HTTP client dials when a
// request waiting for a dial is handed an idle connection instead, a
// browser's preconnect, a TCP health check. Such a connection is as idle as
// a keep-alive one, and once the listener is closed it is closed the same way.
type freshConns struct {
	mu      sync.Mutex
	closing bool
	conns   map[net.Conn]struct{}
}

func newFreshConns() *freshConns { return &freshConns{conns: map[net.Conn]struct{}{}} }

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, state http.ConnState) {
	if state == http.StateIdle {
		// Between two requests (every request of a keep-alive connection):
		// the connection left StateNew at its first request already.
		return
	}
	f.mu.Lock()
	if state != http.StateNew {
		delete(f.conns, c)
		f.mu.Unlock()
		return
	}
	if !f.closing {
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	// Accepted just before the listener closed, after closeAll.
	_ = c.Close()
}

// closeAll closes the connections without a request, now and from now on;
// the server calls it once its listener is closed (RegisterOnShutdown).
func (f *freshConns) closeAll() {
	f.mu.Lock()
	f.closing = true
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}
