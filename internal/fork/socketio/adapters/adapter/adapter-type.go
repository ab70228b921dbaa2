package adapter

import (
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/servers/socket"
)

// Adapter is an alias for socket.Adapter.
type (
	Adapter = socket.Adapter

	// SessionAwareAdapter is an alias for socket.SessionAwareAdapter.
	SessionAwareAdapter = socket.SessionAwareAdapter
)
