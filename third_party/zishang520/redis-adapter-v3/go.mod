module github.com/zishang520/socket.io/adapters/redis/v3

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.18.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
	github.com/zishang520/socket.io/adapters/adapter/v3 v3.0.2
	github.com/zishang520/socket.io/parsers/socket/v3 v3.0.2
	github.com/zishang520/socket.io/servers/socket/v3 v3.0.2
	github.com/zishang520/socket.io/v3 v3.0.2
)

require (
	github.com/andybalholm/brotli v1.2.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/dunglas/httpsfv v1.1.0 // indirect
	github.com/gookit/color v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/klauspost/compress v1.18.5 // indirect
	github.com/quic-go/qpack v0.6.0 // indirect
	github.com/quic-go/quic-go v0.59.0 // indirect
	github.com/quic-go/webtransport-go v0.10.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/xo/terminfo v0.0.0-20220910002029-abceb7e1c41e // indirect
	github.com/zishang520/socket.io/parsers/engine/v3 v3.0.2 // indirect
	github.com/zishang520/socket.io/servers/engine/v3 v3.0.2 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/crypto v0.50.0 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/text v0.36.0 // indirect
)

replace (
	github.com/zishang520/socket.io/adapters/adapter/v3 => ../../adapters/adapter
	github.com/zishang520/socket.io/parsers/engine/v3 => ../../parsers/engine
	github.com/zishang520/socket.io/parsers/socket/v3 => ../../parsers/socket
	github.com/zishang520/socket.io/servers/engine/v3 => ../../servers/engine
	github.com/zishang520/socket.io/servers/socket/v3 => ../../servers/socket
	github.com/zishang520/socket.io/v3 => ../../
)
