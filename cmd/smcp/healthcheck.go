package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// runHealthcheck asks a gateway's /healthz and succeeds on 200. It exists for
// the container image, which has no shell and no curl for a HEALTHCHECK.
func runHealthcheck(ctx context.Context, args []string) error {
	fs := newFlags("healthcheck", "usage: smcp healthcheck [--timeout 5s] [URL]\n\n"+
		"Exits 0 when GET URL answers 200, 1 otherwise (the reason on stderr). URL defaults to\n"+
		"http://127.0.0.1:PORT/healthz, PORT from $"+envName("listen")+" (the gateway's --listen), else 8080.")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	fs.addLogFlags("warn") // every subcommand has them; this one logs nothing
	rest, err := fs.parseWithArgs(args)
	if err != nil {
		return err
	}
	if _, err := fs.logger(); err != nil {
		return err
	}
	var url string
	switch len(rest) {
	case 0:
		url = defaultHealthURL(os.Getenv(envName("listen")))
	case 1:
		url = rest[0]
	default:
		return usagef("one URL at most, got %d arguments", len(rest))
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usagef("URL %q: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health check: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check: %s answered %s", url, resp.Status)
	}
	return nil
}

// defaultHealthURL is /healthz on loopback at the port of listen (the
// gateway's --listen, e.g. ":8080" or "0.0.0.0:9000"), 8080 when listen is
// empty or has no port.
func defaultHealthURL(listen string) string {
	port := "8080"
	if _, p, err := net.SplitHostPort(listen); err == nil && p != "" && p != "0" {
		port = p
	}
	return "http://" + net.JoinHostPort("127.0.0.1", port) + "/healthz"
}
