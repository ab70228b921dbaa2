package rpc_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/smcpgw/smcp-gateway/gateway"
	smcpv1 "github.com/smcpgw/smcp-gateway/gen/smcp/v1"
	"github.com/smcpgw/smcp-gateway/gen/smcp/v1/smcpv1connect"
	"github.com/smcpgw/smcp-gateway/internal/connecttest"
)

// uploadIdle is --body-read-timeout scaled down for the tests below, from
// the default's 30 s: an upload that progresses outlasts it many times.
const uploadIdle = 5 * time.Second

// The two transports of a PutBlob the issue names, each in its own office
// (an upload holds its office's agent seat).
var uploadProtocols = []struct {
	protocol
	office string
}{
	{protocols[0], officeA}, // Connect over HTTP/1.1
	{protocols[2], officeB}, // gRPC over h2c
}

// TestSlowPutBlobLands: a 16 MiB PutBlob sent at about 400 KiB/s lasts
// about eight times --body-read-timeout and lands whole: the timeout
// bounds a stream's silence, not its length. Over Connect/HTTP/1.1 and
// gRPC/h2c.
func TestSlowPutBlobLands(t *testing.T) {
	const (
		size  = 16 << 20
		piece = 40 << 10               // one message per tick
		tick  = 100 * time.Millisecond // 400 KiB/s
	)
	g := startGateway(t, func(c *gateway.Config) { c.BodyReadTimeout = uploadIdle })
	data := make([]byte, size)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	ctx := transferContext(t)

	for _, p := range uploadProtocols {
		startBlobComputer(t, g, "pc-"+p.office, p.office, "0.4.0")
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			stream, err := newClient(t, g, p.protocol, "x-api-key", keyAgent).PutBlob(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hdr := &smcpv1.PutBlobHeader{OfficeId: p.office, Computer: "pc-" + p.office, TotalSize: size, Sha256: sha}
			if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Header{Header: hdr}}); err != nil {
				t.Fatalf("header: %v", err)
			}
			ticker := time.NewTicker(tick)
			defer ticker.Stop()
			for off := 0; off < size; off += piece {
				<-ticker.C
				part := &smcpv1.PutBlobRequest_Data{Data: data[off:min(off+piece, size)]}
				if err := stream.Send(&smcpv1.PutBlobRequest{Part: part}); err != nil {
					break // the answer says why
				}
			}
			res, err := stream.CloseAndReceive()
			if err != nil {
				t.Fatalf("PutBlob: %v", err)
			}
			n, landed := fileSHA256(t, res.GetLandingPath())
			if n != size || landed != sha || res.GetSha256() != sha {
				t.Fatalf("landed %d bytes with sha256 %s (answer %v), sent %d with %s", n, landed, res, size, sha)
			}
		})
	}
}

// TestIdlePutBlobIsCut: a PutBlob that sends for longer than
// --body-read-timeout is not cut while it sends; once it falls silent (its
// request left open), it is answered with DeadlineExceeded after the
// timeout, and its office's seat is free again. Over Connect/HTTP/1.1 and
// gRPC/h2c.
func TestIdlePutBlobIsCut(t *testing.T) {
	g := startGateway(t, func(c *gateway.Config) { c.BodyReadTimeout = uploadIdle })
	ctx := transferContext(t)
	for _, p := range uploadProtocols {
		startBlobComputer(t, g, "pc-"+p.office, p.office, "0.4.0")
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			hc := p.http()
			t.Cleanup(hc.CloseIdleConnections)
			opts := append([]connect.ClientOption{connecttest.Headers("x-api-key", keyAgent)}, p.opts...)
			stream := connect.NewClient[smcpv1.PutBlobRequest, smcpv1.PutBlobResponse](hc,
				g.URL+smcpv1connect.AgentServicePutBlobProcedure, opts...).CallClientStream(ctx)
			hdr := &smcpv1.PutBlobHeader{OfficeId: p.office, Computer: "pc-" + p.office, TotalSize: 1 << 30,
				Sha256: "0000000000000000000000000000000000000000000000000000000000000000"}
			if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Header{Header: hdr}}); err != nil {
				t.Fatalf("header: %v", err)
			}
			conn, err := stream.Conn()
			if err != nil {
				t.Fatal(err)
			}
			ended := make(chan error, 1)
			go func() { ended <- conn.Receive(&smcpv1.PutBlobResponse{}) }() // the answer, the request still open
			t.Cleanup(func() { _, _ = stream.CloseAndReceive() })

			// Progress for one and a half timeouts: a message every tenth of one.
			ticker := time.NewTicker(uploadIdle / 10)
			for range 15 {
				<-ticker.C
				if err := stream.Send(&smcpv1.PutBlobRequest{Part: &smcpv1.PutBlobRequest_Data{Data: make([]byte, 1000)}}); err != nil {
					t.Fatalf("cut while it sent: %v (answer %v)", err, <-ended)
				}
			}
			ticker.Stop()
			select {
			case err := <-ended:
				t.Fatalf("cut while it sent: %v", err)
			default:
			}
			silent := time.Now()
			select {
			case err := <-ended:
				if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
					t.Fatalf("the idle upload ended with %v, want DeadlineExceeded", err)
				}
				if idle := time.Since(silent); idle < uploadIdle/2 {
					// The timer may have started at the last read, before silent.
					t.Fatalf("cut %v after it fell silent, before the %v timeout", idle, uploadIdle)
				}
			case <-time.After(10 * uploadIdle):
				t.Fatalf("an idle upload outlived ten times the %v timeout", uploadIdle)
			}
		})
	}
}
