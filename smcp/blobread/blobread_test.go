package blobread_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/smcp/blobread"
)

// computer answers get_blob for data with chunks of at most its cap.
type computer struct {
	data     []byte
	cap      int64
	short    int64 // offset whose chunk comes 100 bytes short, -1: none
	fail     int64 // offset refused, -1: none
	inFlight atomic.Int32
	asked    atomic.Int32
	// hold, when set, keeps every request after the first until that
	// many are at the computer together (else "refused"): a window.
	hold     int32
	waiting  atomic.Int32
	together chan struct{}
}

func (c *computer) get(ctx context.Context, off, max int64) (*smcpv1.GetBlobRet, error) {
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	c.asked.Add(1)
	if c.hold > 0 && off > 0 {
		if c.waiting.Add(1) == c.hold {
			close(c.together)
		}
		select {
		case <-c.together:
		case <-time.After(10 * time.Second):
			return nil, errors.New("held: the window's other requests never came")
		}
	}
	if off == c.fail {
		return nil, errors.New("refused")
	}
	end := min(off+min(max, c.cap), int64(len(c.data)))
	if off == c.short {
		end -= 100
	}
	sum := sha256.Sum256(c.data)
	return &smcpv1.GetBlobRet{TotalSize: int64(len(c.data)), Sha256: hex.EncodeToString(sum[:]), ChunkOffset: off,
		Eof: end == int64(len(c.data)), Blob: base64.StdEncoding.EncodeToString(c.data[off:end])}, nil
}

func read(t *testing.T, c *computer, window int, chunk int64) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	var last int64 = -1
	_, err := blobread.Read(t.Context(), window, chunk, c.get, func(r *blobread.Reader, ch blobread.Chunk) error {
		if ch.Offset <= last || ch.Offset != int64(out.Len()) {
			t.Errorf("chunk at %d after %d bytes", ch.Offset, out.Len())
		}
		last = ch.Offset
		out.Write(ch.Data)
		return nil
	})
	if n := c.inFlight.Load(); n != 0 {
		t.Errorf("%d requests still running after Read returned", n)
	}
	return out.Bytes(), err
}

// Read keeps the window full, hands chunks on in order, follows the
// computer's cap, restarts after a short chunk, reports the first failure
// in order, and returns only once every request has.
func TestRead(t *testing.T) {
	data := make([]byte, 40*1024+7)
	_, _ = rand.Read(data)
	c := &computer{data: data, cap: 1 << 20, short: -1, fail: -1, hold: 4, together: make(chan struct{})}
	got, err := read(t, c, 4, 1024)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes: %v", len(got), err)
	}

	c = &computer{data: data, cap: 1000, short: -1, fail: -1}
	if got, err := read(t, c, 4, 1024); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("capped: %d bytes: %v", len(got), err)
	}
	if n := c.asked.Load(); n != int32((len(data)+999)/1000) {
		t.Errorf("capped: %d requests, want one per 1000 bytes", n)
	}

	c = &computer{data: data, cap: 1 << 20, short: 5 * 1024, fail: -1}
	if got, err := read(t, c, 4, 1024); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("short chunk: %d bytes: %v", len(got), err)
	}

	c = &computer{data: data, cap: 1 << 20, short: -1, fail: 9 * 1024}
	got, err = read(t, c, 8, 1024)
	if err == nil || !strings.Contains(err.Error(), "get_blob at offset 9216: refused") || !bytes.Equal(got, data[:9*1024]) {
		t.Fatalf("refused at 9216: %d bytes, %v", len(got), err)
	}

	if _, err := blobread.Read(context.Background(), 0, 1024, c.get, nil); err == nil {
		t.Error("a window of 0 was accepted")
	}
}
