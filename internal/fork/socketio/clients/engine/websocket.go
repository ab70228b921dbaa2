package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/request"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/slices"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	queue "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/leanqueue" // patched: see ../PATCHED.md
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
)

// WebSocket implements the WebSocket transport for Engine.IO.
// It provides full-duplex communication over a single TCP connection using
// the WebSocket protocol. This transport supports both text and binary
// data transmission, with optional compression.
//
// Features:
//   - Full-duplex communication
//   - Binary data support
//   - Message compression (optional)
//   - Automatic reconnection
//   - Custom protocols support
type websocket struct {
	Transport

	// dialer is the WebSocket dialer used to establish connections.
	// It handles connection establishment with custom options like
	// proxy settings, TLS configuration, and protocol selection.
	dialer *ws.Dialer

	// socket is the active WebSocket connection instance.
	// It provides the actual communication channel with the server.
	socket *types.WebSocketConn

	// mu protects concurrent access to the WebSocket connection.
	// This ensures thread-safe operations on the connection.
	mu sync.Mutex

	writeQueue *queue.Queue

	// patched (see ../PATCHED.md): a transport closed while it dials
	// (an upgrade probe when the client closes) cancels the dial, and a
	// connection that comes back anyway is closed, not kept open for
	// good with its reader. Upstream's DoClose found no socket yet and
	// did nothing.
	ctx      context.Context
	cancel   context.CancelFunc
	connMu   sync.Mutex
	isClosed bool // under connMu
}

// Name returns the identifier for the WebSocket transport.
// This identifier is used in transport selection and upgrade processes.
//
// Returns:
//   - string: The transport name ("websocket")
func (w *websocket) Name() string {
	return transports.WEBSOCKET
}

// MakeWebSocket creates a new WebSocket transport instance with default settings.
// This is the factory function for creating a new WebSocket transport.
//
// Returns:
//   - WebSocket: A new WebSocket transport instance initialized with default settings
func MakeWebSocket() WebSocket {
	s := &websocket{
		Transport: MakeTransport(),
	}

	s.Prototype(s)

	return s
}

// NewWebSocket creates a new WebSocket transport instance with the specified
// socket and options.
//
// Parameters:
//   - socket: The parent socket instance
//   - opts: The socket options configuration
//
// Returns:
//   - WebSocket: A new WebSocket transport instance configured with the specified options
func NewWebSocket(socket Socket, opts SocketOptionsInterface) WebSocket {
	s := MakeWebSocket()

	s.Construct(socket, opts)

	return s
}

// Construct initializes the WebSocket transport with the given socket and options.
// This sets up the WebSocket dialer with appropriate configuration for the connection.
//
// Parameters:
//   - socket: The parent socket instance
//   - opts: The socket options configuration
func (w *websocket) Construct(socket Socket, opts SocketOptionsInterface) {
	w.Transport.Construct(socket, opts)

	w.writeQueue = queue.New()
	w.ctx, w.cancel = context.WithCancel(context.Background())

	w.dialer = &ws.Dialer{
		Proxy:             http.ProxyFromEnvironment,
		TLSClientConfig:   w.Opts().TLSClientConfig(),
		Subprotocols:      w.Opts().Protocols(),
		EnableCompression: w.Opts().PerMessageDeflate() != nil,
		Jar:               w.Socket().CookieJar(),
		// smcp-gateway patch: a client masks what it sends, so gorilla
		// copies each message through its write buffer and writes it a
		// buffer at a time: at the default 4 KiB, a 350 KB blob chunk took
		// 85 writes here and as many reads at the gateway.
		WriteBufferSize: clientWriteBufferSize,
	}
}

// clientWriteBufferSize is the WebSocket write buffer of a client
// connection (smcp-gateway patch): one per connection, of which a client
// has one or two.
const clientWriteBufferSize = 64 << 10

// DoOpen initiates the WebSocket connection.
// This method establishes the WebSocket connection and sets up event listeners.
// It handles the initial handshake and connection setup process.
func (w *websocket) DoOpen() {
	headers := http.Header{}
	for k, vs := range w.Opts().ExtraHeaders() {
		for _, v := range vs {
			headers.Add(k, v)
		}
	}
	socket, resp, err := w.dialer.DialContext(w.ctx, w.uri().String(), headers)
	if w.ctx.Err() != nil {
		// patched: closed while dialing.
		if err == nil {
			_ = socket.Close()
		}
		return
	}
	if err != nil {
		if resp != nil {
			// Patched (../PATCHED.md): keep the server's HTTP answer, which
			// says why it refused (a version refusal, say).
			err = newHandshakeError(err, resp)
		}
		w.Emit("error", err)
		return
	}
	w.connMu.Lock()
	if w.isClosed {
		w.connMu.Unlock()
		_ = socket.Close()
		return
	}
	w.socket = &types.WebSocketConn{EventEmitter: types.NewEventEmitter(), Conn: socket}
	w.connMu.Unlock()

	w.addEventListeners()
}

func (w *websocket) _error(err error) {
	if ws.IsUnexpectedCloseError(err) || errors.Is(err, net.ErrClosed) {
		// Patched (../PATCHED.md): the close error (its code) goes with
		// the close, instead of being dropped.
		w.socket.Emit("close", err)
	} else {
		w.socket.Emit("error", err)
	}
}

// message handles the WebSocket message reading loop.
// This method processes incoming WebSocket messages and handles different message types.
// It runs in a separate goroutine to continuously read messages from the connection.
func (w *websocket) message() {
	for {
		mt, message, err := w.socket.NextReader()
		if err != nil {
			w._error(err)
			return
		}

		switch mt {
		case ws.BinaryMessage:
			if b, err := transports.ReadMessage(message); err != nil { // patched (see ../PATCHED.md)
				w._error(err)
			} else {
				w.OnData(types.NewBytesBuffer(b))
			}
		case ws.TextMessage:
			if b, err := transports.ReadMessage(message); err != nil { // patched (see ../PATCHED.md)
				w._error(err)
			} else {
				w.OnData(types.NewStringBuffer(b))
			}
		case ws.CloseMessage:
			w.socket.Emit("close")
			if c, ok := message.(io.Closer); ok {
				_ = c.Close()
			}
			return
		case ws.PingMessage:
		case ws.PongMessage:
		}
		if c, ok := message.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// addEventListeners sets up event handlers for the WebSocket connection.
// This method configures error and close event handlers and starts the
// message reading loop.
func (w *websocket) addEventListeners() {
	_ = w.socket.On("error", func(errs ...any) {
		w.OnError("websocket error", slices.TryGetAny[error](errs, 0), nil)
	})
	_ = w.socket.Once("close", func(args ...any) {
		w.OnClose(NewTransportError("websocket connection closed", slices.TryGetAny[error](args, 0), nil).Err())
	})

	// This goroutine is invoked only once.
	go w.message()

	w.OnOpen()
}

// Write sends packets over the WebSocket connection.
// This method handles packet encoding and WebSocket message framing.
//
// Parameters:
//   - packets: Array of packets to be sent
func (w *websocket) Write(packets []*packet.Packet) {
	w.SetWritable(false)

	w.writeQueue.Enqueue(func() { w.write(packets) })
}

// write performs the actual packet writing operation.
// This method runs in a separate goroutine to handle asynchronous writes.
//
// Parameters:
//   - packets: Array of packets to be sent
func (w *websocket) write(packets []*packet.Packet) {
	// fake drain
	// defer to next tick to allow Socket to clear writeBuffer
	defer func() {
		w.SetWritable(true)
		w.Emit("drain")
	}()

	var writeErr error

	w.mu.Lock()
	// encodePacket efficient as it uses websocket framing
	// no need for encodePayload
	for _, packet := range packets {
		// always creates a new object since ws modifies it
		compress := true
		if packet.Options != nil {
			if packet.Options.Compress != nil && !*packet.Options.Compress {
				compress = false
			}

			if w.Opts().PerMessageDeflate() == nil && packet.Options.WsPreEncodedFrame != nil {
				mt := ws.BinaryMessage
				if _, ok := packet.Options.WsPreEncodedFrame.(*types.StringBuffer); ok {
					mt = ws.TextMessage
				}
				pm, err := ws.NewPreparedMessage(mt, packet.Options.WsPreEncodedFrame.Bytes())
				if err != nil {
					clientWebsocketLog.Debug(`Send Error "%s"`, err.Error())
					writeErr = err
					break
				}
				if err := w.socket.WritePreparedMessage(pm); err != nil {
					clientWebsocketLog.Debug(`Send Error "%s"`, err.Error())
					writeErr = err
					break
				}
				continue
			}
		}

		data, err := parser.Parserv4().EncodePacket(packet, w.SupportsBinary())
		if err != nil {
			clientWebsocketLog.Debug(`Send Error "%s"`, err.Error())
			writeErr = err
			break
		}
		w.doWrite(data, compress, &writeErr)
		if writeErr != nil {
			break
		}
	}
	w.mu.Unlock()

	// Report errors outside of the lock to prevent potential deadlocks
	// from event handlers that may try to write.
	if writeErr != nil {
		w._error(writeErr)
	}
}

// doWrite performs the actual WebSocket write operation.
// This method handles message compression and WebSocket message framing.
// When called from write() under lock, errors are stored in writeErr instead of
// calling _error() directly, to prevent deadlocks from event handlers.
//
// Parameters:
//   - data: The data to be written
//   - compress: Whether to compress the message
//   - writeErr: Optional error pointer to store errors (when called under lock)
func (w *websocket) doWrite(data types.BufferInterface, compress bool, writeErr ...*error) {
	reportErr := func(err error) {
		if len(writeErr) > 0 && writeErr[0] != nil {
			*writeErr[0] = err
		} else {
			w._error(err)
		}
	}

	if perMessageDeflate := w.Opts().PerMessageDeflate(); perMessageDeflate != nil {
		if data.Len() < perMessageDeflate.Threshold {
			compress = false
		}
	}
	clientWebsocketLog.Debug(`writing %#v`, data)

	w.socket.EnableWriteCompression(compress)
	mt := ws.BinaryMessage
	if _, ok := data.(*types.StringBuffer); ok {
		mt = ws.TextMessage
	}
	write, err := w.socket.NextWriter(mt)
	if err != nil {
		reportErr(err)
		return
	}
	defer func() {
		if err := write.Close(); err != nil {
			reportErr(err)
			return
		}
	}()
	if _, err := io.Copy(write, data); err != nil {
		reportErr(err)
		return
	}
}

// DoClose gracefully closes the WebSocket connection.
// This method ensures proper cleanup of the WebSocket connection.
func (w *websocket) DoClose() {
	w.connMu.Lock()
	w.isClosed = true
	conn := w.socket
	w.connMu.Unlock()
	w.cancel()
	w.writeQueue.TryClose()
	if conn != nil {
		defer func() { _ = conn.Close() }()
	}
}

// uri generates the URI for the WebSocket connection.
// This method constructs the appropriate WebSocket URL with query parameters.
//
// Returns:
//   - *url.URL: The constructed WebSocket URL
func (w *websocket) uri() *url.URL {
	schema := "ws"
	if w.Opts().Secure() {
		schema = "wss"
	}

	query := url.Values{}
	for k, vs := range w.Query() {
		for _, v := range vs {
			query.Add(k, v)
		}
	}

	if w.Opts().TimestampRequests() {
		query.Set(w.Opts().TimestampParam(), request.RandomString())
	}

	if !w.SupportsBinary() {
		query.Set("b64", "1")
	}

	return w.CreateUri(schema, query)
}
