// Package transports implements the WebSocket transport for Engine.IO.
package transports

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"

	ws "github.com/gorilla/websocket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/log"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/slices"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	queue "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/leanqueue" // patched: see PATCHED.md
)

var wsLog = log.NewLog("engine:ws")

type websocket struct {
	Transport

	socket     *types.WebSocketConn
	mu         sync.Mutex
	writeQueue *queue.Queue
	reading    sync.Once
}

// WebSocket transport
func MakeWebSocket() Websocket {
	w := &websocket{Transport: MakeTransport()}

	w.Prototype(w)

	return w
}

func NewWebSocket(ctx *types.HttpContext) Websocket {
	w := MakeWebSocket()

	w.Construct(ctx)

	return w
}

func (w *websocket) Construct(ctx *types.HttpContext) {
	w.Transport.Construct(ctx)

	w.socket = ctx.Websocket
	w.writeQueue = queue.New()

	_ = w.socket.On("error", func(errs ...any) {
		w.OnError("websocket error", slices.TryGetAny[error](errs, 0))
	})
	_ = w.socket.Once("close", func(...any) {
		// smcp-gateway patch: a close by the peer does not go through
		// DoClose, and the write queue's goroutine was left behind.
		w.writeQueue.TryClose()
		w.OnClose()
	})

	// smcp-gateway patch: the reader starts in StartReading, once the
	// engine socket listens to this transport.

	w.SetWritable(true)
	w.SetPerMessageDeflate(nil)
}

// StartReading starts the transport's reader; later calls do nothing
// (smcp-gateway patch). Upstream started it in Construct, before the engine
// socket had registered its "packet" listener: a packet read in between was
// emitted to no one and lost, so an upgrade whose probe ("2probe") came that
// fast hung until the upgrade timeout.
func (w *websocket) StartReading() {
	w.reading.Do(func() { go w.message() })
}

// Transport name
func (w *websocket) Name() string {
	return WEBSOCKET
}

// Advertise upgrade support.
func (w *websocket) HandlesUpgrades() bool {
	return true
}

func (w *websocket) _error(err error) {
	if ws.IsUnexpectedCloseError(err) || errors.Is(err, net.ErrClosed) {
		w.socket.Emit("close")
	} else {
		w.socket.Emit("error", err)
	}
}

// Receiving Messages
func (w *websocket) message() {
	// Reading ends with the peer's close frame or a broken connection. The
	// transport is then "closed" and its Close is a no-op, so DoClose would
	// never release the connection: close it here (smcp-gateway patch; see
	// PATCHED.md).
	defer func() { _ = w.socket.Close() }()
	for {
		// smcp-gateway patch: the limit may have been raised since the last
		// message (Socket.SetMaxHttpBufferSize); gorilla's limit is a plain
		// field read by this goroutine, so only this goroutine sets it. It
		// is checked against each frame's header, before its payload is
		// read. Zero: the limit the upgrade set (server.go HandleUpgrade).
		if n := w.MaxHttpBufferSize(); n > 0 {
			w.socket.SetReadLimit(n)
		}
		mt, message, err := w.socket.NextReader()
		if err != nil {
			w._error(err)
			return
		}

		switch mt {
		case ws.BinaryMessage:
			if b, err := ReadMessage(message); err != nil {
				w._error(err)
			} else {
				w.onMessage(types.NewBytesBuffer(b))
			}
		case ws.TextMessage:
			if b, err := ReadMessage(message); err != nil {
				w._error(err)
			} else if p, ok := w.decodeText(b); ok {
				w.onTextPacket(p)
			} else {
				w.onMessage(types.NewStringBuffer(b))
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

// scratch holds message reads; messages are then copied at their size.
var scratch = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ReadMessage reads a message into a slice of its exact size through a
// pooled scratch buffer (patched: reading into a growing buffer allocated
// 1.5 KiB for a 300-byte message, and eleven times for a blob chunk's
// 930 KB). The engine client reads its messages with it too: one pool for
// every connection of the process, so that what is kept is bounded by the
// messages being read at once, not by the connections.
func ReadMessage(r io.Reader) ([]byte, error) {
	s := scratch.Get().(*bytes.Buffer)
	s.Reset()
	_, err := s.ReadFrom(r)
	b := bytes.Clone(s.Bytes())
	// Kept up to a blob chunk's size (about 1 MB), which would otherwise
	// grow a buffer from nothing for each chunk; one for each message being
	// read at a time.
	if s.Cap() <= 2<<20 {
		scratch.Put(s)
	}
	return b, err
}

// decodeText decodes a text message of protocol 4 in place (smcp-gateway
// patch): the packet's data is the message after its type byte, where the
// parser's DecodePacket copied it into a new buffer (two allocations, a
// copy and the growth of every message received). A message the parser
// would refuse, or decode otherwise (base64), is left to it.
func (w *websocket) decodeText(b []byte) (*packet.Packet, bool) {
	if w.Protocol() != 4 || len(b) == 0 {
		return nil, false
	}
	t, ok := parser.PACKET_TYPES_REVERSE[b[0]]
	if !ok {
		return nil, false
	}
	return &packet.Packet{Type: t, Data: types.NewStringBuffer(b[1:])}, true
}

func (w *websocket) onTextPacket(p *packet.Packet) {
	if wsLog.DebugEnabled() {
		wsLog.Debug(`websocket received "%s"`, p.Data)
	}
	w.OnPacket(p)
}

func (w *websocket) onMessage(data types.BufferInterface) {
	if wsLog.DebugEnabled() { // smcp-gateway patch: no boxed arguments per message
		wsLog.Debug(`websocket received "%s"`, data)
	}
	w.OnData(data)
}

// Writes a packet payload.
func (w *websocket) Send(packets []*packet.Packet) {
	w.SetWritable(false)
	w.writeQueue.Enqueue(func() { w.send(packets) })
}
func (w *websocket) send(packets []*packet.Packet) {
	defer func() {
		w.Emit("drain")
		w.SetWritable(true)
		w.Emit("ready")
	}()

	w.mu.Lock()
	defer w.mu.Unlock()

	// smcp-gateway patch: a batch's frames leave in one write (cork.go).
	if len(packets) > 1 {
		if cc, ok := w.socket.NetConn().(*CorkConn); ok {
			cc.Cork()
			defer func() {
				if err := cc.Uncork(); err != nil {
					w._error(err)
				}
			}()
		}
	}

	for _, packet := range packets {
		// always creates a new object since ws modifies it
		compress := true
		if packet.Options != nil {
			if packet.Options.Compress != nil && !*packet.Options.Compress {
				compress = false
			}

			if w.PerMessageDeflate() == nil && packet.Options.WsPreEncodedFrame != nil {
				mt := ws.BinaryMessage
				if _, ok := packet.Options.WsPreEncodedFrame.(*types.StringBuffer); ok {
					mt = ws.TextMessage
				}
				pm, err := ws.NewPreparedMessage(mt, packet.Options.WsPreEncodedFrame.Bytes())
				if err != nil {
					wsLog.Debug(`Send Error "%s"`, err.Error())
					w._error(err)
					return
				}
				if err := w.socket.WritePreparedMessage(pm); err != nil {
					wsLog.Debug(`Send Error "%s"`, err.Error())
					w._error(err)
					return
				}
				continue

			}
		}

		if w.writeText(packet, compress) {
			continue
		}
		data, err := w.Parser().EncodePacket(packet, w.SupportsBinary())
		if err != nil {
			wsLog.Debug(`Send Error "%s"`, err.Error())
			w._error(err)
			return
		}
		w.write(data, compress)
	}
}

// writeText writes a text MESSAGE of protocol 4 (smcp-gateway patch):
// its type byte and its data go straight into the frame, as EncodePacket
// would have encoded them, without the encoded copy EncodePacket makes
// (a buffer, its growth and a copy of every message sent). It reports
// whether p was such a packet (and was written, or failed the transport).
func (w *websocket) writeText(p *packet.Packet, compress bool) bool {
	data, ok := p.Data.(*types.StringBuffer)
	if !ok || p.Type != packet.MESSAGE || w.Protocol() != 4 {
		return false
	}
	if w.PerMessageDeflate() != nil && 1+data.Len() < w.PerMessageDeflate().Threshold {
		compress = false
	}
	w.socket.EnableWriteCompression(compress)
	write, err := w.socket.NextWriter(ws.TextMessage)
	if err != nil {
		w._error(err)
		return true
	}
	if _, err = io.WriteString(write, "4"); err == nil {
		_, err = write.Write(data.Bytes())
	}
	if cerr := write.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w._error(err)
	}
	return true
}

func (w *websocket) write(data types.BufferInterface, compress bool) {
	if w.PerMessageDeflate() != nil {
		if data.Len() < w.PerMessageDeflate().Threshold {
			compress = false
		}
	}
	if wsLog.DebugEnabled() { // smcp-gateway patch, as in onMessage
		wsLog.Debug(`writing %#v`, data)
	}

	w.socket.EnableWriteCompression(compress)
	mt := ws.BinaryMessage
	if _, ok := data.(*types.StringBuffer); ok {
		mt = ws.TextMessage
	}
	write, err := w.socket.NextWriter(mt)
	if err != nil {
		w._error(err)
		return
	}
	defer func() {
		if err := write.Close(); err != nil {
			w._error(err)
			return
		}
	}()
	if _, err := io.Copy(write, data); err != nil {
		w._error(err)
		return
	}
}

// Closes the transport.
func (w *websocket) DoClose(fn types.Callable) {
	wsLog.Debug(`closing`)
	w.writeQueue.TryClose()
	defer func() { _ = w.socket.Close() }()
	if fn != nil {
		fn()
	}
}
