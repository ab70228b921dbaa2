// Package sioclient is a small Socket.IO client for the /smcp namespace,
// shared by the agent client and the computer runtime. It connects with an API
// key, sends requests and waits for their acks, serves the gateway's requests
// (handlers with ack), delivers notifications in order, and re-joins the
// office after a reconnect.
//
// Failures are reported, not only retried: each failed attempt of Dial is a
// warning with its reason, a lost connection a warning, and a gateway that
// refuses the protocol version (HTTP 400 with X-A2C-Error-Code 4008 at the
// handshake, WebSocket close 4900 later) ends the client with an
// *smcp.Error of code 4008 (Dial returns it; Done and Err report it).
//
// The patched Socket.IO client this package needs is selected by replace
// directives in this module's go.mod, which importers do not inherit: see
// the agent package's documentation.
package sioclient

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/protobuf/proto"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/clients/engine"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/clients/engine/transports"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/clients/socket"
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/types"
	sockettypes "github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
	"github.com/smcpgw/smcp-gateway/smcp"
)

// Options configure a Client.
type Options struct {
	// URL of the gateway, e.g. "http://127.0.0.1:8080".
	URL string
	// Fallbacks are further nodes of the same gateway (a cluster), tried
	// in turn after URL when an attempt of Dial fails: each round tries
	// every URL once, and the backoff waits between rounds, not between
	// nodes. Reconnecting after a drop stays with the URL that answered
	// (the library's reconnection is bound to one URL): a client that must
	// move to another node sets NoReconnect and dials again when Done
	// closes, starting from the next URL (see Rotate).
	Fallbacks []string
	// Path is the Engine.IO path (default "/socket.io/").
	Path string
	// APIKey is sent in the APIKeyHeader header (default x-api-key) and,
	// from protocol 0.3, in the Socket.IO auth object under AuthField
	// (default "token", the field the SDKs send and their servers read:
	// PROTOCOL-0.4.md H8). With KeyInAuth it goes in the auth object only,
	// whatever the version.
	APIKey       string
	APIKeyHeader string
	AuthField    string
	KeyInAuth    bool
	// ConnectTimeout bounds each connection attempt (default 2 s).
	ConnectTimeout time.Duration
	// NoReconnect disables automatic reconnection once connected (Dial itself
	// retries until its ctx ends or the gateway refuses).
	NoReconnect bool
	// ReconnectDelay is the first delay between attempts (default 200 ms,
	// backing off to 5 s).
	ReconnectDelay time.Duration
	TLSConfig      *tls.Config
	Logger         *slog.Logger
	// Version is the a2c_version sent at the handshake, which picks the
	// profile the connection speaks (default smcp.ProtocolVersion, 0.2).
	Version string
	// Transports the client uses, in order: the first opens the session,
	// the others are upgrades. Default TransportsPollingFirst, as the
	// official socket.io-client opens and as PROTOCOL-0.4.md §2 asks; it
	// works behind servers and proxies that refuse WebSocket.
	// TransportsWebSocketOnly saves the polling round trips where the
	// gateway is known to take WebSocket.
	Transports []string
}

// Transport names, the Engine.IO ones.
const (
	TransportPolling   = "polling"
	TransportWebSocket = "websocket"
)

var (
	// TransportsPollingFirst opens with HTTP long-polling and upgrades to
	// WebSocket when the server offers it (the default).
	TransportsPollingFirst = []string{TransportPolling, TransportWebSocket}
	// TransportsWebSocketOnly opens a WebSocket directly.
	TransportsWebSocketOnly = []string{TransportWebSocket}
)

// Client is one connection to the /smcp namespace.
type Client struct {
	opts    Options
	log     *slog.Logger
	manager *socket.Manager
	sock    *socket.Socket

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	notes  chan note

	done     chan struct{} // closed when the client is over: Close, a refusal, or a lost link without reconnection
	doneOnce sync.Once
	err      error // why it is over, under mu

	// retries are the goroutines that re-join the office after a
	// reconnect and connect the namespace again after the gateway refused
	// it (awaited by Close).
	retries sync.WaitGroup

	mu sync.Mutex
	// refusedDelay is the pause before the next namespace connect after a
	// refused reconnect: ReconnectDelay, doubling up to maxReconnectDelay,
	// back to ReconnectDelay once a connect succeeds.
	refusedDelay time.Duration
	// link ends when the current connection drops (and at Close): the
	// context of the requests it delivered, whose answers can only go back
	// on it (an ack's id means nothing on the next connection).
	link      context.Context
	unlink    context.CancelFunc
	joined    *smcpv1.EnterOfficeReq // re-joined after a reconnect
	connects  int
	onRejoin  func(error)
	onConnect []func()
}

type note struct {
	fn      func(json.RawMessage)
	payload json.RawMessage
}

// Dial connects and returns once the namespace is joined. A refused connect
// returns the gateway's *smcp.Error (401 for a bad key).
func Dial(ctx context.Context, o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("sioclient: URL is required")
	}
	if o.Path == "" {
		o.Path = "/socket.io/"
	}
	if o.APIKeyHeader == "" {
		o.APIKeyHeader = "x-api-key"
	}
	if o.AuthField == "" {
		o.AuthField = DefaultAuthField
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 2 * time.Second
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = smcp.ProtocolVersion
	}
	mopts := socket.DefaultManagerOptions()
	mopts.SetPath(o.Path)
	mopts.SetAutoConnect(false)
	mopts.SetTimeout(o.ConnectTimeout)
	mopts.SetReconnection(!o.NoReconnect)
	mopts.SetReconnectionDelay(float64(o.ReconnectDelay.Milliseconds()))
	mopts.SetReconnectionDelayMax(float64(maxReconnectDelay.Milliseconds()))
	ctors, err := transportCtors(o.Transports)
	if err != nil {
		return nil, err
	}
	mopts.SetTransports(ctors)
	// No permessage-deflate offer. The WebSocket library (gorilla) offers
	// both no_context_takeover flags and refuses any answer that does not
	// repeat both ("invalid compression negotiation"), while RFC 7692 lets
	// a server leave client_no_context_takeover out: aiohttp does, so our
	// client could not connect to a python-socketio server on aiohttp (the
	// Python SDK's default). Events are small JSON; the gateway answers
	// this client uncompressed either way.
	mopts.SetPerMessageDeflate(nil)
	mopts.SetParser(rawParser{})
	mopts.SetQuery(url.Values{"a2c_version": {o.Version}})
	if o.TLSConfig != nil {
		mopts.SetTLSClientConfig(o.TLSConfig)
	}
	sopts := socket.DefaultSocketOptions()
	if o.APIKey != "" {
		if !o.KeyInAuth {
			mopts.SetExtraHeaders(http.Header{o.APIKeyHeader: {o.APIKey}})
		}
		if o.KeyInAuth || keyInAuthObject(o.Version) {
			sopts.SetAuth(map[string]any{o.AuthField: o.APIKey})
		}
	}

	urls := append([]string{o.URL}, o.Fallbacks...)
	delay := o.ReconnectDelay
	for attempt := 1; ; attempt++ {
		url := urls[(attempt-1)%len(urls)]
		ao := o
		ao.URL = url
		c, err := dialOnce(ctx, ao, mopts, sopts)
		if err == nil {
			if attempt > 1 {
				o.Logger.Info("connected to the gateway", "url", url, "attempts", attempt)
			}
			return c, nil
		}
		if refusal := versionRefusal(err, o.Version); refusal != nil {
			return nil, refusal
		}
		// A server that answered the namespace connect with a refusal
		// would answer the next attempt the same: say why now.
		var re *RefusedError
		if _, refused := smcp.AsError(err); refused || errors.As(err, &re) || ctx.Err() != nil {
			return nil, err
		}
		if attempt%len(urls) != 0 {
			// Another node of the round is tried at once: a dead node
			// must not cost the backoff of a flapping one.
			next := urls[attempt%len(urls)]
			o.Logger.Warn("cannot reach the gateway, trying the next node", "url", url, "next", next, "attempt", attempt, "err", err)
			continue
		}
		// Loud: an operator whose computer cannot reach its gateway must
		// see why without --log-level debug. The backoff caps the rate.
		o.Logger.Warn("cannot reach the gateway, retrying", "url", url, "attempt", attempt, "retry_in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, fmt.Errorf("sioclient: connect %s: %w (last attempt: %v)", url, ctx.Err(), err)
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// Rotate returns urls starting after the one equal to last (all of them,
// in order, when last is not among them): where a client that lost its
// connection to last dials next, its Options.URL and Fallbacks.
func Rotate(urls []string, last string) (first string, rest []string) {
	if len(urls) == 0 {
		return "", nil
	}
	start := 0
	for i, u := range urls {
		if u == last {
			start = i + 1
			break
		}
	}
	out := make([]string, 0, len(urls))
	for i := range urls {
		out = append(out, urls[(start+i)%len(urls)])
	}
	return out[0], out[1:]
}

// transportCtors maps transport names to the engine's constructors (its
// patched socket orders them polling first, whatever the set's order).
func transportCtors(names []string) (*types.Set[transports.TransportCtor], error) {
	if len(names) == 0 {
		names = TransportsPollingFirst
	}
	set := types.NewSet[transports.TransportCtor]()
	for _, n := range names {
		switch n {
		case TransportPolling:
			set.Add(transports.Polling)
		case TransportWebSocket:
			set.Add(transports.WebSocket)
		default:
			return nil, fmt.Errorf("sioclient: unknown transport %q (want %q or %q)", n, TransportPolling, TransportWebSocket)
		}
	}
	return set, nil
}

var errAttemptTimeout = errors.New("no namespace connect in time")

// maxReconnectDelay caps the backoff between attempts, Dial's and the
// library's reconnects alike.
const maxReconnectDelay = 5 * time.Second

// dialOnce makes one connection attempt bounded by ConnectTimeout: the
// library's timer covers the engine only, not the namespace connect.
func dialOnce(ctx context.Context, o Options, mopts *socket.ManagerOptions, sopts *socket.SocketOptions) (*Client, error) {
	cctx, cancel := context.WithCancel(context.Background())
	c := &Client{opts: o, log: o.Logger, ctx: cctx, cancel: cancel, notes: make(chan note, 256), done: make(chan struct{})}
	c.link, c.unlink = context.WithCancel(cctx)
	c.manager = socket.NewManager(o.URL, mopts)
	c.sock = c.manager.Socket(smcp.Namespace, sopts) // not connected yet: autoConnect is off
	go c.deliver()
	timer := time.NewTimer(o.ConnectTimeout)
	defer timer.Stop()
	fail := func(err error) (*Client, error) {
		c.Close()
		return nil, err
	}

	// Open the engine first and only then the namespace: when the engine
	// opens while Socket.Connect runs, the library sends CONNECT twice and
	// the server drops the connection.
	opened := make(chan error, 1)
	c.manager.Open(func(err error) { opened <- err })
	select {
	case err := <-opened:
		if err != nil {
			return fail(fmt.Errorf("sioclient: connect %s: %w", o.URL, err))
		}
	case <-timer.C:
		return fail(fmt.Errorf("sioclient: connect %s: engine not open: %w", o.URL, errAttemptTimeout))
	case <-ctx.Done():
		return fail(fmt.Errorf("sioclient: connect %s: %w", o.URL, ctx.Err()))
	}
	connected := make(chan error, 1)
	_ = c.sock.On("connect", func(...any) {
		c.mu.Lock()
		c.connects++
		c.refusedDelay = 0
		reconnect := c.connects > 1
		if reconnect {
			c.link, c.unlink = context.WithCancel(c.ctx)
		}
		hooks := append([]func(){}, c.onConnect...)
		c.mu.Unlock()
		select {
		case connected <- nil:
		default:
		}
		for _, h := range hooks {
			go h()
		}
		if reconnect {
			c.log.Info("reconnected to the gateway", "url", o.URL)
			c.spawn(c.rejoin)
		}
	})
	_ = c.sock.On("disconnect", func(args ...any) {
		c.mu.Lock()
		c.unlink()
		c.mu.Unlock()
		if c.ctx.Err() != nil {
			return // Close
		}
		var reason string
		if len(args) > 0 {
			reason, _ = args[0].(string)
		}
		var detail error
		if len(args) > 1 {
			detail, _ = args[1].(error)
		}
		var ce *websocket.CloseError
		if errors.As(detail, &ce) && ce.Code == closeVersionMismatch {
			err := &VersionError{ClientVersion: o.Version, CloseCode: ce.Code, Message: ce.Text}
			c.log.Error("disconnected for good", "url", o.URL, "err", err)
			c.finish(err)
			go c.Close() // no reconnect: the answer would be the same
			return
		}
		if o.NoReconnect {
			c.log.Warn("disconnected from the gateway", "url", o.URL, "reason", reason, "err", detail)
			c.finish(fmt.Errorf("sioclient: disconnected from %s: %s", o.URL, reason))
			return
		}
		c.log.Warn("disconnected from the gateway, reconnecting", "url", o.URL, "reason", reason, "err", detail)
	})
	_ = c.manager.On("reconnect_error", func(args ...any) {
		var err error
		if len(args) > 0 {
			err, _ = args[0].(error)
		}
		if refusal := versionRefusal(err, o.Version); refusal != nil {
			c.log.Error("reconnect refused for good", "url", o.URL, "err", refusal)
			c.finish(refusal)
			go c.Close()
			return
		}
		c.log.Warn("reconnect attempt failed", "url", o.URL, "err", err)
	})
	_ = c.sock.On("connect_error", func(args ...any) {
		err := connectError(args)
		c.log.Debug("connect error", "err", err)
		c.mu.Lock()
		reconnect := c.connects > 0
		c.mu.Unlock()
		if reconnect && refusedByServer(args) {
			c.retryRefused(err)
			return
		}
		select {
		case connected <- err:
		default:
		}
	})
	c.sock.Connect()
	select {
	case err := <-connected:
		if err != nil {
			return fail(err)
		}
		return c, nil
	case <-timer.C:
		return fail(fmt.Errorf("sioclient: connect %s: %w", o.URL, errAttemptTimeout))
	case <-ctx.Done():
		return fail(fmt.Errorf("sioclient: connect %s: %w", o.URL, ctx.Err()))
	}
}

// refusedByServer reports whether a connect_error is the server refusing
// the namespace connect (a CONNECT_ERROR packet), rather than the engine
// failing to open, which the library's reconnection retries by itself.
func refusedByServer(args []any) bool {
	if len(args) == 0 {
		return false
	}
	err, _ := args[0].(error)
	var ext *types.ExtendedError
	return errors.As(err, &ext)
}

// retryRefused answers a namespace connect the gateway refused after a
// reconnect (a key it no longer takes, say after a restart with other
// keys). The library gives such a socket up for good and says nothing;
// here it is an error line with the gateway's reason, and another connect
// after a backoff, since the gateway's side can be fixed while we wait.
func (c *Client) retryRefused(err error) {
	c.mu.Lock()
	delay := c.refusedDelay
	if delay == 0 {
		delay = c.opts.ReconnectDelay
	}
	c.refusedDelay = min(2*delay, maxReconnectDelay)
	c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	c.log.Error("the gateway refused the connection, retrying", "url", c.opts.URL, "retry_in", delay, "err", err)
	c.spawn(func() {
		select {
		case <-time.After(delay):
			c.sock.Connect()
		case <-c.ctx.Done():
		}
	})
}

// spawn runs fn in a goroutine that Close waits for; not after Close.
func (c *Client) spawn(fn func()) {
	// Checked and counted under mu, which Close holds to cancel: nothing
	// starts after Close began waiting.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	c.retries.Go(fn)
}

// DefaultAuthField is the field of the Socket.IO auth object the key goes
// in: the one the SDKs send (PROTOCOL-0.4.md H8).
const DefaultAuthField = "token"

// keyInAuthObject reports whether a client speaking version (a2c_version)
// sends its key in the auth object too: from 0.3, whose SDKs' servers read
// it there only. 0.2 peers know the header.
func keyInAuthObject(version string) bool {
	v, ok := majorMinor(version)
	return ok && (v[0] > 0 || v[1] >= 3)
}

// RefusedError is a server refusing the namespace connect (connect_error)
// with something other than a flat error: a python-socketio server's
// ConnectionRefusedError, say. Message is the server's, word for word;
// Code is data.code when the server sent one (0 otherwise).
type RefusedError struct {
	Message string
	Code    int
	Data    any
}

func (e *RefusedError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("the server refused the connection (code %d): %s", e.Code, e.Message)
	}
	return "the server refused the connection: " + e.Message
}

// connectError turns a connect_error into an *smcp.Error when the gateway
// sent a flat error as its data, a *RefusedError for another refusal.
func connectError(args []any) error {
	if len(args) == 0 {
		return errors.New("sioclient: connect failed")
	}
	err, _ := args[0].(error)
	var ext *types.ExtendedError
	if errors.As(err, &ext) {
		if b, jerr := json.Marshal(ext.Data); jerr == nil {
			if e, ok := smcp.ErrorFromAck(json.RawMessage(b)); ok {
				return e
			}
		}
		re := &RefusedError{Message: ext.Message, Data: ext.Data}
		if m, ok := ext.Data.(map[string]any); ok {
			if c, ok := m["code"].(float64); ok {
				re.Code = int(c)
			}
		}
		return re
	}
	if err != nil {
		return fmt.Errorf("sioclient: connect failed: %w", err)
	}
	return fmt.Errorf("sioclient: connect failed: %v", args[0])
}

// URL is the gateway URL this client is connected to: Options.URL, or the
// fallback Dial reached.
func (c *Client) URL() string { return c.opts.URL }

// ID is the current Socket.IO session id ("" while disconnected).
func (c *Client) ID() string { return c.sock.Id() }

// Transport names the Engine.IO transport in use now: "polling" until the
// upgrade, "websocket" after it ("polling" for good if the server refuses
// WebSocket), "" before the first connection.
func (c *Client) Transport() string {
	e := c.manager.Engine()
	if e == nil {
		return ""
	}
	if t := e.Transport(); t != nil {
		return t.Name()
	}
	return ""
}

// Connected reports whether the client is connected now.
func (c *Client) Connected() bool { return c.sock.Connected() }

// Close disconnects for good.
func (c *Client) Close() {
	c.mu.Lock()
	c.cancel()
	c.mu.Unlock()
	c.retries.Wait()
	c.sock.Disconnect()
	c.finish(errClosed)
}

var errClosed = errors.New("sioclient: closed")

// closeVersionMismatch is the WebSocket close code of a gateway refusing the
// client's protocol version on a live connection (PROTOCOL.md §1).
const closeVersionMismatch = 4900

// finish ends the client's life with err (the first reason wins).
func (c *Client) finish(err error) {
	c.doneOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
	})
}

// Done is closed when the client is over: closed, refused for good (an
// incompatible protocol version), or disconnected with NoReconnect.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why Done is closed: the refusal (an *smcp.Error with code 4008),
// the disconnect, or a closed client; nil while the client lives.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// versionRefusal turns a handshake the gateway refused for the protocol
// version (HTTP 400 with code 4008 in the body or X-A2C-Error-Code 4008)
// into a *VersionError; nil for any other error. Retrying such a refusal
// would only repeat it.
func versionRefusal(err error, sent string) error {
	var he *engine.HandshakeError
	if !errors.As(err, &he) {
		return nil
	}
	_, header, raw := he.HandshakeResponse()
	return parseRefusal(header, raw, sent)
}

// parseRefusal reads a handshake refusal's header and body: a *VersionError
// for code 4008, nil otherwise.
func parseRefusal(header http.Header, raw []byte, sent string) error {
	var body struct {
		Code          int    `json:"code"`
		Message       string `json:"message"`
		ServerVersion string `json:"server_version"`
		MinSupported  string `json:"min_supported"`
		MaxSupported  string `json:"max_supported"`
		Details       struct {
			Supported []string `json:"supported"`
		} `json:"details"`
	}
	_ = json.Unmarshal(raw, &body)
	if header.Get("X-A2C-Error-Code") != "4008" && body.Code != smcp.CodeVersionMismatch {
		return nil
	}
	return &VersionError{ClientVersion: sent, ServerVersion: body.ServerVersion, MinSupported: body.MinSupported,
		MaxSupported: body.MaxSupported, Supported: body.Details.Supported, Message: body.Message}
}

// CheckVersion asks the gateway whether it serves o.Version (default
// smcp.ProtocolVersion) without opening a session: one HTTP request of the
// Engine.IO handshake, without the WebSocket upgrade, which a gateway
// answers with its version refusal (PROTOCOL-0.4.md §2) before anything
// else. It returns a *VersionError for a refusal and nil for any other
// answer, a network failure included: that is for the real connection to
// report. For programs that speak to the gateway otherwise (its Connect
// API) in a profile's name.
func CheckVersion(ctx context.Context, o Options) error {
	if o.Path == "" {
		o.Path = "/socket.io/"
	}
	if o.APIKeyHeader == "" {
		o.APIKeyHeader = "x-api-key"
	}
	if o.Version == "" {
		o.Version = smcp.ProtocolVersion
	}
	u, err := url.Parse(strings.TrimRight(o.URL, "/") + o.Path)
	if err != nil {
		return nil
	}
	u.RawQuery = url.Values{"EIO": {"4"}, "transport": {"websocket"}, "a2c_version": {o.Version}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil
	}
	if o.APIKey != "" && !o.KeyInAuth {
		req.Header.Set(o.APIKeyHeader, o.APIKey)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: o.TLSConfig}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		return nil
	}
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	return parseRefusal(res.Header, raw, o.Version)
}

// VersionError is a gateway refusing the client's protocol version
// (PROTOCOL-0.4.md §2): HTTP 400 with code 4008 at the handshake, or a
// WebSocket close 4900 (CloseCode). What the gateway said it supports is
// kept, so that a caller can name the version to use. It unwraps to the
// *smcp.Error of code 4008.
type VersionError struct {
	// ClientVersion is the a2c_version this client sent.
	ClientVersion string
	// ServerVersion, MinSupported and MaxSupported are the 4008 body's
	// fields ("" when absent, as after a 4900 close).
	ServerVersion, MinSupported, MaxSupported string
	// Supported lists the MAJOR.MINOR versions of details.supported (a
	// gateway serving several profiles).
	Supported []string
	// CloseCode is 4900 when the refusal was a WebSocket close.
	CloseCode int
	Message   string
}

func (e *VersionError) Error() string {
	if e.CloseCode != 0 {
		return fmt.Sprintf("the gateway closed the connection with WebSocket code %d: it refused protocol version %s (it did not say which it speaks)",
			e.CloseCode, e.ClientVersion)
	}
	server := e.ServerVersion
	if server == "" {
		server = "unknown"
	}
	msg := fmt.Sprintf("the gateway refused protocol version %s (it speaks %s", e.ClientVersion, server)
	if p := e.Protocols(); len(p) > 0 {
		msg += "; supported: " + strings.Join(p, ", ")
	}
	msg += ")"
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Unwrap gives the flat error of code 4008.
func (e *VersionError) Unwrap() error {
	return smcp.Errorf(smcp.CodeVersionMismatch, "%s", e.Error())
}

// Protocols returns the MAJOR.MINOR versions the gateway accepts, as far
// as it said: details.supported, else the minors from min_supported to
// max_supported (one MAJOR), else server_version's. Nil when it said
// nothing.
func (e *VersionError) Protocols() []string {
	if len(e.Supported) > 0 {
		return e.Supported
	}
	lo, okLo := majorMinor(e.MinSupported)
	hi, okHi := majorMinor(e.MaxSupported)
	if okLo && okHi && lo[0] == hi[0] && lo[1] <= hi[1] && hi[1]-lo[1] < 100 {
		var out []string
		for m := lo[1]; m <= hi[1]; m++ {
			out = append(out, fmt.Sprintf("%d.%d", lo[0], m))
		}
		return out
	}
	if v, ok := majorMinor(e.ServerVersion); ok {
		return []string{fmt.Sprintf("%d.%d", v[0], v[1])}
	}
	return nil
}

func majorMinor(v string) ([2]int, bool) {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return [2]int{}, false
	}
	var out [2]int
	for i := range 2 {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			return [2]int{}, false
		}
		out[i] = n
	}
	return out, true
}

// OnConnect registers fn to run (in its own goroutine) after every connect,
// the first one included.
func (c *Client) OnConnect(fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onConnect = append(c.onConnect, fn)
}

// OnRejoin registers fn to learn how the automatic re-join after a reconnect
// went: nil once it succeeded (a refusal is retried, paced, while the
// connection lives), else the last refusal when the connection dropped or
// the office was left before it did.
func (c *Client) OnRejoin(fn func(error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onRejoin = fn
}

// encode turns a payload into what the library emits: proto messages in their
// wire form, json.RawMessage as is, anything else through encoding/json.
func encode(payload any) (json.RawMessage, error) {
	switch p := payload.(type) {
	case proto.Message:
		return smcp.ToWire(p)
	case json.RawMessage:
		return p, nil
	default:
		return json.Marshal(p)
	}
}

// Emit sends an event without an ack.
func (c *Client) Emit(event string, payload any) error {
	b, err := encode(payload)
	if err != nil {
		return fmt.Errorf("sioclient: encode %s: %w", event, err)
	}
	return c.sock.Emit(event, b)
}

// RequestArgs emits event with an ack and returns the ack's arguments.
func (c *Client) RequestArgs(ctx context.Context, event string, payload any) ([]json.RawMessage, error) {
	b, err := encode(payload)
	if err != nil {
		return nil, fmt.Errorf("sioclient: encode %s: %w", event, err)
	}
	type result struct {
		args []any
		err  error
	}
	ch := make(chan result, 1)
	c.sock.EmitWithAck(event, b)(func(args []any, err error) {
		ch <- result{args, err}
	})
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("sioclient: %s: %w", event, r.err)
		}
		out := make([]json.RawMessage, len(r.args))
		for i, a := range r.args {
			if out[i], err = rawArg(a); err != nil {
				return nil, fmt.Errorf("sioclient: %s: decode ack: %w", event, err)
			}
		}
		return out, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sioclient: %s: %w", event, ctx.Err())
	case <-c.ctx.Done():
		return nil, fmt.Errorf("sioclient: %s: client closed", event)
	}
}

// Request emits event with an ack and returns the ack's first argument. A flat
// protocol error in the ack is returned as *smcp.Error.
func (c *Client) Request(ctx context.Context, event string, payload any) (json.RawMessage, error) {
	args, err := c.RequestArgs(ctx, event, payload)
	if err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("sioclient: %s: empty ack", event)
	}
	if e, ok := smcp.ErrorFromAck(args[0]); ok {
		return nil, e
	}
	return args[0], nil
}

// RequestInto is Request decoding the answer into out.
func (c *Client) RequestInto(ctx context.Context, event string, payload any, out proto.Message) error {
	raw, err := c.Request(ctx, event, payload)
	if err != nil {
		return err
	}
	return smcp.DecodeAnswer(raw, out)
}

// On delivers every event named event to fn, one at a time in arrival order,
// on the client's delivery goroutine: fn should return quickly.
func (c *Client) On(event string, fn func(payload json.RawMessage)) {
	_ = c.sock.On(types.EventName(event), func(args ...any) {
		var payload json.RawMessage
		if len(args) > 0 {
			if _, isAck := args[0].(sockettypes.Ack); !isAck {
				payload, _ = rawArg(args[0])
			}
		}
		select {
		case c.notes <- note{fn, payload}:
		case <-c.ctx.Done():
		}
	})
}

func (c *Client) deliver() {
	for {
		select {
		case n := <-c.notes:
			n.fn(n.payload)
		case <-c.ctx.Done():
			return
		}
	}
}

// Handler answers a request from the gateway. The answer is encoded like an
// Emit payload; an error is sent as a flat error (an *smcp.Error keeps its
// code, anything else is a 500).
type Handler func(ctx context.Context, payload json.RawMessage) (any, error)

// Handle serves requests named event, each in its own goroutine. ctx ends
// when the connection that delivered the request drops, or the client
// closes: nobody can receive the answer any more (a computer's tool call
// is then cancelled at its MCP server, rather than run to its end for
// nothing).
func (c *Client) Handle(event string, h Handler) {
	_ = c.sock.On(types.EventName(event), func(args ...any) {
		c.mu.Lock()
		ctx := c.link
		c.mu.Unlock()
		var ack sockettypes.Ack
		if n := len(args); n > 0 {
			ack, _ = args[n-1].(sockettypes.Ack)
			if ack != nil {
				args = args[:n-1]
			}
		}
		var payload json.RawMessage
		if len(args) > 0 {
			payload, _ = rawArg(args[0])
		}
		go func() {
			out, err := h(ctx, payload)
			if ack == nil || ctx.Err() != nil {
				// Closed: Close cancelled the handler, and its answer would
				// race the disconnect, telling the server a call was done
				// when the client left before finishing it. Disconnected:
				// the ack's id belongs to the lost connection, and on the
				// next one it could answer another request.
				return
			}
			if err != nil {
				e, ok := smcp.AsError(err)
				if !ok {
					c.log.Error("handler failed", "event", event, "err", err)
					e = smcp.Errorf(smcp.CodeInternal, "internal error")
				}
				ack([]any{e.Wire()}, nil)
				return
			}
			b, err := encode(out)
			if err != nil {
				c.log.Error("encode answer", "event", event, "err", err)
				ack([]any{smcp.Errorf(smcp.CodeInternal, "internal error").Wire()}, nil)
				return
			}
			ack([]any{b}, nil)
		}()
	})
}

// JoinOffice joins an office as role with name. The join is remembered and
// repeated after every reconnect. A refusal is an *smcp.Error whose message is
// the gateway's reason.
func (c *Client) JoinOffice(ctx context.Context, role, name, officeID string) error {
	req := &smcpv1.EnterOfficeReq{Role: role, Name: name, OfficeId: officeID}
	if err := c.officeRequest(ctx, smcp.EventJoinOffice, req); err != nil {
		return err
	}
	c.mu.Lock()
	c.joined = req
	c.mu.Unlock()
	return nil
}

// LeaveOffice leaves the office; it is no longer re-joined after reconnects.
func (c *Client) LeaveOffice(ctx context.Context, officeID string) error {
	if err := c.officeRequest(ctx, smcp.EventLeaveOffice, &smcpv1.LeaveOfficeReq{OfficeId: officeID}); err != nil {
		return err
	}
	c.mu.Lock()
	if c.joined != nil && c.joined.GetOfficeId() == officeID {
		c.joined = nil
	}
	c.mu.Unlock()
	return nil
}

// Joined returns the office the client is in (or re-joins), "" if none.
func (c *Client) Joined() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.joined.GetOfficeId()
}

// officeRequest sends join or leave and reads the ack: [true, null] or
// [false, reason] before 0.5; from 0.5 an empty ack or a flat error.
func (c *Client) officeRequest(ctx context.Context, event string, req proto.Message) error {
	args, err := c.RequestArgs(ctx, event, req)
	if err != nil {
		return err
	}
	if len(args) == 0 && c.emptyAck(event) {
		return nil
	}
	if len(args) > 0 {
		if e, isErr := smcp.ErrorFromAck(args[0]); isErr {
			return e
		}
	}
	var ok bool
	if len(args) == 0 || json.Unmarshal(args[0], &ok) != nil {
		return fmt.Errorf("sioclient: %s: unexpected ack %s", event, args)
	}
	if ok {
		return nil
	}
	var reason string
	if len(args) > 1 {
		_ = json.Unmarshal(args[1], &reason)
	}
	return smcp.Errorf(smcp.CodeForbidden, "%s", reason)
}

// emptyAck reports whether event's ack is empty when done in the profile
// the client announced.
func (c *Client) emptyAck(event string) bool {
	cv, ok := smcp.ParseClientVersion(c.opts.Version)
	e, known := smcp.Event(event)
	return ok && known && e.Ack(cv.Version) == smcp.EmptyAck
}

func (c *Client) rejoin() {
	c.mu.Lock()
	req, hook, link := c.joined, c.onRejoin, c.link
	c.mu.Unlock()
	if req == nil {
		return
	}
	// A refused re-join is tried again, paced, for as long as this
	// connection lives: the refusal (the office now speaking another
	// version, the name still held by a node that died) can clear, and a
	// client left connected outside its office serves nobody.
	delay := c.opts.ReconnectDelay
	for {
		ctx, cancel := context.WithTimeout(link, 10*time.Second)
		err := c.officeRequest(ctx, smcp.EventJoinOffice, req)
		cancel()
		if err == nil {
			c.log.Info("re-joined after reconnect", "office", req.GetOfficeId())
			if hook != nil {
				hook(nil)
			}
			return
		}
		c.mu.Lock()
		left := c.joined != req
		c.mu.Unlock()
		if left || link.Err() != nil {
			// Left meanwhile, or the connection is over (the next one
			// re-joins anew).
			c.log.Warn("re-join after reconnect failed", "office", req.GetOfficeId(), "err", err)
			if hook != nil && c.ctx.Err() == nil {
				hook(err)
			}
			return
		}
		c.log.Warn("re-join after reconnect refused, retrying", "office", req.GetOfficeId(), "retry_in", delay, "err", err)
		select {
		case <-time.After(delay):
		case <-link.Done():
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}
