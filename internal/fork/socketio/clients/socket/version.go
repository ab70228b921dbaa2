package socket

import "github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/version"

const VERSION = version.VERSION
