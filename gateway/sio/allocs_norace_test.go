//go:build !race

package sio

// maxLegAllocs bounds TestComputerLegAllocations: 63.2 per call measured
// (73.9 when the cuts landed, the core's cuts since), 66.0 with the socket.io
// server's skip of events nobody listens to undone, 166 before the cuts.
const maxLegAllocs = 65
