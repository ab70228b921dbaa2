//go:build race

package engine

// maxEchoAllocs bounds TestTextMessageAllocations under -race (22 measured).
const maxEchoAllocs = 24
