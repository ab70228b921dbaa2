//go:build race

package rpc_test

// raceDetector: the race detector slows the Socket.IO relay of large
// messages about tenfold (a 100 MiB blob took minutes), so the transfer
// sizes of the memory test shrink under it.
const raceDetector = true
