module github.com/zishang520/socket.io/v3

go 1.26.0

require (
	github.com/andybalholm/brotli v1.2.1
	github.com/gookit/color v1.6.0
	github.com/gorilla/websocket v1.5.3
	github.com/klauspost/compress v1.18.5
	github.com/quic-go/quic-go v0.59.0
	github.com/quic-go/webtransport-go v0.10.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
	resty.dev/v3 v3.0.0-beta.6
)

require (
	github.com/dunglas/httpsfv v1.1.0 // indirect
	github.com/quic-go/qpack v0.6.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	github.com/xo/terminfo v0.0.0-20220910002029-abceb7e1c41e // indirect
	go.uber.org/mock v0.6.0 // indirect
	golang.org/x/crypto v0.50.0 // indirect
	golang.org/x/net v0.53.0 // indirect
	golang.org/x/sys v0.43.0 // indirect
	golang.org/x/text v0.36.0 // indirect
)
