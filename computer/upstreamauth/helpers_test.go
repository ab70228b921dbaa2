package upstreamauth_test

import (
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func httpDefault() http.RoundTripper { return http.DefaultTransport.(*http.Transport).Clone() }

func httpClientOf(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} }

// countingRT counts the requests to one path.
type countingRT struct {
	next http.RoundTripper
	path string
	n    atomic.Int32
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == c.path {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}
