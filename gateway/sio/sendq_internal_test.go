package sio

import "testing"

// TestSendQueueCounts: a connection that keeps a few requests unwritten
// forever (never quite drained) counts exactly what it holds, keeps its
// list of sizes short, and gives everything back when it closes.
func TestSendQueueCounts(t *testing.T) {
	s := &Server{cfg: Config{MaxQueuedBytesPerComputer: 100, MaxQueuedBytes: 1000}}
	q := &sendQueue{srv: s}
	for i := range 10_000 {
		if err := q.reserve(10); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i >= 3 {
			q.sent(nil)
		}
	}
	if q.bytes != 30 || s.queued.Load() != 30 || len(q.sizes) > 200 {
		t.Fatalf("held %d (server %d), %d sizes kept", q.bytes, s.queued.Load(), len(q.sizes))
	}
	for range 7 {
		if err := q.reserve(10); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.reserve(10); err == nil {
		t.Fatal("a request beyond the connection's bound was taken")
	}
	q.close()
	if s.queued.Load() != 0 {
		t.Fatalf("closed, the server still counts %d bytes", s.queued.Load())
	}
}
