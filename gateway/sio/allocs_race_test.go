//go:build race

package sio

// maxLegAllocs bounds TestComputerLegAllocations under the race detector
// (which also drops a quarter of what is put in a sync.Pool): 78.2 per call
// measured after the cuts, 88.9 with the socket.io server's patch undone.
const maxLegAllocs = 83
