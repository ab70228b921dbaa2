package httpauth

import (
	"net"
	"testing"
)

// isLoopback answers as it did with net.ParseIP.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.9.9.9:443": true,
		"[::1]:80": true, "::1": true, "[::ffff:127.0.0.1]:80": true, "[fe80::1%25lo]:80": false, "[::1%lo]:80": false,
		"10.0.0.1:80": false, "example.com": false, "": false, "127.0.0.1.nip.io:80": false, "[::2]": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// hostOf is net.SplitHostPort's host, or its input when SplitHostPort
// fails, and allocates nothing where SplitHostPort allocated its error.
func TestHostOf(t *testing.T) {
	for _, hp := range []string{"example.com", "example.com:443", "127.0.0.1", "127.0.0.1:80", "::1", "[::1]", "[::1]:80",
		"[fe80::1%25lo]:80", "host:", ":80", "", "a:b:c", "[::1]:80:90", "[[::1]]:80", "[::1]]:80", "[a]b:80", "[::1", "]:80", "[]:80"} {
		want, _, err := net.SplitHostPort(hp)
		if err != nil {
			want = hp
		}
		if got := hostOf(hp); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", hp, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = isLoopback("example.com") }); n != 0 {
		t.Errorf("isLoopback of a host without port: %v allocations, want 0", n)
	}
}
