package socket

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/clients/engine"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/parsers/socket/parser"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/slices"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/utils"
	queue "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/leanqueue" // patched: see ../PATCHED.md
)

type Engine = engine.Socket

// Manager implements the Socket.IO client manager that handles connections to a Socket.IO server.
// It manages connection lifecycle, automatic reconnection, and socket namespaces.
//
// Example usage:
//
//	opts := DefaultManagerOptions()
//	opts.SetTimeout(5 * time.Second)
//
//	manager, err := NewManager("http://localhost:8080", opts)
//	if err != nil {
//	    log.Fatal(err)
//	}
//
//	// Get a socket for the default namespace
//	socket := manager.Socket("/", nil)
type Manager struct {
	types.EventEmitter

	// The Engine.IO client instance
	//
	// Public
	engine atomic.Pointer[Engine]
	// Private
	_autoConnect bool
	// ReadyStateOpening | ReadyStateOpen | ReadyStateClosed
	//
	// Private
	_readyState types.Atomic[ReadyState]
	// Private
	_reconnecting atomic.Bool

	// Private
	//
	// Readonly
	uri string
	// Public
	opts ManagerOptionsInterface

	// Private
	nsps *types.Map[string, *Socket]
	// Private
	subs *types.Slice[types.Callable]
	// Private
	backoff *utils.Backoff
	// Private
	_reconnection atomic.Bool
	// Private
	_reconnectionAttempts types.Atomic[float64]
	// Private
	_reconnectionDelay types.Atomic[float64]
	// Private
	_randomizationFactor types.Atomic[float64]
	// Private
	_reconnectionDelayMax types.Atomic[float64]
	// Private
	_timeout atomic.Pointer[time.Duration]

	// Private
	encoder parser.Encoder
	// Private
	decoder parser.Decoder
	// Private
	skipReconnect atomic.Bool

	// taskQueue runs decoded packets in order. Closed on a forced close
	// (its goroutine would otherwise outlive the manager), and made anew
	// when a closed manager is opened again.
	taskQueue atomic.Pointer[queue.Queue]
}

// MakeManager creates a new Manager instance with default event emitter, namespace map, and subscriptions.
func MakeManager() *Manager {
	r := &Manager{
		EventEmitter: types.NewEventEmitter(),

		nsps: &types.Map[string, *Socket]{},
		subs: types.NewSlice[types.Callable](),
	}
	return r
}

// NewManager creates a new Manager instance with the specified URI and options.
// It establishes and manages the connection to a Socket.IO server.
//
// Parameters:
//   - uri: The URI of the Socket.IO server (e.g., "http://localhost:8080")
//   - opts: Configuration options for the manager
//
// Returns:
//   - *Manager: A new manager instance
func NewManager(uri string, opts ManagerOptionsInterface) *Manager {
	r := MakeManager()

	r.Construct(uri, opts)

	return r
}

// Engine returns the underlying Engine.IO client instance.
func (m *Manager) Engine() Engine {
	if engine := m.engine.Load(); engine != nil {
		return *engine
	}
	return nil
}

// Opts returns the ManagerOptionsInterface for this manager.
func (m *Manager) Opts() ManagerOptionsInterface {
	return m.opts
}

// Construct initializes the Manager instance with the given URI and options.
func (m *Manager) Construct(uri string, opts ManagerOptionsInterface) {
	if opts == nil {
		opts = DefaultManagerOptions()
	}

	if opts.GetRawPath() == nil {
		opts.SetPath("/socket.io")
	}
	m.opts = opts
	if opts.GetRawReconnection() != nil {
		m.SetReconnection(opts.Reconnection())
	} else {
		m.SetReconnection(true)
	}
	if opts.GetRawReconnectionAttempts() != nil {
		m.SetReconnectionAttempts(opts.ReconnectionAttempts())
	} else {
		m.SetReconnectionAttempts(math.Inf(1))
	}
	if opts.GetRawReconnectionDelay() != nil {
		m.SetReconnectionDelay(opts.ReconnectionDelay())
	} else {
		m.SetReconnectionDelay(DefaultReconnectionDelay)
	}
	if opts.GetRawReconnectionDelayMax() != nil {
		m.SetReconnectionDelayMax(opts.ReconnectionDelayMax())
	} else {
		m.SetReconnectionDelayMax(DefaultReconnectionDelayMax)
	}
	if opts.GetRawRandomizationFactor() != nil {
		m.SetRandomizationFactor(opts.RandomizationFactor())
	} else {
		m.SetRandomizationFactor(DefaultRandomizationFactor)
	}
	m.backoff = utils.NewBackoff(utils.WithMin(m.ReconnectionDelay()), utils.WithMax(m.ReconnectionDelayMax()), utils.WithJitter(m.RandomizationFactor()))
	if opts.GetRawTimeout() != nil {
		m.SetTimeout(opts.Timeout())
	} else {
		m.SetTimeout(DefaultTimeout)
	}

	m._readyState.Store(ReadyStateClosed)
	m.uri = uri
	_parser := opts.Parser()
	if _parser == nil {
		_parser = parser.NewParser()
	}
	m.encoder = _parser.NewEncoder()
	m.decoder = _parser.NewDecoder()
	if opts.GetRawAutoConnect() != nil {
		m._autoConnect = opts.AutoConnect()
	} else {
		m._autoConnect = true
	}
	if m._autoConnect {
		m.Open(nil)
	}
}

// Sets the `reconnection` config.
func (m *Manager) SetReconnection(reconnection bool) {
	m._reconnection.Store(reconnection)
	if !reconnection {
		m.skipReconnect.Store(true)
	}
}

// Reconnection returns whether automatic reconnection is enabled.
func (m *Manager) Reconnection() bool {
	return m._reconnection.Load()
}

// Sets the reconnection attempts config.
func (m *Manager) SetReconnectionAttempts(reconnectionAttempts float64) {
	m._reconnectionAttempts.Store(reconnectionAttempts)
}

// ReconnectionAttempts returns the maximum number of reconnection attempts.
func (m *Manager) ReconnectionAttempts() float64 {
	return m._reconnectionAttempts.Load()
}

// Sets the delay between reconnections.
func (m *Manager) SetReconnectionDelay(reconnectionDelay float64) {
	m._reconnectionDelay.Store(reconnectionDelay)
	if backoff := m.backoff; backoff != nil {
		backoff.SetMin(reconnectionDelay)
	}
}

// ReconnectionDelay returns the initial reconnection delay in milliseconds.
func (m *Manager) ReconnectionDelay() float64 {
	return m._reconnectionDelay.Load()
}

// SetRandomizationFactor sets the jitter factor applied to reconnection delays.
func (m *Manager) SetRandomizationFactor(randomizationFactor float64) {
	m._randomizationFactor.Store(randomizationFactor)
	if backoff := m.backoff; backoff != nil {
		backoff.SetJitter(randomizationFactor)
	}
}

// RandomizationFactor returns the jitter factor applied to reconnection delays.
func (m *Manager) RandomizationFactor() float64 {
	return m._randomizationFactor.Load()
}

// SetReconnectionDelayMax sets the maximum delay between reconnection attempts.
func (m *Manager) SetReconnectionDelayMax(reconnectionDelayMax float64) {
	m._reconnectionDelayMax.Store(reconnectionDelayMax)
	if backoff := m.backoff; backoff != nil {
		backoff.SetMax(reconnectionDelayMax)
	}
}

// ReconnectionDelayMax returns the maximum reconnection delay in milliseconds.
func (m *Manager) ReconnectionDelayMax() float64 {
	return m._reconnectionDelayMax.Load()
}

// Sets the connection timeout. `false` to disable
func (m *Manager) SetTimeout(timeout time.Duration) {
	m._timeout.Store(&timeout)
}

// Timeout returns the connection timeout duration.
func (m *Manager) Timeout() *time.Duration {
	return m._timeout.Load()
}

// Starts trying to reconnect if reconnection is enabled and we have not
// started reconnecting yet
func (m *Manager) maybeReconnectOnOpen() {
	// Only try to reconnect if it's the first time we're connecting
	if !m._reconnecting.Load() && m._reconnection.Load() && m.backoff.Attempts() == 0 {
		// keeps reconnection from firing twice for the same reconnection loop
		m.reconnect()
	}
}

// Open initiates the connection to the server.
// This is called automatically when autoConnect is true (default).
//
// Parameters:
//   - fn: Optional callback that will be called when connection is established or fails
//
// Returns:
//   - *Manager: The manager instance for chaining
func (m *Manager) Open(fn func(error)) *Manager {
	managerLog.Debug("readyState %s", m._readyState.Load())
	if state := m._readyState.Load(); state == ReadyStateOpen || state == ReadyStateOpening {
		return m
	}

	managerLog.Debug("opening %s", m.uri)
	if m.taskQueue.Load() == nil {
		m.taskQueue.Store(queue.New())
	}
	// Made first and constructed (which dials) only after the listeners
	// below are in place: the engine reads on its own goroutine from the
	// moment the dial returns ("open" was lost now and then), and emits
	// "error" for a refused dial synchronously (always lost) with upstream's
	// NewSocket.
	socket := engine.MakeSocket()
	m.engine.Store(&socket)
	m._readyState.Store(ReadyStateOpening)
	m.skipReconnect.Store(false)

	// emit `open`
	openSubDestroy := on(socket, "open", func(...any) {
		m.onopen(socket)
		if fn != nil {
			fn(nil)
		}
	})

	onError := func(errs ...any) {
		err := slices.TryGetAny[error](errs, 0)
		managerLog.Debug("error")
		m.cleanup()
		m._readyState.Store(ReadyStateClosed)
		m.Emit("error", err)
		if fn != nil {
			fn(err)
		} else {
			// Only do this if there is no fn to handle the error
			m.maybeReconnectOnOpen()
		}
	}

	// emit `error`
	errorSub := on(socket, "error", onError)

	if timeout := m._timeout.Load(); timeout != nil {
		managerLog.Debug("connect attempt will timeout after %v", timeout)

		// set timer (time.AfterFunc, not utils.SetTimeout: see PATCHED.md)
		timer := time.AfterFunc(*timeout, func() {
			managerLog.Debug("connect attempt timed out after %v", timeout)
			openSubDestroy()
			onError(errors.New("timeout"))
			socket.Close()
		})

		m.subs.Push(func() {
			timer.Stop()
		})
	}

	m.subs.Push(openSubDestroy, errorSub)

	socket.Construct(m.uri, m.opts)

	return m
}

// Alias for [Manager.Open]
func (m *Manager) Connect(fn func(error)) *Manager {
	return m.Open(fn)
}

// Called upon transport open.
func (m *Manager) onopen(socket Engine) {
	managerLog.Debug("open")

	// clear old subs
	m.cleanup()

	// mark as open
	m._readyState.Store(ReadyStateOpen)
	m.Emit("open")

	// add new subs
	m.subs.Push(
		on(socket, "ping", m.onping),
		on(socket, "data", m.ondata),
		on(socket, "error", m.onerror),
		on(socket, "close", func(args ...any) {
			m.onclose(slices.TryGetAny[string](args, 0), slices.TryGetAny[error](args, 1))
		}),
		on(m.decoder, "decoded", m.ondecoded),
	)
}

// Called upon a ping.
func (m *Manager) onping(...any) {
	m.Emit("ping")
}

// Called with data.
func (m *Manager) ondata(datas ...any) {
	if err := m.decoder.Add(datas[0]); err != nil {
		m.onclose("parse error", err)
	}
}

// Called when parser fully decodes a packet.
func (m *Manager) ondecoded(packets ...any) {
	if q := m.taskQueue.Load(); q != nil {
		q.Enqueue(func() { m.Emit("packet", packets...) })
	}
}

// Called upon socket error.
func (m *Manager) onerror(errs ...any) {
	managerLog.Debug("error: %v", errs)
	m.Emit("error", errs...)
}

// Socket creates or returns an existing Socket instance for the specified namespace.
//
// Parameters:
//   - nsp: The namespace to connect to (defaults to "/")
//   - opts: Socket-specific options
//
// Returns:
//   - *Socket: A Socket instance for the namespace
func (m *Manager) Socket(nsp string, opts SocketOptionsInterface) *Socket {
	socket, ok := m.nsps.Load(nsp)
	if !ok {
		socket = NewSocket(m, nsp, opts)
		m.nsps.Store(nsp, socket)
	} else if m._autoConnect && !socket.Active() {
		socket.Connect()
	}

	return socket
}

// _destroy cleans up resources when a socket is closed.
// If this is the last active socket, the manager connection will also be closed.
//
// Parameters:
//   - socket: The socket being destroyed
func (m *Manager) _destroy(_ *Socket) {
	close := true
	m.nsps.Range(func(nsp string, socket *Socket) bool {
		if socket.Active() {
			managerLog.Debug("socket %s is still active, skipping close", nsp)
			close = false
		}
		return close
	})

	if close {
		m._close()
	}
}

// Writes a packet.
func (m *Manager) _packet(packet *Packet) {
	managerLog.Debug("writing packet %#v", packet)

	if socket := m.Engine(); socket != nil {
		for _, encodedPacket := range m.encoder.Encode(packet.Packet) {
			socket.Write(encodedPacket.Clone(), packet.Options, nil)
		}
	}
}

// Clean up transport subscriptions and packet buffer.
func (m *Manager) cleanup() {
	managerLog.Debug("cleanup")

	m.subs.Range(func(subDestroy func(), i int) bool {
		subDestroy()
		return true
	})
	m.subs.Clear()

	m.decoder.Destroy()
}

// Close the current socket.
func (m *Manager) _close() {
	managerLog.Debug("disconnect")
	m.skipReconnect.Store(true)
	m._reconnecting.Store(false)
	m.onclose("forced close", nil)
	if q := m.taskQueue.Swap(nil); q != nil {
		q.TryClose()
	}
}

// _onclose handles cleanup when the connection is closed.
//
// Parameters:
//   - reason: The reason for disconnection
//   - description: Additional error details if applicable
func (m *Manager) onclose(reason string, description error) {
	managerLog.Debug("closed due to %s", reason)

	m.cleanup()
	if socket := m.Engine(); socket != nil {
		socket.Close()
	}
	m.backoff.Reset()
	m._readyState.Store(ReadyStateClosed)
	m.Emit("close", reason, description)

	if m._reconnection.Load() && !m.skipReconnect.Load() {
		m.reconnect()
	}
}

// _reconnect attempts to reconnect to the server after a disconnection.
// It implements exponential backoff with jitter for retry timing.
func (m *Manager) reconnect() {
	if !m._reconnecting.CompareAndSwap(false, true) || m.skipReconnect.Load() {
		return
	}

	if float64(m.backoff.Attempts()) >= m.ReconnectionAttempts() {
		managerLog.Debug("reconnect failed")
		m.backoff.Reset()
		m.Emit("reconnect_failed")
		m._reconnecting.Store(false)
	} else {
		delay := m.backoff.Duration()
		managerLog.Debug("will wait %dms before reconnect attempt", delay)

		timer := time.AfterFunc(time.Duration(delay)*time.Millisecond, func() {
			if m.skipReconnect.Load() {
				return
			}

			managerLog.Debug("attempting reconnect")
			m.Emit("reconnect_attempt", m.backoff.Attempts())

			// check again for the case socket closed in above events
			if m.skipReconnect.Load() {
				return
			}

			m.Open(func(err error) {
				if err != nil {
					managerLog.Debug("reconnect attempt error")
					m._reconnecting.Store(false)
					m.reconnect()
					m.Emit("reconnect_error", err)
				} else {
					managerLog.Debug("reconnect success")
					m.onreconnect()
				}
			})
		})

		m.subs.Push(func() {
			timer.Stop()
		})
	}
}

// Called upon successful reconnect.
func (m *Manager) onreconnect() {
	attempt := m.backoff.Attempts()
	m._reconnecting.Store(false)
	m.backoff.Reset()
	m.Emit("reconnect", attempt)
}
