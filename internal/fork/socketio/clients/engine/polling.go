package engine

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/request"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	queue "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/leanqueue" // patched: see ../PATCHED.md
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
)

// polling implements the HTTP long-polling transport for Engine.IO.
// It provides real-time communication by repeatedly making HTTP requests.
// Polling serves as a fallback when WebSocket is not available and ensures maximum compatibility.
//
// Features:
//   - HTTP/HTTPS support
//   - Automatic reconnection
//   - Binary data support (via base64 encoding)
//   - Cross-domain compatibility
//   - Timeout handling
type polling struct {
	Transport

	// client is the HTTP client used for polling requests (GET/POST).
	client *request.HTTPClient

	// _polling indicates if a polling request is currently in progress.
	_polling atomic.Bool

	writeQueue *queue.Queue

	// patched (see ../PATCHED.md): the transport's requests end with it.
	// ctx bounds every GET and POST; release cancels it once the transport
	// is done (closed, or paused for an upgrade), waits for the poll in
	// flight and closes the HTTP client, whose keep-alive connection
	// would otherwise stay open (and in the heap) for as long as the
	// server keeps it.
	ctx      context.Context
	cancel   context.CancelFunc
	mu       sync.Mutex
	released bool          // under mu: no poll starts any more
	inFlight chan struct{} // under mu: closed when the current poll ends
}

// Name returns the identifier for the polling transport ("polling").
func (p *polling) Name() string {
	return transports.POLLING
}

// MakePolling creates a new Polling transport instance with default settings.
func MakePolling() Polling {
	s := &polling{
		Transport: MakeTransport(),
	}
	s._polling.Store(false)
	s.Prototype(s)
	return s
}

// NewPolling creates a new Polling transport instance with the specified socket and options.
func NewPolling(socket Socket, opts SocketOptionsInterface) Polling {
	s := MakePolling()
	s.Construct(socket, opts)
	return s
}

// Construct initializes the Polling transport with the given socket and options.
func (p *polling) Construct(socket Socket, opts SocketOptionsInterface) {
	p.Transport.Construct(socket, opts)
	p.writeQueue = queue.New()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.client = request.NewHTTPClient(
		request.WithLogger(NewLog("HTTPClient")),
		request.WithTimeout(p.Opts().RequestTimeout()),
		request.WithCookieJar(p.Socket().CookieJar()),
		request.WithTransport(request.NewTransport(p.Opts().TLSClientConfig(), p.Opts().QUICConfig())),
	)
}

// DoOpen starts the polling cycle to establish the connection.
func (p *polling) DoOpen() {
	p._poll()
}

// Pause suspends the polling transport, used during upgrades to prevent packet loss.
// onPause is called when the transport is paused.
//
// patched (see ../PATCHED.md): the listeners are in place before the state
// is looked at, and the poll's end is decided under mu (OnData). Upstream
// looked first and listened after, which is atomic in JavaScript only: here
// the poll ends on its own goroutine, and a poll answered in between (the
// server's NOOP for the upgrade comes about when the probe's pong does) was
// never seen, the transport never paused, and the socket buffered every
// packet from then on: the upgrade hung, and so did everything sent.
func (p *polling) Pause(onPause func()) {
	p.mu.Lock()
	p.SetReadyState(TransportStatePausing)
	p.mu.Unlock()
	var once sync.Once
	var maybePause types.EventListener
	maybePause = func(...any) {
		if p._polling.Load() || !p.Writable() {
			return // the poll's pollComplete, or the write's drain, comes later
		}
		once.Do(func() {
			p.RemoveListener("pollComplete", maybePause)
			p.RemoveListener("drain", maybePause)
			clientPollingLog.Debug("paused")
			p.SetReadyState(TransportStatePaused)
			onPause()
			// patched: a paused transport is never used again (it is paused
			// only to upgrade): nothing is in flight now, let its
			// connection go.
			p.finish()
		})
	}
	_ = p.On("pollComplete", maybePause)
	_ = p.On("drain", maybePause)
	maybePause()
	if hook := testHookPause.Load(); hook != nil {
		(*hook)(p)
	}
}

// testHookPause, when set by a test, runs in Pause just after its first
// look at the transport's state (upstream registered its listeners after
// that look).
var testHookPause atomic.Pointer[func(*polling)]

// testHookPollAnswered, when set by a test, runs in OnData once it has
// decided whether to poll again, before it emits pollComplete and acts on
// the decision.
var testHookPollAnswered atomic.Pointer[func(*polling)]

// testHookPoll, when set by a test, runs as a poll starts.
var testHookPoll atomic.Pointer[func(*polling)]

// _poll starts a new polling cycle and initiates a new polling request.
//
// patched: the poll runs on its own goroutine, not on the write queue. On the
// queue, a long poll held back every write behind it until the server
// answered the poll (up to a ping interval): the namespace CONNECT waited
// for the upgrade's NOOP, or forever with polling alone. engine.io-client
// sends its poll and its writes as independent requests too.
func (p *polling) _poll() {
	clientPollingLog.Debug("polling")
	if hook := testHookPoll.Load(); hook != nil {
		(*hook)(p)
	}
	p.mu.Lock()
	if p.released {
		p.mu.Unlock()
		return
	}
	done := make(chan struct{})
	p.inFlight = done
	p.mu.Unlock()
	p._polling.Store(true)
	p.Emit("poll")
	go func() {
		defer close(done)
		p.doPoll()
	}()
}

// finish makes release the write queue's last task (patched, see the ctx
// field): the writes queued before it go out first (a CLOSE packet) unless
// the caller cancelled them.
func (p *polling) finish() {
	p.writeQueue.Enqueue(p.release)
	p.writeQueue.TryClose()
}

// release ends the transport's HTTP life (patched, see the ctx field): it
// cancels its requests, waits for the poll in flight and closes the
// client's connections (those that become idle later are closed too: see
// http.Transport.CloseIdleConnections).
func (p *polling) release() {
	p.cancel()
	p.mu.Lock()
	p.released = true
	done := p.inFlight
	p.mu.Unlock()
	if done != nil {
		<-done
	}
	_ = p.client.Close()
}

// _onPacket handles incoming packets and updates the transport state accordingly.
func (p *polling) _onPacket(data *packet.Packet) {
	if TransportStateOpening == p.ReadyState() && data.Type == packet.OPEN {
		p.OnOpen()
	}
	if packet.CLOSE == data.Type {
		p.OnClose(errors.New("transport closed by the server"))
		return
	}
	p.OnPacket(data)
}

// OnData decodes the payload and handles each packet in the payload.
func (p *polling) OnData(data types.BufferInterface) {
	clientPollingLog.Debug("polling got data %#v", data)
	packets, _ := parser.Parserv4().DecodePayload(data)
	for _, data := range packets {
		p._onPacket(data)
	}
	// patched (see Pause): whether to poll again is decided under mu, as
	// Pause sets "pausing", and the flag stays set if so. Upstream decided
	// from the state it read before emitting pollComplete: a Pause that
	// came just before that emit paused on it, and a poll went out anyway,
	// soon cancelled by the release; whatever the server wrote to it before
	// the upgrade reached it was lost.
	p.mu.Lock()
	readyState := p.ReadyState()
	again := TransportStateOpen == readyState
	p._polling.Store(again)
	p.mu.Unlock()
	if hook := testHookPollAnswered.Load(); hook != nil {
		(*hook)(p)
	}
	if TransportStateClosed == readyState {
		return
	}
	p.Emit("pollComplete")
	if again {
		p._poll()
	} else {
		clientPollingLog.Debug(`ignoring poll - transport state "%s"`, readyState)
	}
}

// DoClose gracefully closes the polling transport, sending a close packet if needed.
func (p *polling) DoClose() {
	if TransportStateOpen == p.ReadyState() {
		clientPollingLog.Debug("transport open - closing")
		p.Write([]*packet.Packet{{Type: packet.CLOSE}})
		// patched: the requests end once the close packet is written.
		p.finish()
		return
	}
	// patched: upstream waited for the handshake to send the close
	// packet, with nobody waiting for it any more, and closed only the
	// idle connections, not the pending handshake. The handshake is
	// cancelled instead; a session the server opened meanwhile ends at
	// its ping timeout.
	clientPollingLog.Debug("transport not open - cancelling")
	p.cancel()
	p.finish()
}

// Close closes the transport (patched, see ../PATCHED.md): one closed while
// pausing for an upgrade (the client closing mid-upgrade) releases its
// requests too. Upstream's Close did nothing unless the transport was
// opening or open, and left the poll that pausing waits for pending at the
// server, with its connection, until the server's session timed out.
func (p *polling) Close() Transport {
	switch p.ReadyState() {
	case TransportStatePausing, TransportStatePaused:
		p.cancel()
		p.finish()
		return p
	}
	return p.Transport.Close()
}

// OnClose marks the transport closed (patched, see ../PATCHED.md) and lets
// its requests end after the writes already queued. A transport closed by
// the server (a CLOSE packet in a poll answer: the gateway ending a session)
// never went through Close, so upstream kept its HTTP client, and its
// keep-alive connection, for good.
func (p *polling) OnClose(details error) {
	p.Transport.OnClose(details)
	p.finish()
}

// Write encodes and sends packets to the server asynchronously.
func (p *polling) Write(packets []*packet.Packet) {
	p.SetWritable(false)
	p.writeQueue.Enqueue(func() { p.write(packets) })
}

// write performs the actual packet writing operation asynchronously.
func (p *polling) write(packets []*packet.Packet) {
	data, _ := parser.Parserv4().EncodePayload(packets)
	// patched: the body as bytes, so that the POST has a Content-Length.
	// Given as a reader, it went out chunked, and python-engineio reads
	// CONTENT_LENGTH bytes of a body (0 without the header): every packet
	// a Go client posted to a python-socketio server was dropped.
	p.doWrite(data.Bytes(), func() {
		p.SetWritable(true)
		p.Emit("drain")
	})
}

// uri constructs the HTTP URL for the polling transport with query parameters.
func (p *polling) uri() *url.URL {
	schema := "http"
	if p.Opts().Secure() {
		schema = "https"
	}
	query := url.Values{}
	for k, vs := range p.Query() {
		for _, v := range vs {
			query.Add(k, v)
		}
	}
	if p.Opts().TimestampRequests() {
		query.Set(p.Opts().TimestampParam(), request.RandomString())
	}
	if !p.SupportsBinary() && !query.Has("sid") {
		query.Set("b64", "1")
	}
	return p.CreateUri(schema, query)
}

// doPoll performs the HTTP GET request to poll for data from the server.
func (p *polling) doPoll() {
	res, err := p._fetch(nil)
	if p.ctx.Err() != nil {
		return // patched: released on purpose, not a transport error
	}
	if err != nil {
		p.OnError("fetch read error", err, nil)
		return
	}
	defer func() { _ = res.Body.Close() }()
	if !res.Ok() {
		p.OnError("fetch read error", statusError(res), res.Request.Context())
		return
	}
	data, err := types.NewStringBufferReader(res.Body)
	if p.ctx.Err() != nil {
		return // patched: released while reading
	}
	if err != nil {
		p.OnError("fetch read error", err, nil)
		return
	}
	p.OnData(data)
}

// doWrite performs the HTTP POST request to write data to the server.
// fn is called after a successful write.
func (p *polling) doWrite(data []byte, fn func()) {
	res, err := p._fetch(data)
	if p.ctx.Err() != nil {
		return // patched: released on purpose, not a transport error
	}
	if err != nil {
		p.OnError("fetch write error", err, nil)
		return
	}
	defer func() { _ = res.Body.Close() }()
	if !res.Ok() {
		p.OnError("fetch write error", statusError(res), res.Request.Context())
		return
	}
	fn()
}

// _fetch performs the HTTP request with the given data (GET if data is nil, POST otherwise).
// patched: data is a byte slice (see write).
func (p *polling) _fetch(data []byte) (res *request.Response, err error) {
	headers := http.Header{}
	for k, vs := range p.Opts().ExtraHeaders() {
		for _, v := range vs {
			headers.Add(k, v)
		}
	}
	if data != nil {
		headers.Set("Content-Type", "text/plain;charset=UTF-8")
		res, err = p.client.Request(p.ctx, http.MethodPost, p.uri().String(), &request.Options{
			Body:    data,
			Headers: headers,
		})
	} else {
		res, err = p.client.Request(p.ctx, http.MethodGet, p.uri().String(), &request.Options{
			Headers: headers,
		})
	}
	return
}

// statusError is a request the server answered with an error status
// (patched, see ../PATCHED.md): like a refused WebSocket handshake, it keeps
// the server's answer (status, headers, the start of the body), which says
// why (a version refusal, say). Upstream passed res.Err, nil for a status.
func statusError(res *request.Response) error {
	e := &HandshakeError{Err: errors.New("polling request refused"), StatusCode: res.StatusCode(), Header: res.Header()}
	if res.Body != nil {
		e.Body, _ = io.ReadAll(io.LimitReader(res.Body, 4<<10))
	}
	return e
}
