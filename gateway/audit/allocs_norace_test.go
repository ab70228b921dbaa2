//go:build !race

package audit_test

// maxBatchAllocs bounds TestJSONLinesBatchAllocations: a few a batch of 256
// records (512 before the writer reused its encoder).
const maxBatchAllocs = 4
