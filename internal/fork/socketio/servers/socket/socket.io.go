package socket

import (
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/engine/transports"
)

type (
	TransportCtor = transports.TransportCtor

	WebSocketBuilder    = transports.WebSocketBuilder
	WebTransportBuilder = transports.WebTransportBuilder
	PollingBuilder      = transports.PollingBuilder
)

var (
	Polling      TransportCtor = &PollingBuilder{}
	WebSocket    TransportCtor = &WebSocketBuilder{}
	WebTransport TransportCtor = &WebTransportBuilder{}
)
