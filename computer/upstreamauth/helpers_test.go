package upstreamauth_test

import (
	"io"
	"log/slog"
	"net/http"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func httpDefault() http.RoundTripper { return http.DefaultTransport.(*http.Transport).Clone() }

func httpClientOf(rt http.RoundTripper) *http.Client { return &http.Client{Transport: rt} }
