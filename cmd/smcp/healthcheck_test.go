package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// smcp healthcheck against real HTTP servers: 200 is healthy, anything else
// or nobody listening is exit 1 with the reason; a bad command line is 2.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()

	if code, _, stderr := runCLI(t, "healthcheck", srv.URL+"/healthz"); code != exitOK {
		t.Errorf("healthy: exit %d, %s", code, stderr)
	}
	status = http.StatusServiceUnavailable
	if code, _, stderr := runCLI(t, "healthcheck", srv.URL+"/healthz"); code != exitFailure || !strings.Contains(stderr, "503") {
		t.Errorf("503: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "healthcheck", srv.URL+"/nothing"); code != exitFailure || !strings.Contains(stderr, "404") {
		t.Errorf("404: exit %d, %q", code, stderr)
	}
	down := "http://" + freeAddr(t) + "/healthz"
	if code, _, stderr := runCLI(t, "healthcheck", "--timeout", "10s", down); code != exitFailure || !strings.Contains(stderr, "health check:") {
		t.Errorf("nobody listening: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{{"healthcheck", "a", "b"}, {"healthcheck", "--timeout", "0s", srv.URL}, {"healthcheck", "::bad"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}

	// The default URL follows $SMCP_LISTEN, as the gateway's --listen does.
	status = http.StatusOK
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	t.Setenv("SMCP_LISTEN", ":"+port)
	if code, _, stderr := runCLI(t, "healthcheck"); code != exitOK {
		t.Errorf("default URL from $SMCP_LISTEN=:%s: exit %d, %s", port, code, stderr)
	}
}

func TestDefaultHealthURL(t *testing.T) {
	for listen, want := range map[string]string{
		"":               "http://127.0.0.1:8080/healthz",
		":9000":          "http://127.0.0.1:9000/healthz",
		"0.0.0.0:9001":   "http://127.0.0.1:9001/healthz",
		"[::]:9002":      "http://127.0.0.1:9002/healthz",
		"127.0.0.1:0":    "http://127.0.0.1:8080/healthz",
		"no-port-at-all": "http://127.0.0.1:8080/healthz",
	} {
		if got := defaultHealthURL(listen); got != want {
			t.Errorf("defaultHealthURL(%q) = %q, want %q", listen, got, want)
		}
	}
}
