package engine

import "github.com/zishang520/socket.io/v3/pkg/version"

const VERSION = version.VERSION
