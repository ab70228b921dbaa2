// Package transports implements the WebTransport transport for Engine.IO.
package transports

import (
	"errors"
	"io"
	"net"
	"sync"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/log"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/slices"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/webtransport"
	queue "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/leanqueue" // patched: see PATCHED.md
)

var (
	wtLog = log.NewLog("engine:webtransport")
)

type webTransport struct {
	Transport

	session    *types.WebTransportConn
	mu         sync.Mutex
	writeQueue *queue.Queue
}

// WebTransport transport
func MakeWebTransport() WebTransport {
	w := &webTransport{Transport: MakeTransport()}

	w.Prototype(w)

	return w
}

func NewWebTransport(ctx *types.HttpContext) WebTransport {
	w := MakeWebTransport()

	w.Construct(ctx)

	return w
}

func (w *webTransport) Construct(ctx *types.HttpContext) {
	w.Transport.Construct(ctx)

	w.session = ctx.WebTransport
	w.writeQueue = queue.New()

	_ = w.session.On("error", func(errs ...any) {
		w.OnError("webtransport error", slices.TryGetAny[error](errs, 0))
	})
	_ = w.session.Once("close", func(...any) {
		w.writeQueue.TryClose() // patched, as in websocket.go
		w.OnClose()
	})

	// This goroutine is invoked only once.
	go w.message()

	w.SetWritable(true)
	w.SetPerMessageDeflate(nil)
}

// Transport name
func (w *webTransport) Name() string {
	return WEBTRANSPORT
}

// Advertise upgrade support.
func (w *webTransport) HandlesUpgrades() bool {
	return true
}

func (w *webTransport) _error(err error) {
	if webtransport.IsUnexpectedCloseError(err) || errors.Is(err, net.ErrClosed) {
		w.session.Emit("close")
	} else {
		w.session.Emit("error", err)
	}
}

// Receiving Messages
func (w *webTransport) message() {
	for {
		mt, message, err := w.session.NextReader()
		if err != nil {
			w._error(err)
			return
		}

		switch mt {
		case webtransport.BinaryMessage:
			read := types.NewBytesBuffer(nil)
			if _, err := read.ReadFrom(message); err != nil {
				w._error(err)
			} else {
				w.onMessage(read)
			}
		case webtransport.TextMessage:
			read := types.NewStringBuffer(nil)
			if _, err := read.ReadFrom(message); err != nil {
				w._error(err)
			} else {
				w.onMessage(read)
			}
		}
		if c, ok := message.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

func (w *webTransport) onMessage(data types.BufferInterface) {
	wtLog.Debug(`webTransport received "%s"`, data)
	w.OnData(data)
}

// Writes a packet payload.
func (w *webTransport) Send(packets []*packet.Packet) {
	w.SetWritable(false)
	w.writeQueue.Enqueue(func() { w.send(packets) })
}
func (w *webTransport) send(packets []*packet.Packet) {
	defer func() {
		w.Emit("drain")
		w.SetWritable(true)
		w.Emit("ready")
	}()

	w.mu.Lock()
	defer w.mu.Unlock()

	for _, packet := range packets {
		// always creates a new object since ws modifies it
		compress := true
		if packet.Options != nil {
			if packet.Options.Compress != nil && !*packet.Options.Compress {
				compress = false
			}

			if w.PerMessageDeflate() == nil && packet.Options.WsPreEncodedFrame != nil {
				mt := webtransport.BinaryMessage
				if _, ok := packet.Options.WsPreEncodedFrame.(*types.StringBuffer); ok {
					mt = webtransport.TextMessage
				}
				pm, err := webtransport.NewPreparedMessage(mt, packet.Options.WsPreEncodedFrame.Bytes())
				if err != nil {
					wtLog.Debug(`Send Error "%s"`, err.Error())
					w._error(err)
					return
				}
				if err := w.session.WritePreparedMessage(pm); err != nil {
					wtLog.Debug(`Send Error "%s"`, err.Error())
					w._error(err)
					return
				}
				continue

			}
		}

		data, err := w.Parser().EncodePacket(packet, w.SupportsBinary())
		if err != nil {
			wtLog.Debug(`Send Error "%s"`, err.Error())
			w._error(err)
			return
		}
		w.write(data, compress)
	}
}

func (w *webTransport) write(data types.BufferInterface, _ bool) {
	// if w.PerMessageDeflate() != nil {
	// 	if data.Len() < w.PerMessageDeflate().Threshold {
	// 		compress = false
	// 	}
	// }
	wtLog.Debug(`writing %s`, data)

	// w.session.EnableWriteCompression(compress)
	mt := webtransport.BinaryMessage
	if _, ok := data.(*types.StringBuffer); ok {
		mt = webtransport.TextMessage
	}
	write, err := w.session.NextWriter(mt)
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
func (w *webTransport) DoClose(fn types.Callable) {
	wtLog.Debug(`closing WebTransport session`)
	w.writeQueue.TryClose()
	defer func() { _ = w.session.CloseWithError(0, "") }()
	if fn != nil {
		fn()
	}
}
