//go:build !race

package sio

// maxLegAllocs bounds TestComputerLegAllocations: 73.9 per call measured
// after the cuts, 84.4 with the socket.io server's patch undone, 166 before
// the cuts.
const maxLegAllocs = 79
