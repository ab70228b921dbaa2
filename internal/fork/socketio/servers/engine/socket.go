// Package engine implements the Engine.IO socket, which manages client connections, transport upgrades, and protocol state.
package engine

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/engine/packet"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/log"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/slices"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/utils"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/errors"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
)

var socketLog = log.NewLog("engine:socket")

const (
	// DefaultUpgradeCheckInterval is the interval between upgrade readiness checks during transport upgrade.
	DefaultUpgradeCheckInterval = 100 * time.Millisecond
)

type socket struct {
	types.EventEmitter

	// The revision of the protocol:
	//
	// - 3rd is used in Engine.IO v3 / Socket.IO v2
	// - 4th is used in Engine.IO v4 and above / Socket.IO v3 and above
	//
	// It is found in the `EIO` query parameters of the HTTP requests.
	//
	// See: https://github.com/socketio/engine.io-protocol
	protocol int
	// A reference to the first HTTP request of the session
	//
	// TODO for the next major release: remove it
	request *types.HttpContext
	// The IP address of the client.
	remoteAddress string

	// The current state of the socket.
	readyState types.Atomic[string]
	// The current low-level transport.
	transport atomic.Pointer[transports.Transport]

	// This is the session identifier that the client will use in the subsequent HTTP requests. It must not be shared with
	// others parties, as it might lead to session hijacking.
	id                string
	server            BaseServer
	upgrading         atomic.Bool
	upgraded          atomic.Bool
	writeBuffer       *types.Slice[*packet.Packet]
	packetsFn         *types.Slice[SendCallback]
	sentCallbackFn    *types.Slice[[]SendCallback]
	cleanupFn         *types.Slice[types.Callable]
	pingTimeoutTimer  atomic.Pointer[pingTimer] // patched: was utils.Timer
	pingIntervalTimer atomic.Pointer[pingTimer]
	// heartbeatMu orders arming the ping timeout against a pong clearing it
	// (patched): they run on different goroutines here, unlike in Node.
	// pingGen is bumped by both, so a timeout timer that fired just as it
	// was cleared knows it is stale.
	heartbeatMu sync.Mutex
	pingGen     uint64
	// lastPacket is when the client last sent anything (unix ns): a client
	// whose pong waits behind a large upload is alive (upstream's
	// checkPingTimeout, engine.io 6.6).
	lastPacket atomic.Int64

	flushMu sync.Mutex

	// limitMu orders SetMaxHttpBufferSize against setTransport (patched):
	// a limit raised during an upgrade reaches the new transport.
	limitMu           sync.Mutex
	maxHttpBufferSize int64
}

// MaxHttpBufferSize is the largest message the connection may send now
// (smcp-gateway patch).
func (s *socket) MaxHttpBufferSize() int64 {
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	return s.maxHttpBufferSize
}

// SetMaxHttpBufferSize sets the largest message the connection may send,
// for the messages its transport reads from now on and those of a transport
// it upgrades to (smcp-gateway patch). A WebSocket applies it from the next
// message on: a frame whose header was read before applies the earlier one.
func (s *socket) SetMaxHttpBufferSize(n int64) {
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	s.maxHttpBufferSize = n
	if t := s.Transport(); t != nil {
		t.SetMaxHttpBufferSize(n)
	}
}

func (s *socket) Protocol() int {
	return s.protocol
}

func (s *socket) Upgraded() bool {
	return s.upgraded.Load()
}

func (s *socket) Upgrading() bool {
	return s.upgrading.Load()
}

func (s *socket) Id() string {
	return s.id
}

func (s *socket) RemoteAddress() string {
	return s.remoteAddress
}

func (s *socket) Request() *types.HttpContext {
	return s.request
}

func (s *socket) Transport() transports.Transport {
	if v := s.transport.Load(); v != nil {
		return *v
	}
	return nil
}

func (s *socket) Server() BaseServer {
	return s.server
}

func (s *socket) ReadyState() string {
	return s.readyState.Load()
}

func (s *socket) SetReadyState(state string) {
	socketLog.Debug("readyState updated from %s to %s", s.ReadyState(), state)

	s.readyState.Store(state)
}

// Client class.
func MakeSocket() Socket {
	s := &socket{
		EventEmitter: types.NewEventEmitter(),

		writeBuffer:    types.NewSlice[*packet.Packet](),
		packetsFn:      types.NewSlice[SendCallback](),
		sentCallbackFn: types.NewSlice[[]SendCallback](),
		cleanupFn:      types.NewSlice[types.Callable](),
	}
	s.readyState.Store("opening")

	return s
}

// Client class.
func NewSocket(id string, server BaseServer, transport transports.Transport, ctx *types.HttpContext, protocol int) Socket {
	s := MakeSocket()

	s.Construct(id, server, transport, ctx, protocol)

	return s
}

func (s *socket) Construct(id string, server BaseServer, transport transports.Transport, ctx *types.HttpContext, protocol int) {
	s.id = id
	s.server = server
	s.request = ctx
	s.protocol = protocol

	// Cache IP since it might not be in the req later
	if ctx.WebTransport != nil {
		s.remoteAddress = ctx.WebTransport.RemoteAddr().String()
	} else if ctx.Websocket != nil && ctx.Websocket.Conn != nil {
		s.remoteAddress = ctx.Websocket.RemoteAddr().String()
	} else {
		s.remoteAddress = ctx.Request().RemoteAddr
	}

	s.maxHttpBufferSize = server.Opts().InitialMaxHttpBufferSize()
	s.setTransport(transport)
	// smcp-gateway patch: onOpen (which sends the OPEN packet) is called by
	// the server's Handshake after it has emitted "connection", so that the
	// listeners are in place before the client can answer.
}

// Called upon transport considered open.
func (s *socket) onOpen() {
	s.SetReadyState("open")

	// sends an `open` packet
	s.Transport().SetSid(s.id)

	data, err := json.Marshal(map[string]any{
		"sid":          s.id,
		"upgrades":     s.getAvailableUpgrades(),
		"pingInterval": int64(s.server.Opts().PingInterval() / time.Millisecond),
		"pingTimeout":  int64(s.server.Opts().PingTimeout() / time.Millisecond),
		"maxPayload":   s.server.Opts().MaxHttpBufferSize(),
	})

	if err != nil {
		socketLog.Debug("json.Marshal err: %s", err)
		s.OnClose("encode error")
		return
	}
	s.sendPacket(
		packet.OPEN,
		types.NewStringBuffer(data),
		nil, nil,
	)

	if i := s.server.Opts().InitialPacket(); i != nil {
		s.sendPacket(packet.MESSAGE, i, nil, nil)
	}

	s.Emit("open")

	if s.protocol == 3 {
		// in protocol v3, the client sends a ping, and the server answers with a pong
		s.resetPingTimeout()
	} else {
		// in protocol v4, the server sends a ping, and the client answers with a pong
		s.schedulePing()
	}
}

// Called upon transport packet.
func (s *socket) onPacket(data *packet.Packet) {
	if data == nil {
		socketLog.Debug("packet received nil")
		return
	}

	if s.ReadyState() != "open" {
		socketLog.Debug("packet received with closed socket")
		return
	}

	s.lastPacket.Store(time.Now().UnixNano())
	// export packet event
	// smcp-gateway patch: debug arguments and events nobody listens to
	// (the variadic slice of an Emit is allocated either way) cost
	// nothing per packet.
	if socketLog.DebugEnabled() {
		socketLog.Debug(`received packet %s`, data.Type)
	}
	if s.ListenerCount("packet") > 0 {
		s.Emit("packet", data)
	}

	switch data.Type {
	case packet.PING:
		if s.Transport().Protocol() != 3 {
			s.onError(errors.ErrInvalidHeartbeat)
			return
		}
		socketLog.Debug("got ping")
		s.heartbeatMu.Lock()
		s.pingTimeoutTimer.Load().Refresh()
		s.heartbeatMu.Unlock()
		s.sendPacket(packet.PONG, nil, nil, nil)
		s.Emit("heartbeat")
	case packet.PONG:
		if s.Transport().Protocol() == 3 {
			s.onError(errors.ErrInvalidHeartbeat)
			return
		}
		socketLog.Debug("got pong")
		s.heartbeatMu.Lock()
		s.pingGen++
		clearPingTimer(s.pingTimeoutTimer.Load())
		s.pingIntervalTimer.Load().Refresh()
		s.heartbeatMu.Unlock()
		s.Emit("heartbeat")
	case packet.ERROR:
		s.OnClose("parse error")
	case packet.MESSAGE:
		s.Emit("data", data.Data)
		if s.ListenerCount("message") > 0 {
			s.Emit("message", data.Data)
		}
	}
}

// Called upon transport error.
func (s *socket) onError(err error) {
	socketLog.Debug("transport error %v", err)
	s.OnClose("transport error", err)
}

// Pings client every `this.pingInterval` and expects response
// within `this.pingTimeout` or closes connection.
func (s *socket) schedulePing() {
	s.pingIntervalTimer.Store(setPingTimer(func() {
		socketLog.Debug("writing ping packet - expecting pong within %dms", int64(s.server.Opts().PingTimeout()/time.Millisecond))
		// Patched: the timeout is armed before the ping can reach the
		// client. Upstream sends, then arms; in Node nothing runs in
		// between, but here the pong is handled on the transport's reader
		// goroutine and can come first, leaving a timeout armed for a pong
		// already received: the connection was closed for "ping timeout"
		// pingTimeout after a ping it had answered (see ../PATCHED.md).
		s.resetPingTimeout()
		s.sendPacket(packet.PING, nil, nil, nil)
	}, s.server.Opts().PingInterval()))
}

// Resets ping timeout.
func (s *socket) resetPingTimeout() {
	s.heartbeatMu.Lock()
	defer s.heartbeatMu.Unlock()
	clearPingTimer(s.pingTimeoutTimer.Load())
	s.pingGen++
	gen := s.pingGen
	timeout := s.resetPingTimeoutDuration()
	var check func()
	check = func() {
		s.heartbeatMu.Lock()
		if s.pingGen != gen || s.ReadyState() == "closed" {
			s.heartbeatMu.Unlock()
			return // a pong (or a newer ping) came meanwhile
		}
		// As upstream: anything received within the timeout extends it.
		if since := time.Since(time.Unix(0, s.lastPacket.Load())); since < timeout {
			s.pingTimeoutTimer.Store(setPingTimer(check, timeout-since))
			s.heartbeatMu.Unlock()
			return
		}
		s.heartbeatMu.Unlock()
		s.OnClose("ping timeout")
	}
	s.pingTimeoutTimer.Store(setPingTimer(check, timeout))
}
func (s *socket) resetPingTimeoutDuration() time.Duration {
	if s.protocol == 3 {
		return s.server.Opts().PingInterval() + s.server.Opts().PingTimeout()
	}
	return s.server.Opts().PingTimeout()
}

// Attaches handlers for the given transport.
func (s *socket) setTransport(transport transports.Transport) {
	onError := func(err ...any) {
		s.onError(slices.TryGetAny[error](err, 0))
	}
	onReady := func(...any) { s.flush() }
	onPacket := func(packets ...any) {
		s.onPacket(slices.TryGetAny[*packet.Packet](packets, 0))
	}
	onDrain := func(...any) { s.onDrain() }
	onClose := func(...any) { s.OnClose("transport close") }

	s.limitMu.Lock()
	s.transport.Store(&transport)
	transport.SetMaxHttpBufferSize(s.maxHttpBufferSize)
	s.limitMu.Unlock()

	_ = transport.Once("error", onError)
	_ = transport.On("ready", onReady)
	_ = transport.On("packet", onPacket)
	_ = transport.On("drain", onDrain)
	_ = transport.Once("close", onClose)
	startReading(transport)

	s.cleanupFn.Push(func() {
		transport.RemoveListener("error", onError)
		transport.RemoveListener("ready", onReady)
		transport.RemoveListener("packet", onPacket)
		transport.RemoveListener("drain", onDrain)
		transport.RemoveListener("close", onClose)
	})
}

// Upon transport "drain" event
func (s *socket) onDrain() {
	if seqFn, err := s.sentCallbackFn.Shift(); err == nil {
		socketLog.Debug("executing batch send callback")
		for _, fn := range seqFn {
			fn(s.Transport())
		}
	}
}

// Upgrades socket to the given transport
func (s *socket) MaybeUpgrade(transport transports.Transport) {
	socketLog.Debug(`might upgrade socket transport from "%s" to "%s"`, s.Transport().Name(), transport.Name())

	s.upgrading.Store(true)
	// smcp-gateway patch: the probe and the upgrade packet are read under
	// the session's limit (setTransport applies a later one).
	transport.SetMaxHttpBufferSize(s.MaxHttpBufferSize())

	var check, cleanup func()
	var onPacket, onError, onTransportClose, onClose types.EventListener
	var upgradeTimeoutTimer, checkIntervalTimer atomic.Pointer[utils.Timer]
	// smcp-gateway patch: the check interval is started and cleared under
	// timerMu, and not started once cleaned up. A probe handled on the
	// new transport's reader while the session closed on another
	// goroutine could start the interval just after cleanup cleared
	// none: it then ran every 100 ms forever, holding the closed socket
	// (1 in ~200 clients closing during their upgrade).
	var timerMu sync.Mutex
	var cleaned bool

	onPacket = func(datas ...any) {
		data, ok := datas[0].(*packet.Packet)
		if !ok {
			return
		}
		sb := new(strings.Builder)
		_, _ = io.Copy(sb, data.Data)
		if data.Type == packet.PING && sb.String() == "probe" {
			socketLog.Debug("got probe ping packet, sending pong")
			transport.Send([]*packet.Packet{{Type: packet.PONG, Data: strings.NewReader("probe")}})
			s.Emit("upgrading", transport)

			timerMu.Lock()
			if !cleaned {
				utils.ClearInterval(checkIntervalTimer.Load())
				checkIntervalTimer.Store(utils.SetInterval(check, DefaultUpgradeCheckInterval))
			}
			timerMu.Unlock()

		} else if packet.UPGRADE == data.Type && s.ReadyState() != "closed" {
			socketLog.Debug("got upgrade packet - upgrading")
			cleanup()
			s.Transport().Discard()

			s.upgraded.Store(true)

			s.clearTransport()
			s.setTransport(transport)
			s.Emit("upgrade", transport)
			s.flush()
			if s.ReadyState() == "closing" {
				transport.Close(func() {
					s.OnClose("forced close")
				})
			}
		} else {
			cleanup()
			transport.Close()
		}
	}

	// we force a polling cycle to ensure a fast upgrade
	check = func() {
		// smcp-gateway patch: under flushMu, as flush checks Writable and
		// sends under it too. Upstream checked and sent unlocked, so the
		// NOOP and a flush could both see one pending poll as writable;
		// the second write then found no poll and failed the transport.
		s.flushMu.Lock()
		defer s.flushMu.Unlock()
		if transports.POLLING == s.Transport().Name() && s.Transport().Writable() {
			socketLog.Debug("writing a noop packet to polling for fast upgrade")
			s.Transport().Send([]*packet.Packet{{Type: packet.NOOP}})
		}
	}

	cleanup = func() {
		s.upgrading.Store(false)

		timerMu.Lock()
		cleaned = true
		utils.ClearInterval(checkIntervalTimer.Load())
		utils.ClearTimeout(upgradeTimeoutTimer.Load())
		timerMu.Unlock()

		if transport != nil {
			transport.RemoveListener("packet", onPacket)
			transport.RemoveListener("close", onTransportClose)
			transport.RemoveListener("error", onError)
		}
		s.RemoveListener("close", onClose)
	}

	onError = func(errs ...any) {
		socketLog.Debug("client did not complete upgrade - %v", slices.TryGetAny[error](errs, 0))
		cleanup()
		if transport != nil {
			transport.Close()
		}
	}

	onTransportClose = func(...any) {
		onError("transport closed")
	}

	onClose = func(...any) {
		onError("socket closed")
	}

	// set transport upgrade timer
	upgradeTimeoutTimer.Store(utils.SetTimeout(func() {
		socketLog.Debug("client did not complete upgrade - closing transport")
		cleanup()
		if transport != nil {
			if transport.ReadyState() == "open" {
				transport.Close()
			}
		}
	}, s.server.Opts().UpgradeTimeout()))

	_ = transport.On("packet", onPacket)
	_ = transport.Once("close", onTransportClose)
	_ = transport.Once("error", onError)

	_ = s.Once("close", onClose)
	startReading(transport)
}

// startReading starts a transport that reads on a goroutine of its own (the
// WebSocket) once its listeners are in place (smcp-gateway patch).
func startReading(t transports.Transport) {
	if r, ok := t.(interface{ StartReading() }); ok {
		r.StartReading()
	}
}

// Clears listeners and timers associated with current transport.
func (s *socket) clearTransport() {
	s.cleanupFn.DoWrite(func(cleanups []types.Callable) []types.Callable {
		for _, cleanup := range cleanups {
			cleanup()
		}
		return cleanups[:0]
	})

	// silence further transport errors and prevent uncaught exceptions
	_ = s.Transport().On("error", func(...any) {
		socketLog.Debug("error triggered by discarded transport")
	})

	// ensure transport won't stay open
	s.Transport().Close()

	clearPingTimer(s.pingTimeoutTimer.Load())
}

// Called upon transport considered closed.
// Possible reasons: `ping timeout`, `client error`, `parse error`,
// `transport error`, `server close`, `transport close`
func (s *socket) OnClose(reason string, description ...error) {
	// patched (see ../PATCHED.md): one look-and-set, so that of two closes
	// at once (the server's, a transport's error on its reader) one only
	// goes on. Upstream looked, then set: both could, and "close" was
	// emitted twice.
	if prev := s.readyState.Swap("closed"); prev != "closed" {
		socketLog.Debug("readyState updated from %s to closed", prev)
		if hook := testHookOnClose.Load(); hook != nil {
			(*hook)(s)
		}
		description = append(description, nil)

		// clear timers
		clearPingTimer(s.pingIntervalTimer.Load())

		clearPingTimer(s.pingTimeoutTimer.Load())

		// clean writeBuffer in defer, so developers can still
		// grab the writeBuffer on 'close' event
		defer s.writeBuffer.Clear()

		s.packetsFn.Clear()

		s.sentCallbackFn.Clear()

		s.clearTransport()
		s.Emit("close", reason, description[0])
	}
}

// testHookOnClose, when set by a test, runs in OnClose once it has decided
// to close the socket.
var testHookOnClose atomic.Pointer[func(*socket)]

// Sends a message packet.
func (s *socket) Send(
	data io.Reader,
	options *packet.Options,
	callback SendCallback,
) Socket {
	s.sendPacket(packet.MESSAGE, data, options, callback)
	return s
}

// Alias of [Send]
func (s *socket) Write(
	data io.Reader,
	options *packet.Options,
	callback SendCallback,
) Socket {
	s.sendPacket(packet.MESSAGE, data, options, callback)
	return s
}

// Sends a packet.
func (s *socket) sendPacket(
	packetType packet.Type,
	data io.Reader,
	options *packet.Options,
	callback SendCallback,
) {
	if readystate := s.ReadyState(); readystate != "closing" && readystate != "closed" {
		if socketLog.DebugEnabled() { // smcp-gateway patch, as in onPacket
			socketLog.Debug(`sending packet "%s" (%p)`, packetType, data)
		}

		// Clone options to avoid data races when the same Options pointer
		// is shared across multiple sockets during broadcast.
		// smcp-gateway patch: the packet, its options and their compress
		// flag are one allocation (upstream: three).
		o := &outPacket{}
		opts := &o.opts
		o.compress = options == nil || options.Compress == nil || *options.Compress
		opts.Compress = &o.compress
		if options != nil {
			opts.WsPreEncodedFrame = options.WsPreEncodedFrame
		}

		packet := &o.packet
		packet.Type = packetType
		packet.Data = data
		packet.Options = opts

		// exports packetCreate event
		if s.ListenerCount("packetCreate") > 0 {
			s.Emit("packetCreate", packet)
		}

		s.writeBuffer.Push(packet)

		// add send callback to object, if defined
		if callback != nil {
			s.packetsFn.Push(callback)
		}

		s.flush()
	}
}

// outPacket is a packet sent, with its options (smcp-gateway patch: one
// allocation).
type outPacket struct {
	packet   packet.Packet
	opts     packet.Options
	compress bool
}

// Attempts to flush the packets buffer.
func (s *socket) flush() {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()

	if s.ReadyState() != "closed" && s.Transport().Writable() {
		if wbuf := s.writeBuffer.AllAndClear(); len(wbuf) > 0 {
			socketLog.Debug("flushing buffer to transport")
			// smcp-gateway patch, as in onPacket.
			if s.ListenerCount("flush") > 0 {
				s.Emit("flush", wbuf)
			}
			if s.server.ListenerCount("flush") > 0 {
				s.server.Emit("flush", s, wbuf)
			}
			if packetsFn := s.packetsFn.AllAndClear(); len(packetsFn) > 0 {
				s.sentCallbackFn.Push(packetsFn)
			} else {
				s.sentCallbackFn.Push(nil)
			}
			s.Transport().Send(wbuf)
			s.Emit("drain")
			if s.server.ListenerCount("drain") > 0 {
				s.server.Emit("drain", s)
			}
		}
	}
}

// Get available upgrades for this socket.
func (s *socket) getAvailableUpgrades() []string {
	availableUpgrades := []string{}
	for _, upg := range s.server.Upgrades(s.Transport().Name()) {
		if s.server.Transports().Has(upg) {
			availableUpgrades = append(availableUpgrades, upg)
		}
	}
	return availableUpgrades
}

// Closes the socket and underlying transport.
func (s *socket) Close(discard bool) {
	if discard &&
		(s.ReadyState() == "open" || s.ReadyState() == "closing") {
		s.closeTransport(discard)
		return
	}

	if s.ReadyState() != "open" {
		return
	}

	s.SetReadyState("closing")

	if length := s.writeBuffer.Len(); length > 0 {
		socketLog.Debug("there are %d remaining packets in the buffer, waiting for the 'drain' event", length)
		_ = s.Once("drain", func(...any) {
			socketLog.Debug("all packets have been sent, closing the transport")
			s.closeTransport(discard)
		})
		return
	}

	socketLog.Debug("the buffer is empty, closing the transport right away")
	s.closeTransport(discard)
}

// Closes the underlying transport.
func (s *socket) closeTransport(discard bool) {
	socketLog.Debug("closing the transport (discard? %t)", discard)
	if discard {
		s.Transport().Discard()
	}
	s.Transport().Close(func() { s.OnClose("forced close") })
}
