//go:build !race

package rpc_test

const raceDetector = false
