//go:build !race

package mcpfront_test

// maxCallAllocsAboveFloor bounds TestToolCallAllocations: 5.0 per call
// measured after the cuts of issue 27, 18.1 before them. It fails when any
// of them is undone (each is worth 1 to 3: the pooled waits of routed
// requests, the canonical header names, the Host without port, request ids
// and tool results made in the frame, the checked body in one allocation).
const maxCallAllocsAboveFloor = 5.5
