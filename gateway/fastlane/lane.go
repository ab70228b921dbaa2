// Package fastlane serves plain HTTP/1.1 Connect unary calls without
// net/http's per-request machinery, and hands every other connection to
// net/http.
//
// Why: a Connect call costs one HTTP request, and on two cores net/http's
// HTTP/1.1 cycle (header parsing into textproto maps, the background read it
// starts and aborts for every request, the response writer's chunking logic)
// was a quarter of the gateway's CPU per CallTool. The lane reads the head
// itself, runs the same handler (connect-go, interceptors, auth gate), and
// writes the answer with one write.
//
// What it takes is deliberately narrow (see parseHead): anything else, and
// everything after it on the same connection, is net/http's, with the bytes
// already read replayed. So Socket.IO, WebSocket upgrades, h2c and gRPC,
// streams, CORS preflights and every malformed request get net/http's exact
// behaviour. The lane is for cleartext listeners; with TLS, net/http serves
// everything (ALPN needs its *tls.Conn).
package fastlane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes      = 64 << 10
	DefaultReadHeaderTimeout = 10 * time.Second
	// bufferSize bounds a head the lane takes; larger heads go to net/http
	// (whose limit is 1 MiB).
	bufferSize = 4 << 10
	// keepBufferBytes is the largest request or answer buffer a connection
	// keeps for its next call: one large call must not stay with it.
	keepBufferBytes = 16 << 10
)

// Options configure a Lane.
type Options struct {
	// Paths are the exact request paths the lane serves (the unary
	// procedures); every other path goes to net/http.
	Paths []string
	// Handler serves the lane's requests; it must be the handler net/http
	// serves, so that both give the same answers.
	Handler http.Handler
	// MaxBodyBytes bounds a body the lane reads into memory (default 64 KiB);
	// larger requests go to net/http, which streams them. The lane reads a
	// body before the handler runs, so before the handler's API-key gate:
	// an unauthenticated caller costs at most this much reading.
	MaxBodyBytes int
	// ReadHeaderTimeout bounds reading a request's head and body (default 10 s).
	ReadHeaderTimeout time.Duration
	Logger            *slog.Logger
}

// Lane accepts connections from a listener, serves the plain Connect unary
// requests on them and hands the rest to net/http through Handoff.
type Lane struct {
	ln      net.Listener
	opts    Options
	paths   map[string]string // a path to itself: lookups return it without allocating
	handoff *handoffListener
	log     *slog.Logger

	mu    sync.Mutex
	conns map[*conn]struct{}
	// closing is set under mu (track reads it there) and read without it
	// on every call (shuttingDown), so the calls of all connections do not
	// meet on mu.
	closing atomic.Bool
	idle    chan struct{} // signalled when a connection leaves

	dated  atomic.Pointer[dated]
	served atomic.Uint64
}

// Served is how many calls the lane has answered.
func (l *Lane) Served() uint64 { return l.served.Load() }

// dated is the Date header of answers within one second.
type dated struct {
	sec   int64
	value string
}

// date is the Date header value now, formatted once a second.
func (l *Lane) date() string {
	now := time.Now()
	if d := l.dated.Load(); d != nil && d.sec == now.Unix() {
		return d.value
	}
	d := &dated{sec: now.Unix(), value: now.UTC().Format(http.TimeFormat)}
	l.dated.Store(d)
	return d.value
}

// New makes a lane on ln. Call Serve to accept, and serve Handoff with
// net/http.
func New(ln net.Listener, opts Options) *Lane {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	paths := make(map[string]string, len(opts.Paths))
	for _, p := range opts.Paths {
		paths[p] = p
	}
	l := &Lane{ln: ln, opts: opts, paths: paths, log: opts.Logger,
		conns: map[*conn]struct{}{}, idle: make(chan struct{}, 1)}
	l.handoff = &handoffListener{Listener: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	return l
}

// Handoff is the listener net/http serves: the connections the lane does
// not keep. Closing it closes the lane's listener too.
func (l *Lane) Handoff() net.Listener { return l.handoff }

// Serve accepts connections until the listener is closed.
func (l *Lane) Serve() error {
	defer l.handoff.closeDone()
	var delay time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			// Out of file descriptors and the like: back off and retry, as
			// net/http does (it asks the same deprecated question).
			var ne interface{ Temporary() bool }
			if errors.As(err, &ne) && ne.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				l.log.Warn("accept", "err", err, "retry_in", delay.String())
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		lc := &conn{lane: l, c: c, br: bufio.NewReaderSize(c, bufferSize)}
		lc.w = responseWriter{header: make(http.Header, 4), body: &lc.out}
		if !l.track(lc) {
			_ = c.Close()
			continue
		}
		go lc.serve()
	}
}

// Shutdown stops accepting, closes idle connections at once and the others
// after their call in flight, and waits for them until ctx ends (then
// closes them). Connections handed to net/http are its Shutdown's.
func (l *Lane) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closing.Store(true)
	l.mu.Unlock()
	_ = l.handoff.Close()
	for {
		l.mu.Lock()
		for c := range l.conns {
			c.closeIfIdle()
		}
		n := len(l.conns)
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-l.idle:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			l.Close()
			return ctx.Err()
		}
	}
}

// Close closes the listener and every connection the lane holds.
func (l *Lane) Close() {
	_ = l.handoff.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closing.Store(true)
	for c := range l.conns {
		_ = c.c.Close()
	}
}

// track adds a new connection; false once the lane is closing.
func (l *Lane) track(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing.Load() {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Lane) untrack(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
	select {
	case l.idle <- struct{}{}:
	default:
	}
}

func (l *Lane) shuttingDown() bool { return l.closing.Load() }

// conn is one connection while the lane holds it.
type conn struct {
	lane   *Lane
	c      net.Conn
	br     *bufio.Reader
	remote string
	body   []byte       // the current request's body, reused
	out    bytes.Buffer // the current answer's body, reused
	wbuf   []byte       // the current answer, reused
	w      responseWriter
	reader bodyReader

	// The watch of a call that runs long (see call); its timer is reused.
	watchTimer  *time.Timer
	watchDone   chan bool // true: the client has gone
	watchCancel context.CancelFunc

	mu     sync.Mutex
	active bool // a request is being read or served
	closed bool
}

// serve reads and answers requests until the connection ends or goes to
// net/http.
func (c *conn) serve() {
	defer c.lane.untrack(c)
	c.remote = c.c.RemoteAddr().String()
	for first := true; ; first = false {
		if !first {
			// Idle: wait for the next request without a deadline, as
			// net/http does when IdleTimeout is 0.
			if _, err := c.br.Peek(1); err != nil {
				c.close()
				return
			}
		}
		if !c.setActive(true) {
			return
		}
		h, ok, err := c.readRequest()
		if err != nil {
			c.close() // a timeout or a peer gone within a request: no answer, as net/http
			return
		}
		if !ok {
			c.handOff()
			return
		}
		if !c.call(h) || c.lane.shuttingDown() {
			c.close()
			return
		}
		c.setActive(false)
	}
}

// readRequest reads a request's head and body within ReadHeaderTimeout. ok
// is false, with nothing consumed, if the request is not the lane's.
func (c *conn) readRequest() (h head, ok bool, err error) {
	if err := c.c.SetReadDeadline(time.Now().Add(c.lane.opts.ReadHeaderTimeout)); err != nil {
		return h, false, err
	}
	h, n, ok, err := c.readHead()
	if err != nil || !ok {
		return h, ok, err
	}
	_, _ = c.br.Discard(n)
	if cap(c.body) < h.length || cap(c.body) > keepBufferBytes {
		c.body = make([]byte, h.length)
	}
	c.body = c.body[:h.length]
	if _, err := io.ReadFull(c.br, c.body); err != nil {
		return h, false, err
	}
	return h, true, c.c.SetReadDeadline(time.Time{})
}

// readHead waits for a complete head in the buffer and returns its length.
// ok is false as soon as the bytes read show the request is not the lane's.
func (c *conn) readHead() (h head, n int, ok bool, err error) {
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if !mayBeLanes(buf) {
			return h, 0, false, nil
		}
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			h, ok = parseHead(buf[:i+4], c.lane.paths, c.lane.opts.MaxBodyBytes)
			return h, i + 4, ok, nil
		}
		if len(buf) == bufferSize {
			return h, 0, false, nil
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			return h, 0, false, err
		}
	}
}

// mayBeLanes reports whether buf can still be the start of a lane request:
// every other request goes to net/http without waiting for its whole head.
func mayBeLanes(buf []byte) bool {
	const post = "POST /"
	n := min(len(buf), len(post))
	return string(buf[:n]) == post[:n]
}

// call runs the handler for one request and writes its answer; false if
// the connection must close.
//
// The call's context ends when the client goes away, as with net/http. But
// net/http starts (and aborts) a read on the connection for every request
// to notice that; the lane starts one only for calls still running after
// watchAfter, so a quick call costs no extra read.
func (c *conn) call(h head) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.out.Reset()
	clear(c.w.header)
	c.w.status = 0
	c.reader.Reset(c.body)
	req := &http.Request{
		Method: http.MethodPost, URL: &url.URL{Path: h.path}, RequestURI: h.path,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h.header, Host: h.host, ContentLength: int64(h.length),
		Body: &c.reader, RemoteAddr: c.remote,
	}
	req = req.WithContext(ctx)
	c.startWatch(cancel)
	ok := c.run(&c.w, req)
	if !c.stopWatch() || !ok {
		return false
	}
	c.lane.served.Add(1) // before the answer, so that a client that has it sees the count
	err := c.writeAnswer(&c.w)
	if c.out.Cap() > keepBufferBytes {
		c.out = bytes.Buffer{} // c.w.body points at c.out: the buffer is replaced in place
	}
	return err == nil
}

// watchAfter is how long a call runs before the lane watches its connection
// for the client going away.
const watchAfter = 50 * time.Millisecond

func (c *conn) startWatch(cancel context.CancelFunc) {
	c.mu.Lock()
	c.watchCancel = cancel
	c.mu.Unlock()
	if c.watchTimer == nil {
		c.watchDone = make(chan bool, 1)
		c.watchTimer = time.AfterFunc(watchAfter, c.watch)
		return
	}
	c.watchTimer.Reset(watchAfter)
}

// watch reads the connection of a call that runs long, to cancel the call
// when the client goes away. A pipelined request stays in the buffer.
func (c *conn) watch() {
	_, err := c.br.Peek(1)
	gone := err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
	if gone {
		c.mu.Lock()
		cancel := c.watchCancel
		c.mu.Unlock()
		cancel()
	}
	c.watchDone <- gone
}

// stopWatch ends the watch; false if the client has gone.
func (c *conn) stopWatch() bool {
	if c.watchTimer.Stop() {
		return true
	}
	// The read may be blocked: make it return now, as net/http's
	// abortPendingRead does.
	_ = c.c.SetReadDeadline(time.Unix(1, 0))
	gone := <-c.watchDone
	return !gone && c.c.SetReadDeadline(time.Time{}) == nil
}

// run calls the handler; false if it panicked (net/http closes the
// connection without an answer then, and so does the lane).
func (c *conn) run(w *responseWriter, req *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				c.lane.log.Error("panic serving", "remote", req.RemoteAddr, "path", req.URL.Path,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			ok = false
		}
	}()
	c.lane.opts.Handler.ServeHTTP(w, req)
	return true
}

// writeAnswer writes the status line, headers and body in one write.
func (c *conn) writeAnswer(w *responseWriter) error {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.body.Bytes()
	hdr := w.header
	delete(hdr, "Transfer-Encoding")
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	if _, ok := hdr["Date"]; !ok {
		hdr["Date"] = []string{c.lane.date()}
	}
	if _, ok := hdr["Content-Type"]; !ok && len(body) > 0 {
		hdr["Content-Type"] = []string{http.DetectContentType(body)}
	}
	if c.lane.shuttingDown() {
		hdr["Connection"] = []string{"close"}
	}
	b := append(c.wbuf[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, statusText(status)...)
	b = append(b, "\r\n"...)
	for k, vs := range hdr {
		if !validName([]byte(k)) {
			continue // net/http drops such headers too
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	var err error
	if len(body) <= keepBufferBytes {
		b = append(b, body...)
		_, err = c.c.Write(b)
	} else {
		bufs := net.Buffers{b, body}
		_, err = bufs.WriteTo(c.c)
	}
	if cap(b) <= keepBufferBytes {
		c.wbuf = b
	}
	return err
}

// appendValue appends a header value with its line breaks made spaces, as
// http.Header.Write does, so that a value cannot start a header of its own.
func appendValue(b []byte, v string) []byte {
	for i := range len(v) {
		switch c := v[i]; c {
		case '\r', '\n':
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return b
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "status code " + strconv.Itoa(code)
}

func (c *conn) setActive(active bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.active = active
	return true
}

func (c *conn) closeIfIdle() {
	c.mu.Lock()
	idle := !c.active && !c.closed
	c.mu.Unlock()
	if idle {
		c.close()
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		_ = c.c.Close()
	}
}

// handOff gives the connection to net/http with the bytes read so far.
func (c *conn) handOff() {
	c.mu.Lock()
	c.closed = true // the lane no longer holds it
	c.mu.Unlock()
	_ = c.c.SetReadDeadline(time.Time{})
	buffered, _ := c.br.Peek(c.br.Buffered())
	pc := &prefixConn{Conn: c.c, prefix: bytes.Clone(buffered)}
	if !c.lane.handoff.deliver(pc) {
		_ = c.c.Close()
	}
}

// bodyReader is a request body read from memory.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// responseWriter collects the answer; the lane writes it when the handler
// returns, with its length.
type responseWriter struct {
	header http.Header
	status int
	body   *bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
