package gateway_test

import (
	"github.com/zishang520/socket.io/v3/pkg/log"
)

func init() { log.DEBUG.Store(true) }
