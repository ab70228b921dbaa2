//go:build !race

package engine

// maxEchoAllocs bounds TestTextMessageAllocations (19 measured).
const maxEchoAllocs = 21
