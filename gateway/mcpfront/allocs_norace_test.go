//go:build !race

package mcpfront_test

// maxCallAllocsAboveFloor bounds TestToolCallAllocations: 18.1 per call
// measured before the cuts of issue 27.
const maxCallAllocsAboveFloor = 20
