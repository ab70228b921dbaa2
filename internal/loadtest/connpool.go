package loadtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"
)

// httpConn is one keep-alive connection of a hand-written HTTP/1.1 caller,
// with its reader and the buffers it reuses per call.
type httpConn struct {
	net.Conn
	br   *bufio.Reader
	req  []byte
	body []byte
}

// connPool holds the idle connections of a hand-written HTTP/1.1 caller
// (connectCaller, mcpRawCaller) to one gateway: at most one per worker, so
// a worker never waits for another's connection.
type connPool struct {
	addr   string
	tls    *tls.Config
	idle   chan *httpConn
	mu     sync.Mutex // orders put after close
	closed bool
}

// newConnPool makes the pool of u's host (http or https) for size workers.
func newConnPool(u *url.URL, size int) (*connPool, error) {
	p := &connPool{addr: u.Host, idle: make(chan *httpConn, size)}
	switch u.Scheme {
	case "http":
	case "https":
		p.tls = &tls.Config{ServerName: u.Hostname()}
	default:
		return nil, fmt.Errorf("loadtest: gateway URL %q: want http or https", u)
	}
	if u.Port() == "" {
		p.addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return p, nil
}

// get takes an idle connection or dials one.
func (p *connPool) get(ctx context.Context) (*httpConn, error) {
	select {
	case hc := <-p.idle:
		return hc, nil
	default:
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	var nc net.Conn
	var err error
	if p.tls != nil {
		nc, err = (&tls.Dialer{NetDialer: d, Config: p.tls}).DialContext(ctx, "tcp", p.addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", p.addr)
	}
	if err != nil {
		return nil, fmt.Errorf("loadtest: dial %s: %w", p.addr, err)
	}
	return &httpConn{Conn: nc, br: bufio.NewReader(nc)}, nil
}

// put returns hc to the pool, or closes it once the pool is closed.
func (p *connPool) put(hc *httpConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = hc.Close()
		return
	}
	select {
	case p.idle <- hc:
	default: // more connections than workers: only after a worker's call failed
		_ = hc.Close()
	}
}

// close closes the idle connections; those of calls in flight are closed
// as they come back.
func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for {
		select {
		case hc := <-p.idle:
			_ = hc.Close()
		default:
			return
		}
	}
}
