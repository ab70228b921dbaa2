package agent_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/smcpgw/smcp-gateway/agent"
	"github.com/smcpgw/smcp-gateway/gateway"
	"github.com/smcpgw/smcp-gateway/gateway/core"
	"github.com/smcpgw/smcp-gateway/gateway/sio"
	"github.com/smcpgw/smcp-gateway/sioclient"
	"github.com/smcpgw/smcp-gateway/smcp"
)

func startGateway(t *testing.T, cfg gateway.Config) string {
	t.Helper()
	cfg.Auth = core.AllowAll{}
	gw, err := gateway.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Stop() })
	return gw.URL
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// blobComputer is a 0.4 computer made of a raw Socket.IO client: it serves
// client:get_blob from blobs (by handle, each a function of the offset
// asked giving the answer) and records client:put_blob.
type blobComputer struct {
	mu    sync.Mutex
	asked []map[string]any // get_blob requests
	puts  []map[string]any // put_blob requests
	// putSum, when set, is the sha256 the last put ack claims.
	putSum string
	data   bytes.Buffer
	// beforePutAck, when set, runs before a put_blob chunk is answered.
	beforePutAck func(req map[string]any) error
}

func startBlobComputer(t *testing.T, ctx context.Context, url, office string, blobs map[string]func(off, max int64) map[string]any) *blobComputer {
	t.Helper()
	c, err := sioclient.Dial(ctx, sioclient.Options{URL: url, Version: "0.4.0", NoReconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	bc := &blobComputer{}
	c.Handle(smcp.EventGetBlob, func(_ context.Context, raw json.RawMessage) (any, error) {
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, err
		}
		bc.mu.Lock()
		bc.asked = append(bc.asked, req)
		bc.mu.Unlock()
		serve, ok := blobs[req["blob_handle"].(string)]
		if !ok {
			return nil, smcp.Errorf(4018, "invalid_handle")
		}
		off, _ := req["chunk_offset"].(float64)
		maxBytes, _ := req["max_chunk_bytes"].(float64)
		ret := serve(int64(off), int64(maxBytes))
		ret["req_id"] = req["req_id"]
		return ret, nil
	})
	c.Handle(smcp.EventPutBlob, func(_ context.Context, raw json.RawMessage) (any, error) {
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, err
		}
		chunk, err := base64.StdEncoding.DecodeString(req["blob"].(string))
		if err != nil {
			return nil, err
		}
		bc.mu.Lock()
		hook := bc.beforePutAck
		bc.mu.Unlock()
		if hook != nil {
			if err := hook(req); err != nil {
				return nil, err
			}
		}
		bc.mu.Lock()
		defer bc.mu.Unlock()
		bc.puts = append(bc.puts, req)
		bc.data.Write(chunk)
		ret := map[string]any{"upload_id": "u1", "chunk_offset": req["chunk_offset"], "req_id": req["req_id"]}
		if req["eof"] == true {
			sum := sha256.Sum256(bc.data.Bytes())
			ret["landing_path"] = "/landing/u1/" + bc.puts[0]["name_hint"].(string)
			ret["total_size"] = bc.data.Len()
			ret["sha256"] = hex.EncodeToString(sum[:])
			if bc.putSum != "" {
				ret["sha256"] = bc.putSum
			}
		}
		return ret, nil
	})
	if err := c.JoinOffice(ctx, smcp.RoleComputer, "pc", office); err != nil {
		t.Fatal(err)
	}
	return bc
}

// serveBlob answers chunks of data as a computer does; tamper may change
// an answer (the offset it is for is known).
func serveBlob(data []byte, tamper func(off int64, ret map[string]any, chunk []byte)) func(off, max int64) map[string]any {
	sum := sha256.Sum256(data)
	return func(off, maxBytes int64) map[string]any {
		end := min(off+maxBytes, int64(len(data)))
		chunk := slices.Clone(data[off:end])
		ret := map[string]any{"blob_handle": "h", "mime_type": "application/octet-stream", "total_size": len(data),
			"sha256": hex.EncodeToString(sum[:]), "chunk_offset": off, "eof": end == int64(len(data))}
		if tamper != nil {
			tamper(off, ret, chunk)
		}
		ret["blob"] = base64.StdEncoding.EncodeToString(chunk)
		return ret
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// ReadBlob drains a multi-chunk blob through a real gateway in 256 KiB
// chunks with its sha256 checked, and refuses a corrupted chunk, a
// declaration changing between chunks and an early eof.
func TestReadBlob(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, gateway.Config{})
	data := randomBytes(t, 3*agent.ChunkSize+1234)
	comp := startBlobComputer(t, ctx, url, "o", map[string]func(off, max int64) map[string]any{
		"good": serveBlob(data, nil),
		"flip": serveBlob(data, func(off int64, _ map[string]any, chunk []byte) {
			if off == agent.ChunkSize {
				chunk[10] ^= 1
			}
		}),
		"changed": serveBlob(data, func(off int64, ret map[string]any, _ []byte) {
			if off > 0 {
				ret["total_size"] = len(data) + 1
			}
		}),
		"early": serveBlob(data, func(off int64, ret map[string]any, _ []byte) {
			if off == agent.ChunkSize {
				ret["eof"] = true
			}
		}),
	})
	a := joinBot(ctx, t, url)

	var got bytes.Buffer
	info, err := a.ReadBlob(ctx, "pc", "good", &got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) || info.Size != int64(len(data)) {
		t.Fatalf("read %d bytes (info %+v), want %d", got.Len(), info, len(data))
	}
	comp.mu.Lock()
	asked := slices.Clone(comp.asked)
	comp.mu.Unlock()
	if len(asked) != 4 {
		t.Errorf("%d get_blob requests, want 4", len(asked))
	}
	// The requests after the first are in flight together: they reach
	// the computer in any order.
	slices.SortFunc(asked, func(a, b map[string]any) int {
		return cmp.Compare(a["chunk_offset"].(float64), b["chunk_offset"].(float64))
	})
	for i, req := range asked {
		if req["max_chunk_bytes"] != float64(agent.ChunkSize) || req["chunk_offset"] != float64(i*agent.ChunkSize) {
			t.Errorf("request %d: %v", i, req)
		}
	}

	for handle, want := range map[string]string{"flip": "sha256", "changed": "changed during the transfer", "early": "eof after"} {
		_, err := a.ReadBlob(ctx, "pc", handle, io.Discard)
		if !errors.Is(err, agent.ErrBlobIntegrity) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrBlobIntegrity saying %q", handle, err, want)
		}
	}
	// A handle the computer refuses is its flat error, not an integrity one.
	if _, err := a.ReadBlob(ctx, "pc", "nope", io.Discard); err == nil || errors.Is(err, agent.ErrBlobIntegrity) {
		t.Errorf("unknown handle: %v", err)
	}
}

// PutBlob sends ≤ 256 KiB chunks in order, declares size, sha256 and name
// on the first one only, and checks the computer's final answer.
func TestPutBlob(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, gateway.Config{})
	comp := startBlobComputer(t, ctx, url, "o", nil)
	a := joinBot(ctx, t, url)
	data := randomBytes(t, 2*agent.ChunkSize+7)
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	ret, err := a.PutBlob(ctx, "pc", bytes.NewReader(data), int64(len(data)), hexSum, "report.bin")
	if err != nil {
		t.Fatal(err)
	}
	if ret.GetLandingPath() != "/landing/u1/report.bin" {
		t.Errorf("landing path %q", ret.GetLandingPath())
	}
	comp.mu.Lock()
	puts := slices.Clone(comp.puts)
	stored := slices.Clone(comp.data.Bytes())
	comp.mu.Unlock()
	if !bytes.Equal(stored, data) || len(puts) != 3 {
		t.Fatalf("%d chunks, %d bytes stored", len(puts), len(stored))
	}
	for i, p := range puts {
		first := i == 0
		if p["chunk_offset"] != float64(i*agent.ChunkSize) || (p["eof"] == true) != (i == 2) ||
			(p["total_size"] != nil) != first || (p["sha256"] != nil) != first || (p["name_hint"] != nil) != first ||
			(p["upload_id"] != nil) == first {
			t.Errorf("chunk %d: %v", i, p)
		}
		if first && (p["total_size"] != float64(len(data)) || p["sha256"] != hexSum) {
			t.Errorf("first chunk declares %v, %v", p["total_size"], p["sha256"])
		}
	}

	// A computer storing other bytes than sent is an integrity failure.
	comp.mu.Lock()
	comp.puts, comp.putSum = nil, strings.Repeat("0", 64)
	comp.data.Reset()
	comp.mu.Unlock()
	if _, err := a.PutBlob(ctx, "pc", bytes.NewReader(data[:10]), 10, hexOf(data[:10]), "x"); !errors.Is(err, agent.ErrBlobIntegrity) {
		t.Errorf("wrong stored sha256: %v", err)
	}
	// Bytes that do not match the declared sha256 are not vouched for.
	if _, err := a.PutBlob(ctx, "pc", bytes.NewReader(data[:10]), 10, hexSum, "x"); !errors.Is(err, agent.ErrBlobIntegrity) {
		t.Errorf("declared sha256 of other bytes: %v", err)
	}
}

func hexOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// An agent of 0.4 (the default) at a 0.2-only gateway gets the refusal at
// once, naming what the gateway serves.
func TestDialRefusedVersion(t *testing.T) {
	url := startGateway(t, gateway.Config{SIO: sio.Config{Protocols: []smcp.Version{smcp.V02}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := agent.Dial(ctx, sioclient.Options{URL: url}, "bot")
	var refused *sioclient.VersionError
	if !errors.As(err, &refused) || ctx.Err() != nil {
		t.Fatalf("dial: %v (ctx %v)", err, ctx.Err())
	}
	if refused.ClientVersion != agent.DefaultVersion || !slices.Equal(refused.Protocols(), []string{"0.2"}) {
		t.Errorf("refusal %+v, protocols %v", refused, refused.Protocols())
	}
}

// ReadBlob keeps a window of get_blob requests in flight: once the first
// answer has declared the size, the requests for the three other chunks
// are all at the computer before any is answered (one at a time, the
// second would wait for an answer that waits for the third, and the read
// would fail). The bytes still come out in order with their sha256
// checked.
func TestReadBlobWindow(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, gateway.Config{})
	data := randomBytes(t, 3*agent.ChunkSize+1234)
	serve := serveBlob(data, nil)
	var mu sync.Mutex
	waiting, all := 0, make(chan struct{})
	comp := startBlobComputer(t, ctx, url, "o", map[string]func(off, max int64) map[string]any{
		"held": func(off, max int64) map[string]any {
			if off > 0 {
				mu.Lock()
				if waiting++; waiting == 3 {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all:
				case <-time.After(20 * time.Second):
					return map[string]any{"code": 4018, "message": "held: the other chunks were not asked for meanwhile"}
				}
			}
			return serve(off, max)
		},
	})
	a := joinBot(ctx, t, url)
	var got bytes.Buffer
	if _, err := a.ReadBlob(ctx, "pc", "held", &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("read %d bytes, not the %d served", got.Len(), len(data))
	}
	comp.mu.Lock()
	defer comp.mu.Unlock()
	if len(comp.asked) != 4 {
		t.Errorf("%d get_blob requests, want 4", len(comp.asked))
	}
}

// A computer whose chunks are smaller than asked (its cap), or that sends
// one chunk short in the middle, is still read whole and in order: the
// window follows the computer's chunk size, and restarts where the blob
// stands after a short chunk. A refusal in the middle ends the read with
// the computer's error, naming the offset.
func TestReadBlobShortChunks(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, gateway.Config{})
	data := randomBytes(t, 3*agent.ChunkSize+1234)
	serve := serveBlob(data, nil)
	startBlobComputer(t, ctx, url, "o", map[string]func(off, max int64) map[string]any{
		"capped": func(off, max int64) map[string]any { return serve(off, min(max, 100<<10)) },
		"short": func(off, max int64) map[string]any {
			if off == agent.ChunkSize {
				return serve(off, 1000)
			}
			return serve(off, max)
		},
		"refused": func(off, max int64) map[string]any {
			if off == 2*agent.ChunkSize {
				return map[string]any{"code": 4018, "message": "gone", "details": map[string]any{"reason": "gone"}}
			}
			return serve(off, max)
		},
	})
	a := joinBot(ctx, t, url)
	for _, h := range []string{"capped", "short"} {
		var got bytes.Buffer
		if _, err := a.ReadBlob(ctx, "pc", h, &got); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if !bytes.Equal(got.Bytes(), data) {
			t.Errorf("%s: read %d bytes, not the %d served", h, got.Len(), len(data))
		}
	}
	_, err := a.ReadBlob(ctx, "pc", "refused", io.Discard)
	var e *smcp.Error
	if !errors.As(err, &e) || e.Code != 4018 || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", 2*agent.ChunkSize)) {
		t.Errorf("refused mid-transfer: %v", err)
	}
}

// readSignal closes reached once more than at bytes were read from it.
type readSignal struct {
	r       io.Reader
	n, at   int
	reached chan struct{}
}

func (s *readSignal) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if s.n <= s.at && s.n+n > s.at {
		close(s.reached)
	}
	s.n += n
	return n, err
}

// PutBlob reads, hashes and encodes the next chunk while the previous one
// is at the computer: the computer answers the first chunk only once the
// second's bytes were read (one step at a time, that read would wait for
// the answer, and the upload would fail). The chunks still go one after
// the other's ack, in order.
func TestPutBlobReadsAhead(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, gateway.Config{})
	comp := startBlobComputer(t, ctx, url, "o", nil)
	data := randomBytes(t, 2*agent.ChunkSize+7)
	src := &readSignal{r: bytes.NewReader(data), at: agent.ChunkSize, reached: make(chan struct{})}
	comp.mu.Lock()
	comp.beforePutAck = func(req map[string]any) error {
		if req["chunk_offset"] != float64(0) {
			return nil
		}
		select {
		case <-src.reached:
			return nil
		case <-time.After(20 * time.Second):
			return smcp.Errorf(4019, "held: the second chunk was not read meanwhile")
		}
	}
	comp.mu.Unlock()
	a := joinBot(ctx, t, url)
	if _, err := a.PutBlob(ctx, "pc", src, int64(len(data)), hexOf(data), "x.bin"); err != nil {
		t.Fatal(err)
	}
	comp.mu.Lock()
	defer comp.mu.Unlock()
	if !bytes.Equal(comp.data.Bytes(), data) || len(comp.puts) != 3 {
		t.Fatalf("%d chunks, %d bytes stored", len(comp.puts), comp.data.Len())
	}
}

// joinBot dials url as agent "bot" and joins office "o"; the agent is
// closed when t ends.
func joinBot(ctx context.Context, t *testing.T, url string) *agent.Client {
	t.Helper()
	a, err := agent.Dial(ctx, sioclient.Options{URL: url, NoReconnect: true}, "bot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	if err := a.Join(ctx, "o"); err != nil {
		t.Fatal(err)
	}
	return a
}
