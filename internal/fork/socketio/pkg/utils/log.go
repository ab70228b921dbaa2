package utils

import (
	"github.com/smcpgw/smcp-gateway/internal/fork/socketio/pkg/log"
)

func Log() *log.Log {
	return log.Default()
}
