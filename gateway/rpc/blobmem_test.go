package rpc_test

import (
	"context"
	"testing"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/internal/testheap"
)

// TestBlobTransferMemory measures the heap while 100 MiB go through the
// gateway each way (ReadBlob, then PutBlob); 24 MiB under the race
// detector, which makes 100 MiB take minutes. The process holds the
// gateway, the fake computer and the client, so its growth bounds the
// gateway's. The live heap after each GC cycle (what is still referenced,
// not the garbage the GC pacing leaves between cycles) must stay within
// 16 MiB of the start, which a gateway holding the blob whole could not;
// the peak heap including garbage is reported. Run alone for the figures:
//
//	go test -count=1 -run TestBlobTransferMemory -v ./gateway/rpc/
func TestBlobTransferMemory(t *testing.T) {
	size := int64(100 << 20)
	if raceDetector {
		size = 24 << 20
	}
	const limitMiB = 16
	g := startGateway(t)
	pc := startBlobComputer(t, g, "pc-04", officeA, "0.4.0")
	path := writeRandomFile(t, t.TempDir(), "big.bin", size)
	b := pc.addBlob(t, path, "application/octet-stream")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cl := newClient(t, g, protocols[2], "x-api-key", keyAgent)

	check := func(what string, h *testheap.Sampler, elapsed time.Duration) {
		t.Helper()
		heap, live, cycles := h.Done()
		t.Logf("%s of %d MiB in %v: live heap grew by at most %.1f MiB, heap with garbage by at most %.1f MiB (%d GC cycles)",
			what, size>>20, elapsed.Round(time.Millisecond), live, heap, cycles)
		if cycles < 5 {
			t.Fatalf("%s: only %d GC cycles during the transfer: the live heap was hardly measured", what, cycles)
		}
		if live >= limitMiB {
			t.Fatalf("%s: live heap grew by %.1f MiB, the limit is %d MiB", what, live, limitMiB)
		}
	}

	h := testheap.Start()
	start := time.Now()
	got := readBlob(ctx, cl, &smcpv1.ReadBlobRequest{OfficeId: officeA, Computer: "pc-04", BlobHandle: "h-big.bin"})
	elapsed := time.Since(start)
	if got.err != nil || got.size != size || got.sha != b.sha {
		t.Fatalf("ReadBlob: %+v", got)
	}
	check("ReadBlob", h, elapsed)

	h = testheap.Start()
	start = time.Now()
	res, err := putFile(ctx, cl, &smcpv1.PutBlobHeader{OfficeId: officeA, Computer: "pc-04", TotalSize: size, Sha256: b.sha}, path, 1<<20-1024)
	elapsed = time.Since(start)
	if err != nil || res.GetSha256() != b.sha {
		t.Fatalf("PutBlob: %v %v", res, err)
	}
	check("PutBlob", h, elapsed)
}
