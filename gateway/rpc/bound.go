package rpc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

// streamCut ends a stream's blocked read of its request body: net/http
// does not end a read when the handler's context ends, so a client that
// holds an upload open without sending would keep a revoked key's stream.
// track makes one per stream request; the handler cuts it when its
// credential ends (caller.bound).
type streamCut struct {
	rc   *http.ResponseController
	mu   sync.Mutex
	done bool // the handler returned: rc may no longer be used
	cut  bool // now was called: reads fail even if a deadline moved on since
}

type streamCutKey struct{}

// now makes the request body's reads fail from now on.
func (c *streamCut) now() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	if !c.done {
		_ = c.rc.SetReadDeadline(time.Now()) // not supported: the stream ends at its next step
	}
}

func (c *streamCut) isCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// errStreamCut ends a cut stream's reads; the handler answers with the
// credential's error instead (caller.bound).
var errStreamCut = errors.New("rpc: the stream's credential ended")

// cutBody fails reads once the stream is cut: a read that was returning
// data as the cut came lets the gateway push an uploading stream's read
// deadline past the cut (a progressing body's deadline moves with it).
type cutBody struct {
	io.ReadCloser
	cut *streamCut
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == nil && b.cut.isCut() {
		return n, errStreamCut
	}
	return n, err
}

func (c *streamCut) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}

// bound serves a stream under the caller's credential: ctx ends when its
// key is revoked or its token expires, and so does a blocked read of the
// request. end must be called with the stream's error, which becomes the
// credential's 401 (Unauthenticated) when that is what ended the stream.
func (c *caller) bound(ctx context.Context) (_ context.Context, end func(*error)) {
	bctx, cancel := c.principal.Bound(ctx)
	cut, _ := ctx.Value(streamCutKey{}).(*streamCut)
	stop := context.AfterFunc(bctx, func() {
		if core.CredentialEnded(bctx) != nil {
			cut.now()
		}
	})
	return bctx, func(errp *error) {
		stop()
		if cause := core.CredentialEnded(bctx); cause != nil && *errp != nil {
			*errp = toConnect(cause)
		}
		cancel()
	}
}
