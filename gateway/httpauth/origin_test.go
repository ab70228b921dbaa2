package httpauth

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Origins compare an Origin as a URL: scheme, host label by label, port
// (the scheme's default when none). Strings that merely begin and end like
// an entry are no match.
func TestOriginsMatchByLabel(t *testing.T) {
	o, err := ParseOrigins([]string{"https://*.example.com", "http://localhost:5173", "https://App.Example.org/"})
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]bool{
		"https://team.example.com":          true,
		"https://a.b.example.com":           true,
		"https://TEAM.example.com:443":      true,
		"https://evil.com/.example.com":     false,
		"https://evil.com?.example.com":     false,
		"https://evil.com#.example.com":     false,
		"https://user@team.example.com":     false,
		"https://evilexample.com":           false,
		"https://example.com":               false,
		"https://.example.com":              false,
		"http://team.example.com":           false,
		"https://team.example.com:8443":     false,
		"https://team.example.com.evil.com": false,
		"http://localhost:5173":             true,
		"http://localhost":                  false,
		"https://app.example.org":           true,
		"https://app.example.org.evil.com":  false,
		"null":                              false,
		"":                                  false,
		"team.example.com":                  false,
		"https://team.example.com/":         false, // an Origin has no path
	} {
		if got := o.Allows(origin); got != want {
			t.Errorf("Allows(%q) = %v, want %v", origin, got, want)
		}
	}
	if any, _ := ParseOrigins([]string{"*"}); !any.Allows("https://anything.example") || !any.Any() {
		t.Error(`"*" does not allow every origin`)
	}
	if none, _ := ParseOrigins(nil); !none.Empty() || none.Allows("https://a.example") {
		t.Error("no entries allow an origin")
	}
}

// Entries that are not origins are reported, and the others still match.
func TestParseOriginsReportsBadEntries(t *testing.T) {
	o, err := ParseOrigins([]string{"https://ok.example", "https://a*b.example", "example.com", "https://x.example/path"})
	if err == nil {
		t.Fatal("bad entries not reported")
	}
	for _, bad := range []string{"a*b.example", `"example.com"`, "x.example/path"} {
		if !strings.Contains(err.Error(), bad) {
			t.Errorf("error %q does not name %s", err, bad)
		}
	}
	if !o.Allows("https://ok.example") {
		t.Error("the good entry dropped with the bad ones")
	}
}

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"http://LOCALHOST:8080", "localhost:8080", true},
		{"https://gw.example", "gw.example", true},
		{"https://gw.example", "gw.example:443", true},
		{"http://gw.example", "gw.example:8080", false},
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://evil.example/gw.example:8080", "gw.example:8080", false},
		{"null", "gw.example", false},
	} {
		if got := SameOrigin(c.origin, c.host); got != c.want {
			t.Errorf("SameOrigin(%q, %q) = %v, want %v", c.origin, c.host, got, c.want)
		}
	}
}

// Rebound: only a request that arrived on a loopback address under a name
// neither loopback nor allowed.
func TestRebound(t *testing.T) {
	req := func(host string, local net.Addr) *http.Request {
		r, _ := http.NewRequestWithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, local), http.MethodGet, "/", nil)
		r.Host = host
		return r
	}
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	lan := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}
	allowed := []string{"gw.internal"}
	for _, c := range []struct {
		host  string
		local net.Addr
		want  bool
	}{
		{"rebound.example:8080", loop, true},
		{"rebound.example", loop, true},
		{"localhost:8080", loop, false},
		{"127.0.0.1:8080", loop, false},
		{"[::1]:8080", loop, false},
		{"gw.internal:8080", loop, false},
		{"GW.Internal", loop, false},
		{"gw.internal.evil:8080", loop, true},
		{"rebound.example:8080", lan, false},
	} {
		if got := Rebound(req(c.host, c.local), allowed); got != c.want {
			t.Errorf("Rebound(Host %q on %v) = %v, want %v", c.host, c.local, got, c.want)
		}
	}
	r := req("rebound.example:8080", loop)
	if n := testing.AllocsPerRun(100, func() { _ = Rebound(r, allowed) }); n != 0 {
		t.Errorf("Rebound: %v allocations per request, want 0", n)
	}
}
