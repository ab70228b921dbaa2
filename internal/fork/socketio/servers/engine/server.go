// Package engine provides the Engine.IO server implementation, including HTTP/WebSocket/WebTransport handling and protocol management.
package engine

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
	"github.com/quic-go/webtransport-go"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/utils"
	webtrans "github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/webtransport"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/config"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/errors"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
)

const (
	// DefaultWSReadBufferSize is the default read buffer size for WebSocket connections.
	DefaultWSReadBufferSize = 1024

	// DefaultWSWriteBufferSize is the default write buffer size for WebSocket connections.
	DefaultWSWriteBufferSize = 1024
)

type server struct {
	BaseServer

	httpServer *types.HttpServer

	// Patched: WebSocket write buffers are borrowed per message instead of
	// kept per connection (an idle connection holds none).
	wsWriteBuffers websocket.BufferPool
}

// new server.
func MakeServer() Server {
	s := &server{BaseServer: MakeBaseServer(), wsWriteBuffers: &sync.Pool{}}

	s.Prototype(s)

	return s
}

// create server.
func NewServer(opt any) Server {
	s := MakeServer()

	s.Construct(opt)

	return s
}

func (s *server) SetHttpServer(httpServer *types.HttpServer) {
	s.httpServer = httpServer
}

func (s *server) HttpServer() *types.HttpServer {
	return s.httpServer
}

func (s *server) Init() {
}

func (s *server) Cleanup() {
}

func (s *server) CreateTransport(transportName string, ctx *types.HttpContext) (transports.Transport, error) {
	if transport, ok := s.TransportsByName()[transportName]; ok {
		return transport.New(ctx), nil
	}
	return nil, errors.ErrUnsupportedTransport
}

// Handles an Engine.IO HTTP request.
func (s *server) HandleRequest(ctx *types.HttpContext) {
	serverLog.Debug(`handling "%s" http request "%s"`, ctx.Method(), ctx.Request().RequestURI)

	callback := func(codeMessage *types.CodeMessage, errorContext map[string]any) {
		if codeMessage != nil {
			s.emitAbortRequest(ctx, codeMessage, errorContext)
			return
		}

		if sid := ctx.Query().Peek("sid"); sid != "" {
			serverLog.Debug("setting new request for existing client")
			if socket, ok := s.Clients().Load(sid); ok {
				socket.Transport().OnRequest(ctx)
			} else {
				abortRequest(ctx, UNKNOWN_SID, map[string]any{"sid": sid})
			}
		} else {
			if codeMessage, t := s.Handshake(ctx.Query().Peek("transport"), ctx); t == nil {
				abortRequest(ctx, codeMessage, nil)
			}
		}
	}

	s.ApplyMiddlewares(ctx, func(err error) {
		if err != nil {
			callback(BAD_REQUEST, map[string]any{"name": "MIDDLEWARE_FAILURE"})
		} else {
			callback(s.Verify(ctx, false))
		}
	})

	// Wait for data to be written to the client.
	<-ctx.Done()
}

// Handles an Engine.IO HTTP Upgrade.
func (s *server) HandleUpgrade(ctx *types.HttpContext) {
	callback := func(codeMessage *types.CodeMessage, errorContext map[string]any) {
		if codeMessage != nil {
			s.emitAbortUpgrade(ctx, codeMessage, errorContext)
			return
		}

		wsc := &types.WebSocketConn{EventEmitter: types.NewEventEmitter()}

		ws := &websocket.Upgrader{
			// Patched: a read buffer size of 0 makes gorilla reuse the 4 KiB
			// reader net/http hijacks instead of allocating another; writes
			// borrow their buffer from a pool shared by all connections.
			ReadBufferSize:    0,
			WriteBufferSize:   0,
			WriteBufferPool:   s.wsWriteBuffers,
			EnableCompression: s.Opts().PerMessageDeflate() != nil,
			Error: func(_ http.ResponseWriter, _ *http.Request, _ int, reason error) {
				if websocket.IsUnexpectedCloseError(reason) {
					wsc.Emit("close")
				} else {
					wsc.Emit("error", reason)
				}
			},
			CheckOrigin: func(*http.Request) bool {
				// Verified in *server.Verify()
				return true
			},
		}

		// delegate to ws
		// smcp-gateway patch: the connection is a transports.CorkConn, so
		// that the transport writes a batch of packets at once.
		if conn, err := ws.Upgrade(transports.CorkingResponse(ctx.Response()), ctx.Request(), ctx.ResponseHeaders().All()); err != nil {
			s.emitAbortRequest(ctx, BAD_REQUEST, map[string]any{"name": "UPGRADE_FAILURE"})
			serverLog.Debug("websocket error before upgrade: %s", err.Error())
		} else {
			// smcp-gateway patch: a new session's initial limit, or the
			// limit of the session this upgrade belongs to; set before the
			// transport's reader starts, which alone changes it after.
			limit := s.Opts().InitialMaxHttpBufferSize()
			if sid := ctx.Query().Peek("sid"); sid != "" {
				if client, ok := s.Clients().Load(sid); ok {
					limit = client.MaxHttpBufferSize()
				}
			}
			conn.SetReadLimit(limit)
			wsc.Conn = conn
			s.onWebSocket(upgraded(ctx), wsc)
		}
	}

	s.ApplyMiddlewares(ctx, func(err error) {
		if err != nil {
			callback(BAD_REQUEST, map[string]any{"name": "MIDDLEWARE_FAILURE"})
		} else {
			callback(s.Verify(ctx, true))
		}
	})
}

// upgraded returns the context an upgraded connection keeps for its
// lifetime (patched): the same request, for the handshake's headers, query
// and address, but not net/http's response writer, which refers to the
// hijacked connection's state (a 4 KiB write buffer among it) and would keep
// it alive as long as the WebSocket.
func upgraded(ctx *types.HttpContext) *types.HttpContext {
	return types.NewHttpContext(hijackedResponse{header: ctx.ResponseHeaders().All()}, ctx.Request())
}

// hijackedResponse stands for the response of an upgraded request: its
// headers were sent with the 101 answer, nothing can be written any more.
type hijackedResponse struct{ header http.Header }

func (r hijackedResponse) Header() http.Header     { return r.header }
func (hijackedResponse) Write([]byte) (int, error) { return 0, http.ErrHijacked }
func (hijackedResponse) WriteHeader(int)           {}

// Called upon a ws.io connection.
func (s *server) onWebSocket(ctx *types.HttpContext, wsc *types.WebSocketConn) {
	onUpgradeError := func(...any) {
		serverLog.Debug("websocket error before upgrade")
		// wsc.close() not needed
	}

	_ = wsc.On("error", onUpgradeError)

	transportName := ctx.Query().Peek("transport")
	if transport, ok := s.TransportsByName()[transportName]; ok && !transport.HandlesUpgrades() {
		serverLog.Debug("transport doesnt handle upgraded requests")
		_ = wsc.Close()
		return
	}

	// get client id
	id := ctx.Query().Peek("sid")

	// keep a reference to the ws.Socket
	ctx.Websocket = wsc

	if len(id) == 0 {
		if codeMessage, t := s.Handshake(transportName, ctx); t == nil {
			abortUpgrade(ctx, codeMessage, nil)
		} else {
			// transport error handling takes over
			wsc.RemoveListener("error", onUpgradeError)
		}
		return
	}

	client, ok := s.Clients().Load(id)

	if !ok {
		serverLog.Debug("upgrade attempt for closed client")
		_ = wsc.Close()
	} else if client.Upgrading() {
		serverLog.Debug("transport has already been trying to upgrade")
		_ = wsc.Close()
	} else if client.Upgraded() {
		serverLog.Debug("transport had already been upgraded")
		_ = wsc.Close()
	} else {
		serverLog.Debug("upgrading existing transport")

		// transport error handling takes over
		wsc.RemoveListener("error", onUpgradeError)

		transport, err := s.CreateTransport(transportName, ctx)
		if err != nil {
			serverLog.Debug("upgrading not existing transport")
			_ = wsc.Close()
		} else {
			transport.SetPerMessageDeflate(s.Opts().PerMessageDeflate())
			client.MaybeUpgrade(transport)
		}
	}
}

func (s *server) OnWebTransportSession(ctx *types.HttpContext, wt *webtransport.Server) {
	if allowRequest := s.Opts().AllowRequest(); allowRequest != nil {
		if err := allowRequest(ctx); err != nil {
			s.emitAbortRequest(ctx, FORBIDDEN, map[string]any{"message": err.Error()})
			return
		}
	}

	session, err := wt.Upgrade(ctx.Response(), ctx.Request())
	if err != nil {
		serverLog.Debug("upgrading failed: %s", err.Error())
		s.emitAbortRequest(ctx, BAD_REQUEST, map[string]any{"name": "UPGRADE_FAILURE"})
		return
	}

	timeout := utils.SetTimeout(func() {
		serverLog.Debug("the client failed to establish a bidirectional stream in the given period")
		_ = session.CloseWithError(0, "")
	}, s.Opts().UpgradeTimeout())

	stream, err := session.AcceptStream(context.Background())
	if err != nil {
		serverLog.Debug("session is closed")
		abortUpgrade(ctx, BAD_REQUEST, nil)
		return
	}

	wtc := webtrans.NewConn(session, stream, true, 0, 0, nil, nil, nil)
	wtc.SetReadLimit(s.Opts().InitialMaxHttpBufferSize()) // smcp-gateway patch

	ctx.WebTransport = &types.WebTransportConn{EventEmitter: types.NewEventEmitter(), Conn: wtc}

	mt, message, err := wtc.NextReader()
	if err != nil {
		serverLog.Debug("stream is closed: %s", err.Error())
		abortUpgrade(ctx, BAD_REQUEST, nil)
		return
	}

	var data types.BufferInterface

	switch mt {
	case webtrans.BinaryMessage:
		data = types.NewBytesBuffer(nil)
		if _, err := data.ReadFrom(message); err != nil {
			serverLog.Debug("WebTransport handshake data read failed: %s", err.Error())
			abortUpgrade(ctx, BAD_REQUEST, nil)
			return
		}
	case webtrans.TextMessage:
		data = types.NewStringBuffer(nil)
		if _, err := data.ReadFrom(message); err != nil {
			serverLog.Debug("WebTransport handshake data read failed: %s", err.Error())
			abortUpgrade(ctx, BAD_REQUEST, nil)
			return
		}
	}
	if c, ok := message.(io.Closer); ok {
		_ = c.Close()
	}

	utils.ClearTimeout(timeout)

	value, _ := parser.Parserv4().DecodePacket(data)

	if v, ok := value.Data.(io.Closer); ok {
		defer func() { _ = v.Close() }()
	}

	if value.Type != packet.OPEN {
		serverLog.Debug("invalid WebTransport handshake")
		abortUpgrade(ctx, BAD_REQUEST, nil)
		return
	}

	if data, ok := value.Data.(types.BufferInterface); ok && data.Len() == 0 {
		ctx.Query().Set("EIO", "4")
		if codeMessage, t := s.Handshake(ctx.Request().Proto, ctx); t == nil {
			abortUpgrade(ctx, codeMessage, nil)
		}
		return
	}

	var wth *struct {
		Sid string `json:"sid"`
	}

	if json.NewDecoder(value.Data).Decode(&wth) != nil {
		serverLog.Debug("invalid WebTransport handshake")
		abortUpgrade(ctx, BAD_REQUEST, nil)
		return
	}

	if len(wth.Sid) == 0 {
		serverLog.Debug("invalid WebTransport handshake")
		abortUpgrade(ctx, BAD_REQUEST, nil)
		return
	}

	client, ok := s.Clients().Load(wth.Sid)

	if !ok {
		serverLog.Debug("upgrade attempt for closed client")
		_ = session.CloseWithError(0, "")
	} else if client.Upgrading() {
		serverLog.Debug("transport has already been trying to upgrade")
		_ = session.CloseWithError(0, "")
	} else if client.Upgraded() {
		serverLog.Debug("transport had already been upgraded")
		_ = session.CloseWithError(0, "")
	} else {
		serverLog.Debug("upgrading existing transport")

		transport, err := s.CreateTransport(ctx.Request().Proto, ctx)
		if err != nil {
			serverLog.Debug("upgrading not existing transport")
			_ = session.CloseWithError(0, "")
		} else {
			transport.SetPerMessageDeflate(s.Opts().PerMessageDeflate())
			client.MaybeUpgrade(transport)
		}
	}
}

// Captures upgrade requests for a types.HttpServer.
func (s *server) Attach(server *types.HttpServer, opts any) {
	options, _ := opts.(config.AttachOptionsInterface)
	path := s.ComputePath(options)

	_ = server.Once("close", func(...any) {
		s.Close()
	})

	_ = server.Once("listening", func(...any) {
		s.Proto().Init()
	})

	server.HandleFunc(path, s.ServeHTTP)
}

// Captures upgrade requests for a http.Handler, Need to handle server shutdown disconnecting client connections.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		serverLog.Debug(`intercepting request for path "%s"`, utils.CleanPath(r.URL.Path))
		s.HandleRequest(types.NewHttpContext(w, r))
	} else if s.Transports().Has(transports.WEBSOCKET) {
		s.HandleUpgrade(types.NewHttpContext(w, r))
	} else {
		http.Error(w, "Not Implemented", http.StatusNotImplemented)
	}
}

// Close the HTTP long-polling request
func abortRequest(ctx *types.HttpContext, codeMessage *types.CodeMessage, errorContext map[string]any) {
	serverLog.Debug("abortRequest %d, %+v", codeMessage.Code, errorContext)
	statusCode := http.StatusBadRequest
	if codeMessage == FORBIDDEN {
		statusCode = http.StatusForbidden
	}
	message := codeMessage.Message
	if errorContext != nil {
		if m, ok := errorContext["message"]; ok {
			message = utils.TryCast[string](m)
		}
	}
	ctx.ResponseHeaders().Set("Content-Type", "application/json")
	_ = ctx.SetStatusCode(statusCode)
	if b, err := json.Marshal(types.CodeMessage{Code: codeMessage.Code, Message: message}); err == nil {
		_, _ = ctx.Write(b)
		return
	}
	_, _ = io.WriteString(ctx, `{"code":400,"message":"Bad request"}`)
}

func (s *server) emitAbortRequest(ctx *types.HttpContext, codeMessage *types.CodeMessage, errorContext map[string]any) {
	s.Emit("connection_error", &types.ErrorMessage{
		CodeMessage: codeMessage,
		Req:         ctx,
		Context:     errorContext,
	})
	abortRequest(ctx, codeMessage, errorContext)
}

// Close the WebSocket connection
func abortUpgrade(ctx *types.HttpContext, codeMessage *types.CodeMessage, errorContext map[string]any) {
	_ = ctx.On("error", func(...any) {
		serverLog.Debug("ignoring error from closed connection")
	})

	message := codeMessage.Message
	if errorContext != nil {
		if m, ok := errorContext["message"]; ok {
			message = utils.TryCast[string](m)
		}
	}

	if ctx.Websocket != nil {
		defer func() { _ = ctx.Websocket.Close() }()
		_ = ctx.Websocket.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, message))
	} else if ctx.WebTransport != nil {
		_ = ctx.WebTransport.CloseWithError(http.StatusBadRequest, message)
	} else {
		_ = ctx.SetStatusCode(http.StatusBadRequest)
		_, _ = io.WriteString(ctx, message)
	}
}

func (s *server) emitAbortUpgrade(ctx *types.HttpContext, codeMessage *types.CodeMessage, errorContext map[string]any) {
	s.Emit("connection_error", &types.ErrorMessage{
		CodeMessage: codeMessage,
		Req:         ctx,
		Context:     errorContext,
	})
	abortUpgrade(ctx, codeMessage, errorContext)
}
