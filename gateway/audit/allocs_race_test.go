//go:build race

package audit_test

// maxBatchAllocs bounds TestJSONLinesBatchAllocations under the race
// detector, which drops part of what is put in a sync.Pool (the encoder's
// buffers): 128-132 a batch of 256 measured, against 512 before the
// writer reused its encoder.
const maxBatchAllocs = 256
