//go:build !race

package engine

// maxEchoAllocs bounds TestTextMessageAllocations (21 measured).
const maxEchoAllocs = 23
