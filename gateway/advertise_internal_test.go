package gateway

import (
	"net"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/smcpgw/smcp-gateway/gateway/core"
)

func ipNet(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

// The URL other nodes reach this node at, without --advertise-url: the
// listener's own address, or for a listener on every interface the host's
// one private IPv4 address; several or none is refused, not guessed.
func TestAdvertiseURL(t *testing.T) {
	host := func(addrs ...string) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) {
			var out []net.Addr
			for _, a := range addrs {
				out = append(out, ipNet(a))
			}
			return out, nil
		}
	}
	oneLAN := host("127.0.0.1/8", "::1/128", "10.1.2.3/16", "fe80::1/64", "2001:db8::5/64")
	for _, c := range []struct {
		listen string
		tls    bool
		ifaces func() ([]net.Addr, error)
		want   string // "" : an error
	}{
		{"127.0.0.1:8080", false, oneLAN, "http://127.0.0.1:8080"},
		{"192.168.1.9:443", true, oneLAN, "https://192.168.1.9:443"},
		{"[2001:db8::7]:8080", false, oneLAN, "http://[2001:db8::7]:8080"},
		{"0.0.0.0:8080", false, oneLAN, "http://10.1.2.3:8080"},
		{"[::]:9000", true, oneLAN, "https://10.1.2.3:9000"},
		{"0.0.0.0:8080", false, host("127.0.0.1/8", "10.1.2.3/16", "172.17.0.1/16"), ""},
		{"0.0.0.0:8080", false, host("127.0.0.1/8", "203.0.113.4/24"), ""},
	} {
		addr, err := net.ResolveTCPAddr("tcp", c.listen)
		if err != nil {
			t.Fatal(err)
		}
		got, err := advertiseURL(addr, c.tls, c.ifaces)
		if c.want == "" {
			if err == nil {
				t.Errorf("listen %s: %q, want an error asking for --advertise-url", c.listen, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("listen %s: %q %v, want %q", c.listen, got, err, c.want)
		}
	}
}

// --advertise-url takes a URL or a bare host:port (the scheme the
// listener's TLS gives); anything else is refused at start.
func TestNormalizeAdvertise(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.5:8080":              "http://10.0.0.5:8080",
		"http://gw-1.internal:8080/": "http://gw-1.internal:8080",
		"https://gw-1.internal":      "https://gw-1.internal",
	} {
		if got, err := normalizeAdvertise(in, false); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	if got, _ := normalizeAdvertise("gw-1:8443", true); got != "https://gw-1:8443" {
		t.Errorf("bare host:port with TLS: %q", got)
	}
	for _, bad := range []string{"ftp://gw:21", "http://", "http://user:pw@gw:80", "http://gw:80/?x=1"} {
		if got, err := normalizeAdvertise(bad, false); err == nil {
			t.Errorf("%q accepted as %q", bad, got)
		} else if strings.Contains(err.Error(), "pw") {
			t.Errorf("the error repeats a password: %v", err)
		}
	}
}

// A node with a bad advertise URL does not start (rather than start and
// have every other node fail to reach it).
func TestNewRefusesBadAdvertiseURL(t *testing.T) {
	g, err := New(Config{Auth: core.AllowAll{}, Redis: "redis://" + miniredis.RunT(t).Addr(), AdvertiseURL: "ftp://gw-1:21"})
	if err == nil {
		g.SIO.Close()
		t.Fatal("a gateway started with advertise URL ftp://gw-1:21")
	}
}
