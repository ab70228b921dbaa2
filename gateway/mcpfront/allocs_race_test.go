//go:build race

package mcpfront_test

// maxCallAllocsAboveFloor bounds TestToolCallAllocations under the race
// detector (which also drops a quarter of what is put in a sync.Pool).
const maxCallAllocsAboveFloor = 40
