//go:build race

package engine

// maxEchoAllocs bounds TestTextMessageAllocations under -race (20 measured).
const maxEchoAllocs = 22
